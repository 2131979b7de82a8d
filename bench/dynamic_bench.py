#!/usr/bin/python3.11
"""`make bench`'s dynamic rows (issue 13): one dynamic variant against static ones, same run.

Compiles bench/models.py's bert_layer (and gpt2_block) twice: once with `seq: {min: 32, max: 128}`
(one symbolic variant) and once with `seq: [32, 64, 128]` (three static variants), then times
both bundles with `aotrace bench --json` at seq 32, 64 and 128 (alternating, best median of
ROUNDS each) and prints dynamic / static. The issue's target: within 1.25x.

    /usr/bin/python3.11 bench/dynamic_bench.py --aotrace build/cli/aotrace [--threads N] [--out DIR]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SIZES = (32, 64, 128)
ROUNDS = 2
MODELS = {"bert_layer": "src", "gpt2_block": "x"}

SPEC = """version: 1
name: {name}
script: {script}
entries:
  {model}:
    call: {model}
    inputs:
      {input}: {{dtype: float32, shape: [1, seq, 768]}}
dims:
  seq: {dims}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aotrace", required=True)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="aotrace-dyn-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    failed = False
    for model, input_name in MODELS.items():
        bundles = {}
        for kind, dims in (("dynamic", "{min: 32, max: 128}"), ("static", "[32, 64, 128]")):
            spec = out / f"{model}_{kind}.yaml"
            spec.write_text(SPEC.format(name=f"{model}_{kind}", script=HERE / "models.py", model=model,
                                        input=input_name, dims=dims))
            bundle = out / f"{model}_{kind}.aot"
            r = subprocess.run([args.aotrace, "compile", "--no-cache", str(spec), "-o", str(bundle)], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{model} ({kind}): compile failed:\n{r.stderr}", file=sys.stderr)
                failed = True
                continue
            bundles[kind] = bundle
        if len(bundles) != 2:
            continue
        for seq in SIZES:
            best = {}
            for _ in range(ROUNDS):
                for kind, bundle in bundles.items():
                    r = subprocess.run([args.aotrace, "bench", str(bundle), "--shape", f"{input_name}=1x{seq}x768",
                                        "--threads", str(args.threads), "--min-time", str(args.min_time), "--json"],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        print(f"{model} ({kind}) seq {seq}: bench failed:\n{r.stderr}", file=sys.stderr)
                        failed = True
                        continue
                    ms = json.loads(r.stdout)["median_ms"]
                    best[kind] = min(best.get(kind, ms), ms)
            if len(best) == 2:
                rows.append((model, seq, best["dynamic"], best["static"]))
    print(f"\ndynamic dims: one variant for seq in [32, 128] against a static variant per size ({args.threads} threads)")
    print(f"{'model':<12} {'seq':>4} {'dynamic ms':>11} {'static ms':>10} {'dynamic/static':>15}")
    for model, seq, d, s in rows:
        print(f"{model:<12} {seq:>4} {d:>11.3f} {s:>10.3f} {d / s:>14.2f}x")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
