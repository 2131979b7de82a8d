#!/usr/bin/python3.11
"""`make bench` (issues 6, 14): aotrace against torch eager and ONNX Runtime, same machine, same
thread count.

For every entry of bench/models.yaml: compiles it into its own bundle with `aotrace compile`
(wall-clock compile time; the capture and lowering seconds compile prints go to the JSON),
checks one output against torch eager (max abs error), and times it with `aotrace bench --json`.
Torch eager is timed on the same inputs with torch.set_num_threads(N) and OMP/OpenBLAS threads N.
Timing runs in two rounds, each timing every bundle and then eager in a fresh process: OpenMP's
default (spinning) wait policy in the first, OMP_WAIT_POLICY=PASSIVE in the second. Each side
keeps its best median, so a noisy moment of a shared machine does not favour either. Prints a table
with the speed-up (eager / aotrace) and its geometric mean, and sgemm 512³ GFLOP/s for both.

ONNX Runtime (--ort DIR: where `make bench-deps` installed onnxruntime-node from npm): each model
is exported with torch.onnx.export (opset 14, grad enabled so that torch 1.13's fused fast paths
stay out of the export), checked against eager, and timed by bench/ort_bench.js with the CPU
execution provider, graphOptimizationLevel "all", intra-op threads N, in each timing round. The
table adds ORT's median and aotrace's speed-up over it (ORT / aotrace) with its geometric mean;
without ORT the column says why. --fma-peak BIN (bench/fma_peak.cpp) measures the FMA peak on
the spot, and sgemm is reported as a share of it.

    /usr/bin/python3.11 bench/run_bench.py --aotrace build/cli/aotrace [--threads N] [--min-time S]
        [--out DIR] [--ort DIR] [--fma-peak BIN] [MODEL ...]

Exits 1 when something fails to compile or run or an output mismatches eager; a slow model is
reported, never refused.
"""
import argparse
import contextlib
import json
import math
import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HERE = pathlib.Path(__file__).resolve().parent
# Outputs must match eager within this (f32, different summation orders); bfloat16 ones within
# BF16_RTOL of each element plus BF16_ATOL of the largest magnitude (at least 1): a few units in
# bfloat16's last place (2^-8), as eager rounds after every op and the kernels after every op
# too, but sum in another order.
ATOL, RTOL = 1e-3, 1e-3
BF16_ATOL, BF16_RTOL = 2e-2, 5e-2
WAIT_POLICIES = ("default", "PASSIVE")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aotrace", help="the aotrace CLI (required unless --eager-worker)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for aotrace and torch (default: the CPUs this process may use)")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds of timed calls per measurement")
    ap.add_argument("--out", default=None, help="work folder for YAMLs, bundles, inputs (default: a temp dir)")
    ap.add_argument("--spec", default=str(HERE / "models.yaml"), help="the models' profile YAML")
    ap.add_argument("--ort", default=None, help="folder holding node_modules/onnxruntime-node (make bench-deps)")
    ap.add_argument("--fma-peak", default=None, help="bench/fma_peak: measures the FMA peak for the sgemm line")
    ap.add_argument("--eager-worker", metavar="INPUTS_DIR",
                    help="internal: time torch eager on the inputs saved in INPUTS_DIR, print JSON")
    ap.add_argument("models", nargs="*", help="entries to run (default: all)")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error("--threads must be positive")
    if not args.aotrace and not args.eager_worker:
        ap.error("--aotrace is required")
    return args


ARGS = parse_args()
# Before torch is imported: its BLAS and OpenMP read these once.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

# bfloat16 inputs are float32 files (NumPy has no bfloat16) holding bfloat16 values: `aotrace run`
# rounds them (exactly, here) and eager gets them .to(torch.bfloat16).
NP_DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
             "bfloat16": np.float32}


def torch_inputs(entry, arrays):
    """The entry's inputs as torch tensors of their declared dtypes."""
    return [torch.from_numpy(np.array(x)).to(torch.bfloat16) if entry["inputs"][n]["dtype"] == "bfloat16"
            else torch.from_numpy(np.array(x)) for n, x in zip(entry["inputs"], arrays)]


def is_bf16(entry):
    return any(decl["dtype"] == "bfloat16" for decl in entry["inputs"].values())


