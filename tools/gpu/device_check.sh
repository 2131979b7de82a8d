#!/bin/bash
# GPU checks of the CUDA backend (issue 17), run on a machine with an NVIDIA GPU by the session's
# `device` tool, from bundles compiled on the build machine (tools/gpu/prepare.sh puts them and a
# stripped aotrace_run in gpu_carry1/ and gpu_carry2/). Needs only the runtime (aotrace_run: libc, libdl,
# pthread; libcuda.so.1 by dlopen) and python3 with numpy for random inputs.
#   0. the GPU's ceilings and torch eager on it (ceilings.py, torch_gpu_baseline.py), once a machine;
#   1. correctness: every bundle's golden vectors (torch eager on the CPU, recorded at compile)
#      on the GPU: aotrace_run BUNDLE --selftest --device cuda;
#   2. latency: each bench bundle's entry at batch 1 and 32 on random inputs in GPU memory,
#      --repeat timed calls (CUDA Graph replays), median reported;
#   3. elementwise bandwidth (bandwidth.aot: GB/s, vector and scalar accesses), and whole-tensor
#      reductions' and argmax's (reduce_total.aot: split across the grid, against one block: GB/s,
#      and the results against numpy's);
#   4. the GEMM kernels alone (gemm.aot, and gemm_tf32/f16/bf16.aot on tensor cores; the
#      *_stages2.aot with double-buffered tiles): the BERT layer's matmul shapes, ms and TFLOP/s
#      against the ceilings; Nsight Compute on the f32 QKV matmul and on the split sum's warp
#      reduction; compute-sanitizer racecheck and synccheck on them, on a block reduction and on
#      top-p sampling's block sort, cumsum and scatter.
# Usage: tools/gpu/device_check.sh [CARRY_DIR] [OUT_DIR]
set -u
carry=${1:-gpu_carry1}
out=${2:-${OUT:-/tmp/gpu_out}}
mkdir -p "$out"
run="$carry/aotrace_run"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/gpu.txt"
here=$(dirname "$0")
# The ceilings (copy GB/s, matmul TFLOP/s per math) and torch eager on the GPU, once per machine
# (it stays warm between the carries' calls): the reports below read against them.
ceilings=/tmp/gpu_ceilings.json
if [ ! -f $ceilings ]; then
  timeout 90 python3 "$here/ceilings.py" $ceilings 2>&1 | tail -3 | tee "$out/ceilings.txt"
  [ -f $ceilings ] || echo '{}' > $ceilings  # timed out: not again on the next call
  timeout 120 python3 "$here/torch_gpu_baseline.py" 2>&1 | tail -6 | tee "$out/torch_cuda.txt"
