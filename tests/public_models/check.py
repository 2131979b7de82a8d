"""check.py AOTRACE SPEC INT_HIGH: compiles SPEC, runs every profile's variant with `aotrace run`
on random inputs (integers in [0, INT_HIGH), floats from N(0, 1); a tuple argument's tensors,
L['hidden'][0], ..., passed as one tuple), and compares each output with
torch eager on the same inputs (tolerance 1e-4 + 1e-4 * max |eager|); exit 1 on a mismatch."""
import json, pathlib, re, runpy, subprocess, sys, tempfile
import numpy as np, torch
aotrace, spec, high = sys.argv[1], pathlib.Path(sys.argv[2]).resolve(), int(sys.argv[3])
work = pathlib.Path(tempfile.mkdtemp())
bundle = work / "b.aot"
r = subprocess.run([aotrace, "compile", str(spec), "-o", str(bundle)], capture_output=True, text=True)
print(r.stderr[-3000:])
if r.returncode: sys.exit(1)
report = json.loads((bundle / "report.json").read_text())
sys.path.insert(0, str(pathlib.Path(report["script"]).parent)); ns = runpy.run_path(report["script"], run_name="__aotrace_main__")
rng = np.random.default_rng(0)
DT = {"f32": np.float32, "i64": np.int64, "f64": np.float64, "bool": np.bool_}
def flat(o):
    if isinstance(o, torch.Tensor): return [o]
    if isinstance(o, (tuple, list)): return [t for i in o for t in flat(i)]
    if isinstance(o, dict): return [t for i in o.values() for t in flat(i)]
    return []
worst_all = 0
for prof in report["profiles"]:
    entry = next(e for e in report["entries"] if e["name"] == prof["entry"])
    g = json.loads((bundle / "graphs" / f"{prof['entry']}.{prof['variant']}.json").read_text())
    ins, args = [], []
    nested = {}  # L['hidden'][0]: the inputs of a tuple, list or dict argument, rebuilt below
    for i, s in enumerate(g["inputs"]):
        if s["name"] == "<rng>": continue  # the generator state: the runtime's
        m = re.fullmatch(r"(\w+)\[(.*)\]", s["type"]); dt = DT[m.group(1)]
        shape = tuple(int(d) for d in m.group(2).split(",") if d.strip())
        x = rng.integers(0, high, shape).astype(dt) if dt == np.int64 else rng.standard_normal(shape).astype(dt)
        p = work / f"{s['name']}.npy"; np.save(p, x); ins += ["--input", f"{s['name']}={p}"]
        m = re.fullmatch(r"L\['(\w+)'\](?:\[(\d+)\])?", s["source"])
        if m and m.group(2) is not None:
            if m.group(1) not in nested: nested[m.group(1)] = []; args.append(nested[m.group(1)])
            nested[m.group(1)].append(torch.from_numpy(x.copy()))
        else:
            args.append(torch.from_numpy(x.copy()))
    args = [tuple(a) if isinstance(a, list) else a for a in args]
    out = work / "out"
    r = subprocess.run([aotrace, "run", str(bundle), "--entry", prof["entry"], *ins, "--output-dir", str(out)], capture_output=True, text=True)
    if r.returncode: print(r.stderr); sys.exit(1)
    # Random numbers (the VAE's randn_like) are the bundle's own: an output that changes with
    # the seed is checked for shape and finiteness; every other output must match eager.
    random = set()
    if "= random(" in g["text"]:
        r = subprocess.run([aotrace, "run", str(bundle), "--entry", prof["entry"], *ins, "--seed", "1", "--output-dir", str(work / "out1")], capture_output=True, text=True)
        if r.returncode: print(r.stderr); sys.exit(1)
        random = {k for k in range(len(g["outputs"])) if not np.array_equal(np.load(out / f"out{k}.npy"), np.load(work / "out1" / f"out{k}.npy"))}
    target = eval(entry["call"], ns)
    if isinstance(target, torch.nn.Module): target.eval()
    with torch.no_grad(): want = flat(target(*args))
    for k, w in enumerate(want):
        got = np.load(out / f"out{k}.npy")
        if k in random:
            ok = got.shape == tuple(w.shape) and bool(np.isfinite(got).all())
            print(f"{prof['entry']:14s} {prof['profile']:10s} out{k} {tuple(w.shape)} draws random numbers: shape and finiteness {'ok' if ok else 'WRONG'}")
            if not ok: print("MISMATCH"); sys.exit(1)
            continue
        err = float(np.abs(got.astype(np.float64) - w.numpy().astype(np.float64)).max()) if w.numel() else 0.0
        worst_all = max(worst_all, err)
        scale = float(np.abs(w.numpy()).max()) if w.numel() else 0.0
        print(f"{prof['entry']:14s} {prof['profile']:10s} out{k} {tuple(w.shape)} max abs err {err:.3g} (max |eager| {scale:.3g})")
        if not np.isfinite(err) or err > 1e-4 + 1e-4 * scale:
            print("MISMATCH"); sys.exit(1)
print("WORST", worst_all)