def within_tolerance(got, want, bf16):
    """(max abs error, every element within the tolerance) of float64 arrays."""
    diff = np.abs(got - want)
    worst = float(diff.max()) if diff.size else 0.0
    if bf16:
        scale = max(1.0, float(np.abs(want).max()) if want.size else 0.0)
        return worst, bool(np.all(diff <= BF16_ATOL * scale + BF16_RTOL * np.abs(want)))
    return worst, bool(np.all(diff <= ATOL + RTOL * np.abs(want)))


def load_spec():
    spec_path = pathlib.Path(ARGS.spec).resolve()
    spec = yaml.safe_load(spec_path.read_text())
    names = ARGS.models or list(spec["entries"])
    unknown = [n for n in names if n not in spec["entries"]]
    if unknown:
        sys.exit(f"run_bench.py: no entry {', '.join(unknown)} in {spec_path} "
                 f"(entries: {', '.join(spec['entries'])})")
    script = (spec_path.parent / spec["script"]).resolve()
    return spec_path, spec, names, script


def load_models(script):
    torch.set_num_threads(ARGS.threads)
    return runpy.run_path(str(script), run_name="__aotrace_bench__")


def flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in flatten(v)]
    return [t for item in out for t in flatten(item)]


def input_path(workdir, name, input_name):
    return workdir / f"{name}.{input_name}.npy"


# ---------------------------------------------------------------------------------------------
# Torch eager, timed in a fresh process per OpenMP wait policy (--eager-worker).

def time_eager(target, args):
    """Median ms of target(*args) under inference_mode, after a warm-up."""
    samples = []
    with torch.inference_mode():
        warm_end = time.perf_counter() + min(0.1 * ARGS.min_time, 1.0)
        for i in range(100):
            target(*args)
            if i >= 2 and time.perf_counter() > warm_end:
                break
        start = time.perf_counter()
        while len(samples) < 3 or time.perf_counter() - start < ARGS.min_time:
            t0 = time.perf_counter()
            target(*args)
            samples.append(time.perf_counter() - t0)
    return float(np.median(samples)) * 1e3


def eager_worker():
    _, spec, names, script = load_spec()
    namespace = load_models(script)
    inputs_dir = pathlib.Path(ARGS.eager_worker)
    result = {}
    for name in names:
        entry = spec["entries"][name]
        try:
            args = torch_inputs(entry, [np.load(input_path(inputs_dir, name, i)) for i in entry["inputs"]])
            result[name] = time_eager(eval(entry["call"], namespace), args)
        except Exception as err:  # noqa: BLE001 — reported for this model only
            result[name] = f"torch eager fails: {type(err).__name__}: {err}"
    print(json.dumps(result))
    return 0


def eager_timings(names, workdir, policy):
    """{name: median ms or an error message} with OpenMP wait policy `policy`, in a fresh process."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--eager-worker", str(workdir),
           "--threads", str(ARGS.threads), "--min-time", str(ARGS.min_time), "--spec", ARGS.spec, *names]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"timing torch eager (OMP_WAIT_POLICY {policy}) failed:\n{r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# aotrace: compile, check against eager, time.

def one_entry_yaml(spec, script, name, workdir):
    """A profile YAML holding only entry `name` (script path made absolute)."""
    one = {"version": 1, "name": name, "script": str(script), "entries": {name: spec["entries"][name]}}
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(one, sort_keys=False))
    return path


def compile_bundle(aotrace, yaml_path, bundle):
    start = time.perf_counter()
    r = subprocess.run([aotrace, "compile", "--no-cache", str(yaml_path), "-o", str(bundle)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"aotrace compile failed (exit {r.returncode}):\n{r.stderr.strip()}")
    # "  ENTRY, profile P: capture X s, lowering Y s" per variant
    m = re.search(r"capture ([0-9.e+-]+) s, lowering ([0-9.e+-]+) s", r.stderr)
    capture, lowering = (float(m.group(1)), float(m.group(2))) if m else (None, None)
    return seconds, capture, lowering


def check_against_eager(aotrace, bundle, name, entry, target, inputs, workdir):
    """Runs the bundle once with `aotrace run`; (max abs error against eager, within tolerance)."""
    args = []
    for input_name in inputs:
        args += ["--input", f"{input_name}={input_path(workdir, name, input_name)}"]
    outdir = workdir / f"{name}.out"
    r = subprocess.run([aotrace, "run", str(bundle), "--entry", name, "--threads", str(ARGS.threads), *args,
                        "--output-dir", str(outdir)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"aotrace run failed (exit {r.returncode}):\n{r.stderr.strip()}")
    with torch.inference_mode():
        expected = flatten(target(*torch_inputs(entry, inputs.values())))
    worst, ok = 0.0, True
    for i, want in enumerate(expected):
        bf16 = want.dtype == torch.bfloat16
        want = want.float().numpy() if bf16 else want.numpy()  # `run` writes bfloat16 as float32
        got = np.load(outdir / f"out{i}.npy")
        if got.shape != want.shape:
            raise RuntimeError(f"out{i} has shape {got.shape}, eager gives {want.shape}")
        err, within = within_tolerance(got.astype(np.float64), want.astype(np.float64), bf16)
        worst, ok = max(worst, err), ok and within
    return worst, ok


def shape_args(inputs):
    """`aotrace bench`'s --shape arguments for the inputs."""
    args = []
    for input_name, x in inputs.items():
        args += ["--shape", f"{input_name}=" + ("x".join(str(d) for d in x.shape) or "scalar")]
    return args


