"""The GPU's two ceilings, measured before aotrace's numbers are read against them (issue 17;
../.library/device/METHOD.md): a large device-to-device copy (GB/s, bytes read plus written) and
large matrix products per math (TFLOP/s: f32 with TF32 off, TF32, f16, bf16), through the
device machine's CUDA torch. Writes them as JSON to argv[1] for device_check.sh's reports; where
torch or a GPU is missing, writes the datasheet figures for the GPU nvidia-smi names (or nothing)
and says so."""
import json
import subprocess
import sys

DATASHEET = {  # dense rates, vendor datasheets (leads, not measurements); the first match wins
    "H200 NVL": {"copy_gbs": 4800, "f32": 60, "tf32": 418, "f16": 836, "bf16": 836},
    "H200": {"copy_gbs": 4800, "f32": 67, "tf32": 495, "f16": 990, "bf16": 990},
    "H100 NVL": {"copy_gbs": 3900, "f32": 60, "tf32": 418, "f16": 836, "bf16": 836},
    "H100 PCIe": {"copy_gbs": 2000, "f32": 51, "tf32": 378, "f16": 756, "bf16": 756},
    "H100": {"copy_gbs": 3350, "f32": 67, "tf32": 495, "f16": 990, "bf16": 990},
}


def datasheet():
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    for key, figures in DATASHEET.items():
        if all(word in name for word in key.split()):
            return dict(figures, source=f"datasheet for {name.strip()}")
    return {}


def measured():
    import torch
    if not torch.cuda.is_available():
        return {}

    def timed(fn, repeat):
        for _ in range(3):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / repeat / 1e3  # seconds per call

    out = {"source": f"measured with torch {torch.__version__} on {torch.cuda.get_device_name()}"}
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    out["copy_gbs"] = round(2 * src.numel() * 4 / timed(lambda: dst.copy_(src), 20) / 1e9)
    del src, dst
    n = 8192
    for math, dtype, tf32 in [("f32", torch.float32, False), ("tf32", torch.float32, True),
                              ("f16", torch.float16, False), ("bf16", torch.bfloat16, False)]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda").to(dtype)
        b = torch.randn(n, n, device="cuda").to(dtype)
        out[math] = round(2 * n ** 3 / timed(lambda: a @ b, 10) / 1e12, 1)
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def main():
    try:
        figures = measured()
    except Exception as e:  # no torch, a torch without this GPU, out of memory: the datasheet
        print(f"measuring the ceilings failed: {type(e).__name__}: {e}")
        figures = {}
    if not figures:
        figures = datasheet()
        print("no CUDA torch here: ceilings from " + figures.get("source", "nowhere (unknown GPU)"))
    print("ceilings: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    with open(sys.argv[1], "w") as f:
        json.dump(figures, f)


main()
