#!/usr/bin/python3.11
"""Compiles every example with aotrace, runs each profile's bundle with `aotrace run`, and
prints the max abs error against torch eager computed here (same inputs, same process).

    /usr/bin/python3.11 examples/run_examples.py --aotrace build/cli/aotrace [SPEC.yaml ...]
"""
import argparse
import json
import pathlib
import re
import runpy
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
ATOL, RTOL = 1e-5, 1e-4
DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32, "bool": np.bool_}


def parse_type(text):
    """'f32[8, 784]' -> (np.float32, (8, 784))"""
    m = re.fullmatch(r"(\w+)\[(.*)\]", text)
    dims = tuple(int(d) for d in m.group(2).split(",") if d.strip())
    return DTYPES[m.group(1)], dims


def flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for item in out for t in flatten(item)]


def check_spec(aotrace, spec, workdir):
    bundle = workdir / (spec.stem + ".aot")
    subprocess.run([aotrace, "compile", str(spec), "-o", str(bundle)], check=True)
    report = json.loads((bundle / "report.json").read_text())
    namespace = runpy.run_path(report["script"], run_name="__aotrace_main__")
    ok = True
    rng = np.random.default_rng(0)
    for prof in report["profiles"]:
        entry = next(e for e in report["entries"] if e["name"] == prof["entry"])
        graph = json.loads((bundle / "graphs" / f"{prof['entry']}.{prof['variant']}.json").read_text())
        inputs, args = [], []
        for i, spec_in in enumerate(graph["inputs"]):
            dtype, shape = parse_type(spec_in["type"])
            x = rng.standard_normal(shape).astype(dtype)
            path = workdir / f"{spec_in['name']}.npy"
            np.save(path, x)
            inputs += ["--input", f"{spec_in['name']}={path}"]
            args.append(torch.from_numpy(x.copy()))
        outdir = workdir / f"out-{prof['entry']}-{prof['profile']}"
        subprocess.run([aotrace, "run", str(bundle), "--entry", prof["entry"], *inputs,
                        "--output-dir", str(outdir)], check=True)
        target = eval(entry["call"], namespace)
        if isinstance(target, torch.nn.Module):
            target.eval()
        with torch.no_grad():
            expected = [t.numpy() for t in flatten(target(*args))]
        worst = 0.0
        for i, e in enumerate(expected):
            got = np.load(outdir / f"out{i}.npy")
            if got.shape != e.shape:
                print(f"  {spec.name} {prof['entry']} {prof['profile']}: out{i} shape {got.shape} != {e.shape}")
                ok = False
                continue
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - e))) if e.size else 0.0)
            ok &= bool(np.allclose(got, e, atol=ATOL, rtol=RTOL))
        print(f"{spec.stem:10s} entry {prof['entry']:8s} profile {prof['profile']:10s} "
              f"variant {prof['variant']}: max abs error vs torch eager = {worst:.3e}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aotrace", required=True)
    ap.add_argument("specs", nargs="*")
    args = ap.parse_args()
    specs = [pathlib.Path(s) for s in args.specs] or sorted(HERE.glob("*/*.yaml"))
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            ok &= check_spec(str(pathlib.Path(args.aotrace).resolve()), spec.resolve(), pathlib.Path(tmp))
    print("all profiles match torch eager" if ok else "MISMATCH against torch eager")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