fi
status=0
for b in "$carry"/*.aot; do
  echo "== selftest $(basename "$b")"
  if ! timeout 300 "$run" "$b" --selftest --device cuda 2>&1 | tee -a "$out/selftest.txt"; then status=1; fi
done
if [ -d "$carry/mlp.aot" ] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer memcheck mlp"
  timeout 180 compute-sanitizer --tool memcheck "$run" "$carry/mlp.aot" --selftest --device cuda 2>&1 | tail -5 | tee -a "$out/sanitizer.txt"
fi
inputs=/tmp/gpu_inputs
mkdir -p "$inputs"
python3 - "$inputs" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
for name, shape in [("bert_layer", (128, 768)), ("gpt2_block", (128, 768)), ("resnet18", (3, 224, 224))]:
    for batch in (1, 32):
        np.save(f"{d}/{name}_b{batch}.npy", rng.standard_normal((batch,) + shape).astype(np.float32))
PY
for m in bert_layer gpt2_block resnet18 bert_layer_tf32 gpt2_block_tf32 bert_layer_warp64; do
  b="$carry/$m.aot"
  [ -d "$b" ] || continue
  model=${m%_tf32}
  model=${model%_warp64}
  input=$([ $model = bert_layer ] && echo src || echo x)
  for batch in 1 32; do
    echo "== latency $m batch $batch"
    timeout 120 "$run" "$b" --input "$input=$inputs/${model}_b$batch.npy" --device cuda --repeat 50 \
      --output-dir "/tmp/gpu_run_$m$batch" 2>&1 | grep -v '^  /tmp' | tee -a "$out/latency.txt" || status=1
  done
  echo "== latency $m batch 1 without CUDA Graphs"
  AOTRACE_CUDA_GRAPHS=0 timeout 120 "$run" "$b" --input "$input=$inputs/${model}_b1.npy" --device cuda --repeat 50 \
    --output-dir /tmp/gpu_run_nograph 2>&1 | grep -v '^  /tmp' | tee -a "$out/latency.txt"
done
if ls -d "$carry"/gemm*.aot >/dev/null 2>&1; then
  # The tiled GEMM alone: `a @ b` at the BERT layer's shapes (tools/gpu/prepare.sh), TFLOP/s.
  python3 - "$inputs" <<'PY'
import sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(1)
for n, (a, b) in {"qkv_b32": ((4096, 768), (768, 2304)), "ff1_b32": ((4096, 768), (768, 3072)),
                  "ff2_b32": ((4096, 3072), (3072, 768)), "proj_b1": ((128, 768), (768, 768)),
                  "ff1_b1": ((128, 768), (768, 3072)), "scores_b32": ((384, 128, 64), (384, 64, 128))}.items():
    np.save(f"{d}/{n}_a.npy", r.standard_normal(a).astype(np.float32))
    np.save(f"{d}/{n}_b.npy", r.standard_normal(b).astype(np.float32))
    np.save(f"{d}/{n}_a_f16.npy", np.load(f"{d}/{n}_a.npy").astype(np.float16))  # gemm_tensors_f16
    np.save(f"{d}/{n}_b_f16.npy", np.load(f"{d}/{n}_b.npy").astype(np.float16))
PY
fi
for gemm in "$carry"/gemm.aot "$carry"/gemm_stages2.aot "$carry"/gemm_tf32.aot "$carry"/gemm_tf32_stages2.aot \
  "$carry"/gemm_f16.aot "$carry"/gemm_bf16.aot "$carry"/gemm_tensors_f16.aot "$carry"/gemm_tensors_bf16.aot; do
  [ -d "$gemm" ] || continue
  sfx=""  # f16 tensors read f16 files; bf16 ones take the f32 files (run rounds them)
  case $gemm in *tensors_f16*) sfx=_f16 ;; esac
  for e in qkv_b32 ff1_b32 ff2_b32 proj_b1 ff1_b1 scores_b32; do
    line=$(timeout 60 "$run" "$gemm" --entry $e --input "a=$inputs/${e}_a$sfx.npy" --input "b=$inputs/${e}_b$sfx.npy" \
      --device cuda --repeat 30 --output-dir /tmp/gpu_gemm 2>&1 | grep median) || status=1
    python3 - "$e" "$line" "$inputs" "$(basename "$gemm" .aot)" $ceilings <<'PY' | tee -a "$out/gemm.txt"
import json, os, re, sys, numpy as np
name, line, d, gemm, ceilings = sys.argv[1:6]
math = next((p for p in gemm.split("_") if p in ("tf32", "f16", "bf16")), "f32")
peak = json.load(open(ceilings)).get(math) if os.path.exists(ceilings) else None
a, b = np.load(f"{d}/{name}_a.npy", mmap_mode="r"), np.load(f"{d}/{name}_b.npy", mmap_mode="r")
flop = 2 * np.prod(a.shape) * b.shape[-1]
m = re.search(r"median ([0-9.e+-]+) ms", line)
tflops = flop / float(m.group(1)) / 1e9 if m else 0
of = f" ({100 * tflops / peak:.0f}% of {peak} for {math})" if peak else ""
print(f"{gemm} {name} {a.shape}@{b.shape}: " + (f"{float(m.group(1)):.4g} ms, {tflops:.1f} TFLOP/s{of}" if m else "no timing: " + line))
PY
  done
done
if [ -d "$carry/bandwidth.aot" ] || [ -d "$carry/reduce_total.aot" ]; then
  python3 -c "import numpy as np; r = np.random.default_rng(3)
for n in 'xy': np.save('$inputs/bw_' + n + '.npy', r.standard_normal((8192, 4096), dtype=np.float32))"
fi
if [ -d "$carry/bandwidth.aot" ]; then
  # Elementwise kernels' memory bandwidth (x·2 + y: 3 × 128 MiB moved; gelu(x): 2 × 128 MiB),
  # four elements a thread as vectors (bandwidth.aot) and one (bandwidth_scalar.aot), against the
  # measured copy bandwidth (ceilings.py).
  for b in bandwidth bandwidth_scalar; do
    for e in axpy gelu; do
      ins="--input x=$inputs/bw_x.npy"
      [ $e = axpy ] && ins="$ins --input y=$inputs/bw_y.npy"
      line=$(timeout 60 "$run" "$carry/$b.aot" --entry $e $ins --device cuda --repeat 50 --output-dir /tmp/gpu_bw 2>&1 | grep median) || status=1
      python3 - "$b $e" "$line" "$([ $e = axpy ] && echo 3 || echo 2)" $ceilings <<'PY' | tee -a "$out/bandwidth.txt"
import json, os, re, sys
name, line, tensors, ceilings = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
peak = json.load(open(ceilings)).get("copy_gbs") if os.path.exists(ceilings) else None
m = re.search(r"median ([0-9.e+-]+) ms", line)
gb = tensors * 8192 * 4096 * 4 / 1e9
gbs = gb / float(m.group(1)) * 1e3 if m else 0
print(f"{name}: " + (f"{float(m.group(1)):.4g} ms, {gbs:.0f} GB/s" + (f" of {peak} copying" if peak else "") if m else "no timing: " + line))
PY
    done
  done
fi
# Whole-tensor sum, absolute max and argmax of 128 MiB (golden vectors skip inputs this big: the results
# are checked against numpy's here), split across the grid and as one block.
for b in reduce_total reduce_total_unsplit; do
  [ -d "$carry/$b.aot" ] || continue
  for e in total absmax argmax; do
    line=$(timeout 60 "$run" "$carry/$b.aot" --entry $e --input "x=$inputs/bw_x.npy" --device cuda --repeat 50 \
      --output-dir "/tmp/gpu_$b$e" 2>&1 | grep median) || status=1
    python3 - "$b $e" "$line" "$inputs/bw_x.npy" "/tmp/gpu_$b$e" $ceilings <<'PY' | tee -a "$out/bandwidth.txt" || status=1
import json, os, re, sys
import numpy as np
name, line, x_path, outdir, ceilings = sys.argv[1:6]
peak = json.load(open(ceilings)).get("copy_gbs") if os.path.exists(ceilings) else None
m = re.search(r"median ([0-9.e+-]+) ms", line)
gbs = 8192 * 4096 * 4 / 1e9 / float(m.group(1)) * 1e3 if m else 0
x = np.load(x_path)
want = np.abs(x).max() if name.endswith("absmax") else int(np.argmax(x)) if name.endswith("argmax") else x.sum(dtype=np.float64)
got = float(np.load(outdir + "/out0.npy")) if os.path.exists(outdir + "/out0.npy") else None
ok = got is not None and abs(got - want) <= 1e-4 * max(1.0, abs(want)) * (not name.endswith("argmax")) + 1e-2 * name.endswith("total")
print(f"{name}: " + (f"{float(m.group(1)):.4g} ms, {gbs:.0f} GB/s" + (f" of {peak} copying" if peak else "") if m else "no timing: " + line)
      + f"; result {got} against numpy's {want}: " + ("ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
PY
  done
done
# Top-k sampling's torch.topk(logits, 200) over a vocabulary of 50257 (cuda-sort-wide-topks: the
# 200 best of each chunk of 2048, a thread block each, then of those), top-p sampling's sort of
# 4 × 50257 (a thread block per row: a bitonic network, tiles in shared memory) and its whole
# filter (sort, softmax, cumsum and scatter: blocks per row): their latency (the selftests above
# checked the numbers), in reductions.aot (gpu_carry4) and, a thread per row,
# reductions_threads.aot (gpu_carry5).
for bundle in "$carry/reductions.aot" "$carry/reductions_threads.aot"; do
  [ -d "$bundle" ] || continue
  python3 -c "import numpy as np; np.save('$inputs/logits.npy', np.random.default_rng(4).standard_normal((1, 50257)).astype(np.float32))"
  python3 -c "import numpy as np; np.save('$inputs/logits4.npy', np.random.default_rng(5).standard_normal((4, 50257)).astype(np.float32))"
  for entry in topk sort top_p; do
    logits=$inputs/logits4.npy
    [ $entry = topk ] && logits=$inputs/logits.npy
    echo "== latency $(basename "$bundle" .aot) $entry" | tee -a "$out/latency.txt"
    timeout 120 "$run" "$bundle" --entry $entry --input "logits=$logits" --device cuda --repeat 20 \
      --output-dir /tmp/gpu_rows 2>&1 | grep -v '^  /tmp' | tee -a "$out/latency.txt" || status=1
  done
done
# Why the f32 GEMM runs where it does: Nsight Compute on the BERT QKV matmul, one and two stages
# (throughput against peak, occupancy, what the warps wait on).
if command -v ncu >/dev/null; then
  for gemm in "$carry"/gemm.aot "$carry"/gemm_stages2.aot; do
    [ -d "$gemm" ] || continue
    echo "== ncu $(basename "$gemm") qkv_b32" | tee -a "$out/ncu.txt"
    AOTRACE_CUDA_GRAPHS=0 timeout 90 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section LaunchStats -k regex:qkv_b32 -c 1 "$run" "$gemm" --entry qkv_b32 --input "a=$inputs/qkv_b32_a.npy" \
      --input "b=$inputs/qkv_b32_b.npy" --device cuda --output-dir /tmp/gpu_ncu 2>&1 |
      grep -E 'Duration|Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles|Stall|stall|ERR|rror' |
      head -40 | tee -a "$out/ncu.txt"
  done
  # A warp reduction's memory throughput (the split sum's first kernel: a warp per chunk of
  # 8192, its lanes' loops unrolled by 4) and what its warps wait on.
  if [ -d "$carry/reduce_total.aot" ]; then
    echo "== ncu reduce_total total (first kernel)" | tee -a "$out/ncu.txt"
    AOTRACE_CUDA_GRAPHS=0 timeout 90 ncu --section SpeedOfLight --section WarpStateStats -k regex:total_v0_k0 -c 1 \
      "$run" "$carry/reduce_total.aot" --entry total --input "x=$inputs/bw_x.npy" --device cuda --output-dir /tmp/gpu_ncu 2>&1 |
      grep -E 'Duration|Throughput|Warp Cycles|Stall|stall|ERR|rror' | head -20 | tee -a "$out/ncu.txt"
  fi
fi
# Shared-memory races and barrier misuse in the tiled GEMMs (grid emulation runs a block's threads
# in phases and cannot see either): compute-sanitizer's racecheck and synccheck on one small
# matmul per math, launched one by one.
sanitize() {  # BUNDLE ENTRY --input ...: racecheck and synccheck, launches one by one
  local bundle=$1 entry=$2
  shift 2
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer $tool $(basename "$bundle") $entry"
    AOTRACE_CUDA_GRAPHS=0 timeout 180 compute-sanitizer --tool $tool "$run" "$bundle" --entry "$entry" "$@" --device cuda \
      --output-dir /tmp/gpu_sanitized 2>&1 | tail -3 | tee -a "$out/sanitizer.txt"
  done
}
if command -v compute-sanitizer >/dev/null; then
  for gemm in "$carry"/gemm.aot "$carry"/gemm_stages2.aot "$carry"/gemm_tf32.aot "$carry"/gemm_tf32_stages2.aot \
    "$carry"/gemm_bf16.aot; do
    [ -d "$gemm" ] && sanitize "$gemm" proj_b1 --input "a=$inputs/proj_b1_a.npy" --input "b=$inputs/proj_b1_b.npy"
  done
  if [ -d "$carry/reductions.aot" ]; then  # block reductions: warps' totals through shared memory
    python3 -c "import numpy as np; np.save('$inputs/red_x.npy', np.random.default_rng(2).standard_normal((32, 1024)).astype(np.float32))"
    sanitize "$carry/reductions.aot" total --input "x=$inputs/red_x.npy"
    # block sorts, scans and scatters: shared tiles and chunks between barriers
    python3 -c "import numpy as np; np.save('$inputs/top_p_small.npy', np.random.default_rng(6).standard_normal((2, 5000)).astype(np.float32))"
    sanitize "$carry/reductions.aot" top_p_small --input "logits=$inputs/top_p_small.npy"
  fi
fi
exit $status