def time_aotrace(aotrace, bundle, name, shapes):
    r = subprocess.run([aotrace, "bench", str(bundle), "--entry", name, *shapes, "--threads", str(ARGS.threads),
                        "--min-time", str(ARGS.min_time), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"aotrace bench failed (exit {r.returncode}):\n{r.stderr.strip()}")
    return json.loads(r.stdout)["median_ms"]


# ---------------------------------------------------------------------------------------------
# ONNX Runtime: export, check against eager, time (bench/ort_bench.js under Node).

def ort_unavailable():
    """Why ONNX Runtime cannot be timed here, or None."""
    if not ARGS.ort:
        return "ORT not set up (make bench passes --ort after make bench-deps)"
    if not shutil.which("node"):
        return "node is not installed (make bench-deps installs npm, which brings it)"
    package = pathlib.Path(ARGS.ort) / "node_modules" / "onnxruntime-node"
    if not package.is_dir():
        return f"onnxruntime-node is not installed in {ARGS.ort} (make bench-deps: npm install failed or was skipped)"
    return None


class _Call(torch.nn.Module):
    """An entry's callable as a module, for torch.onnx.export."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def forward(self, *args):
        return self.target(*args)


def export_onnx(target, inputs, path):
    args = tuple(torch.from_numpy(x.copy()) for x in inputs.values())
    quiet = open(os.devnull, "w")
    with warnings.catch_warnings(), contextlib.redirect_stdout(quiet):
        warnings.simplefilter("ignore")
        # Grad enabled (the default): torch 1.13's fused inference paths (the BERT layer's
        # _transformer_encoder_layer_fwd) have no ONNX export.
        # The wrapper in the target's mode: export restores the wrapper's mode on exit, which
        # would put an eval-mode model into training mode (dropout) for the rest of the bench.
        wrapper = _Call(target).train(getattr(target, "training", False))
        torch.onnx.export(wrapper, args, str(path), opset_version=14, input_names=list(inputs),
                          do_constant_folding=True)
        if isinstance(target, torch.nn.Module) and target.training != wrapper.training:
            raise RuntimeError("torch.onnx.export changed the model's training mode")


def write_ort_inputs(name, inputs, workdir):
    """The model's inputs as raw files for bench/ort_bench.js, and their part of its manifest."""
    described = []
    for input_name, x in inputs.items():
        raw = workdir / f"{name}.{input_name}.bin"
        np.ascontiguousarray(x).tofile(raw)
        described.append({"name": input_name, "dtype": str(x.dtype), "shape": list(x.shape), "path": str(raw)})
    (workdir / f"{name}.ort_inputs.json").write_text(json.dumps(described))


def run_ort(name, workdir, min_time):
    """Times the exported model (inputs from write_ort_inputs) with bench/ort_bench.js: its JSON
    result (raises on failure)."""
    manifest = {"ort": str(pathlib.Path(ARGS.ort).resolve()), "model": str(workdir / f"{name}.onnx"),
                "threads": ARGS.threads, "min_time": min_time, "output": str(workdir / f"{name}.ort_out0.bin"),
                "inputs": json.loads((workdir / f"{name}.ort_inputs.json").read_text())}
    manifest_path = workdir / f"{name}.ort.json"
    manifest_path.write_text(json.dumps(manifest))
    r = subprocess.run(["node", str(HERE / "ort_bench.js"), str(manifest_path)], capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": r.stderr.strip() or f"exit {r.returncode}"}
    if r.returncode != 0 or "error" in result:
        raise RuntimeError(f"onnxruntime-node: {result.get('error', r.stderr.strip())}")
    return result


def setup_ort(name, target, inputs, workdir, row):
    """Exports the model and checks ORT's first output against eager (row["ort_error"] on failure)."""
    try:
        export_onnx(target, inputs, workdir / f"{name}.onnx")
        write_ort_inputs(name, inputs, workdir)
        result = run_ort(name, workdir, 0.0)
        with torch.inference_mode():
            want = flatten(target(*[torch.from_numpy(x.copy()) for x in inputs.values()]))[0].numpy()
        got = np.fromfile(workdir / f"{name}.ort_out0.bin", dtype=want.dtype)
        if list(result["output_shape"]) != list(want.shape) or got.size != want.size:
            raise RuntimeError(f"ORT's output has shape {result['output_shape']}, eager gives {list(want.shape)}")
        diff = np.abs(got.reshape(want.shape).astype(np.float64) - want.astype(np.float64))
        row["ort_max_abs_err"] = float(diff.max()) if diff.size else 0.0
        if not np.all(diff <= ATOL + RTOL * np.abs(want.astype(np.float64))):
            raise RuntimeError(f"ORT's output differs from eager (max abs error {row['ort_max_abs_err']:.3e})")
    except Exception as err:  # noqa: BLE001 — reported in the table, the bench goes on
        row["ort_error"] = f"{type(err).__name__}: {err}".splitlines()[0][:300]


def random_inputs(entry, rng):
    inputs = {}
    for input_name, decl in entry["inputs"].items():
        shape = tuple(int(d) for d in decl["shape"])
        dtype = NP_DTYPES[decl["dtype"]]
        inputs[input_name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                              else rng.integers(0, 8, shape).astype(dtype))
        if decl["dtype"] == "bfloat16":  # bfloat16 values, so that both sides see the same numbers
            inputs[input_name] = torch.from_numpy(inputs[input_name]).to(torch.bfloat16).float().numpy()
    return inputs


def shape_text(inputs):
    return ", ".join(f"{k}[{'x'.join(str(d) for d in v.shape)}]" for k, v in inputs.items())


def run_aotrace(aotrace, spec, script, name, target, inputs, workdir, row):
    bundle = workdir / f"{name}.aot"
    row["compile_s"], row["capture_s"], row["lowering_s"] = compile_bundle(
        aotrace, one_entry_yaml(spec, script, name, workdir), bundle)
    entry = spec["entries"][name]
    row["max_abs_err"], ok = check_against_eager(aotrace, bundle, name, entry, target, inputs, workdir)
    if not ok:
        tol = (f"bfloat16's atol {BF16_ATOL} of the largest output + rtol {BF16_RTOL}" if is_bf16(entry)
               else f"atol {ATOL} + rtol {RTOL}")
        raise RuntimeError(f"output differs from eager beyond {tol} (max abs error {row['max_abs_err']:.3e})")


def main():
    if ARGS.eager_worker:
        return eager_worker()
    aotrace = str(pathlib.Path(ARGS.aotrace).resolve())
    spec_path, spec, names, script = load_spec()
    ARGS.spec = str(spec_path)
    workdir = pathlib.Path(ARGS.out).resolve() if ARGS.out else pathlib.Path(tempfile.mkdtemp(prefix="aotrace-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    namespace = load_models(script)
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    print(f"aotrace bench: {ARGS.threads} thread(s) for both; torch {torch.__version__} eager "
          f"(inference_mode, BLAS {blas}, best of OpenMP wait policies); "
          f"medians of >= {ARGS.min_time} s", flush=True)
    if os.environ.get("OPENBLAS_CORETYPE"):
        print(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}")

    peak = measure_fma_peak()
    if peak:
        print(f"FMA peak ({peak['isa']}, measured now): {peak['gflops_1']:.1f} GFLOP/s on 1 thread, "
              f"{peak['gflops_n']:.1f} on {peak['threads']} at once", flush=True)
    no_ort = ort_unavailable()
    if no_ort:
        print(f"ONNX Runtime: {no_ort}", flush=True)

    rng = np.random.default_rng(0)
    rows = []
    for name in names:
        entry = spec["entries"][name]
        inputs = random_inputs(entry, rng)
        for input_name, x in inputs.items():
            np.save(input_path(workdir, name, input_name), x)
        row = {"model": name, "inputs": shape_text(inputs), "shapes": shape_args(inputs)}
        if name.startswith("sgemm"):  # a [M, K] @ b [K, N]
            (m, k), (_, n) = (x.shape for x in inputs.values())
            row["gemm"], row["flops"] = f"{m}x{k}x{n}", 2.0 * m * k * n
        rows.append(row)
        try:
            run_aotrace(aotrace, spec, script, name, eval(entry["call"], namespace), inputs, workdir, row)
            phases = (f" (capture {row['capture_s']:.1f} s, lowering {row['lowering_s']:.1f} s)"
                      if row["capture_s"] is not None else "")
            print(f"  {name}: compiled in {row['compile_s']:.1f} s{phases}, max abs error "
                  f"{row['max_abs_err']:.1e}", flush=True)
        except Exception as err:  # noqa: BLE001 — reported in the table, the others still run
            row["error"] = f"{type(err).__name__}: {err}" if not isinstance(err, RuntimeError) else str(err)
            print(f"  {name}: FAILED", flush=True)
        if no_ort:
            row["ort_error"] = no_ort
        elif is_bf16(entry):
            row["ort_error"] = "not compared: the bench exports float32 models to ONNX only"
        else:
            setup_ort(name, eval(entry["call"], namespace), inputs, workdir, row)
            if "ort_error" in row:
                print(f"  {name}: ONNX Runtime: {row['ort_error']}", flush=True)
    # Timing rounds, one per OpenMP wait policy: every bundle, then torch eager in a fresh process.
    # Each side keeps its best median over the rounds, so that a noisy moment of a shared machine
    # falls on both sides alike.
    load = 0.0
    for policy in WAIT_POLICIES:
        load = max(load, os.getloadavg()[0])
        for row in rows:
            if "error" in row:
                continue
            try:
                ms = time_aotrace(aotrace, workdir / f"{row['model']}.aot", row["model"], row["shapes"])
                row["aotrace_ms"] = min(ms, row.get("aotrace_ms", ms))
            except RuntimeError as err:
                row["error"] = str(err)
        for row in rows:
            if "ort_error" in row:
                continue
            try:
                ms = run_ort(row["model"], workdir, ARGS.min_time)["median_ms"]
                row["ort_ms"] = min(ms, row.get("ort_ms", ms))
            except RuntimeError as err:
                row["ort_error"] = str(err)
        try:
            for name, ms in eager_timings(names, workdir, policy).items():
                row = next(r for r in rows if r["model"] == name)
                if isinstance(ms, str):
                    row.setdefault("error", ms)
                elif "eager_ms" not in row or ms < row["eager_ms"]:
                    row["eager_ms"], row["eager_omp_wait_policy"] = ms, policy
        except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as err:
            for row in rows:
                row.setdefault("error", str(err))
    for row in rows:
        if "aotrace_ms" in row and "eager_ms" in row and "error" not in row:
            row["speedup"] = row["eager_ms"] / row["aotrace_ms"]
        if "aotrace_ms" in row and "ort_ms" in row and "error" not in row:
            row["vs_ort"] = row["ort_ms"] / row["aotrace_ms"]
    print_table(rows, peak)
    # The timed runs themselves keep about `threads` CPUs busy; more than that is other work.
    load, cpus = max(load, os.getloadavg()[0]), os.cpu_count() or 1
    if load > max(cpus, ARGS.threads) + 0.5:
        print(f"note: load average {load:.1f} on {cpus} CPUs: other work shares the cores, timings are noisy")
    for row in rows:
        row.pop("shapes", None)
    (workdir / "bench_results.json").write_text(json.dumps({"threads": ARGS.threads, "fma_peak": peak, "rows": rows},
                                                           indent=1))
    print(f"results: {workdir / 'bench_results.json'}")
    failures = [r for r in rows if "error" in r]
    for row in failures:
        print(f"\nFAILED {row['model']}: {row['error']}", file=sys.stderr)
    return 1 if failures else 0


def measure_fma_peak():
    """bench/fma_peak's JSON ({isa, threads, gflops_1, gflops_n}), or None without --fma-peak."""
    if not ARGS.fma_peak:
        return None
    r = subprocess.run([ARGS.fma_peak, str(ARGS.threads), "1.5"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FMA peak: {ARGS.fma_peak} failed: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout)


COLUMNS = [("model", 17), ("inputs", 22), ("compile s", 9), ("aotrace ms", 11), ("eager ms", 10),
           ("vs eager", 9), ("ORT ms", 9), ("vs ORT", 7), ("max abs err", 11)]


def geomean_line(rows, key, what):
    models = [r for r in rows if key in r and not r["model"].startswith("sgemm")]
    if not models:
        return
    geomean = math.exp(sum(math.log(r[key]) for r in models) / len(models))
    slowest = min(models, key=lambda r: r[key])
    print(f"geometric mean speed-up ({what}) over {len(models)} model(s): {geomean:.2f}x "
          f"(lowest: {slowest['model']} {slowest[key]:.2f}x)")


def print_table(rows, peak=None):
    def line(cells):
        return "  ".join(f"{c:<{w}}" if i < 2 else f"{c:>{w}}" for i, (c, (_, w)) in enumerate(zip(cells, COLUMNS)))

    def num(row, key, fmt):
        return format(row[key], fmt) if row.get(key) is not None else "-"

    print()
    print(line([title for title, _ in COLUMNS]))
    for r in rows:
        print(line([r["model"], r["inputs"], num(r, "compile_s", ".1f"), num(r, "aotrace_ms", ".3f"),
                    num(r, "eager_ms", ".3f"), f"{r['speedup']:.2f}x" if "speedup" in r else "FAILED",
                    num(r, "ort_ms", ".3f"), f"{r['vs_ort']:.2f}x" if "vs_ort" in r else "-",
                    num(r, "max_abs_err", ".1e")]))
    print()
    geomean_line(rows, "speedup", "eager / aotrace")
    geomean_line(rows, "vs_ort", "ORT / aotrace")
    ort_missing = sorted({r["ort_error"] for r in rows if "ort_error" in r})
    for why in ort_missing:
        models = ", ".join(r["model"] for r in rows if r.get("ort_error") == why)
        print(f"ORT column empty for {models}: {why}")
    for r in rows:
        if "flops" in r and "speedup" in r:
            r["aotrace_gflops"] = r["flops"] / (r["aotrace_ms"] * 1e6)
            r["torch_gflops"] = r["flops"] / (r["eager_ms"] * 1e6)
            text = (f"sgemm {r['gemm']}: aotrace {r['aotrace_gflops']:.1f} GFLOP/s, torch {r['torch_gflops']:.1f} "
                    f"GFLOP/s ({100 * r['aotrace_gflops'] / r['torch_gflops']:.0f}% of torch)")
            if "ort_ms" in r:
                text += f", ORT {r['flops'] / (r['ort_ms'] * 1e6):.1f} GFLOP/s"
            if peak:
                # Against the 1-thread peak times the threads: a busy second core lowers a
                # measured N-thread peak, never this.
                full = peak["gflops_1"] * peak["threads"]
                r["share_of_fma_peak"] = r["aotrace_gflops"] / full
                text += (f"; {100 * r['share_of_fma_peak']:.0f}% of the FMA peak ({peak['threads']} x "
                         f"{peak['gflops_1']:.1f} GFLOP/s)")
            print(text)


if __name__ == "__main__":
    sys.exit(main())
