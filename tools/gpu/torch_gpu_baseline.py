"""Torch eager on the GPU for the models of tools/gpu/device_check.sh's latency runs (issue 17):
the same modules (bench/models.py), float32 with TF32 off (aotrace's CUDA kernels are plain f32),
batch 1 and 32, median of 50 calls timed with CUDA events after 5 warm-ups. Runs on the device
machine, whose python3 has a CUDA torch (the build machine's torch is CPU-only)."""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import models  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
shapes = {"bert_layer": (128, 768), "gpt2_block": (128, 768), "resnet18": (3, 224, 224)}
with torch.no_grad():
    for name, shape in shapes.items():
        module = getattr(models, name).cuda().eval()
        for batch in (1, 32):
            x = torch.randn((batch,) + shape, device="cuda")
            for _ in range(5):
                module(x)
            times = []
            for _ in range(50):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                module(x)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            times.sort()
            print(f"torch eager cuda f32 {name} batch {batch}: median {times[25]:.4g} ms, min {times[0]:.4g} ms",
                  flush=True)
