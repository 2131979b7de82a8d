#!/usr/bin/python3.11
"""Validates every profile spec of the repository against `aotrace profiles schema` with a real
JSON Schema validator (python3-jsonschema, draft 2020-12), and checks that the validator
rejects specs the parser rejects too (so that an empty or permissive schema cannot pass).

    /usr/bin/python3.11 tests/tools/validate_specs.py --aotrace build/cli/aotrace ROOT

Prints "N specs valid" and exits 0, or lists each invalid spec with its errors and exits 1.
"""
import argparse
import json
import pathlib
import subprocess
import sys

import jsonschema
import yaml

ap = argparse.ArgumentParser()
ap.add_argument("--aotrace", required=True)
ap.add_argument("root")
args = ap.parse_args()

schema = json.loads(subprocess.run([args.aotrace, "profiles", "schema"], check=True, capture_output=True,
                                   text=True).stdout)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)

root = pathlib.Path(args.root)
specs = []
for folder in ("examples", "tests/e2e", "bench"):
    for path in sorted((root / folder).rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and "entries" in doc and "version" in doc:
            specs.append((path, doc))
failures = []
for path, doc in specs:
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        failures.append(f"{path}: " + "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors))
# Specs the parser refuses must fail here too.
bad = {
    "a dim that is neither a list nor a range": {"version": 1, "script": "m.py", "entries": {"f": {
        "call": "f", "inputs": {"x": {"dtype": "float32", "shape": ["n"]}}}}, "dims": {"n": "many"}},
    "an unknown dtype": {"version": 1, "script": "m.py", "entries": {"f": {
        "call": "f", "inputs": {"x": {"dtype": "float17", "shape": [2]}}}}},
    "an unknown top-level key": {"version": 1, "script": "m.py", "entries": {}, "dimz": {}},
    "no entries": {"version": 1, "script": "m.py"},
}
for why, doc in bad.items():
    if validator.is_valid(doc):
        failures.append(f"the schema accepts a spec with {why}")
for f in failures:
    print(f)
if failures or not specs:
    sys.exit(1)
print(f"{len(specs)} specs valid; {len(bad)} bad specs rejected")
