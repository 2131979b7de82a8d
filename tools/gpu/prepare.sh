#!/bin/bash
# Builds what tools/gpu/device_check.sh runs on a GPU machine (issue 17), here, into folders the
# device tool carries (each under its 64 MiB limit with the tree; /gpu_carry*/ is in .gitignore,
# so name the folder in the run's `carry`), each with a stripped aotrace_run (the runtime alone: no compiler there):
#   gpu_carry1  bert_layer.aot, gpt2_block.aot (bench/models.py, batch 1..32, 128 × 768): 60 MiB
#   gpu_carry2  resnet18.aot (224², batch 1..32), gemm.aot (the BERT layer's matmul shapes as
#               `a @ b`, no weights: TFLOP/s) and gemm_stages2.aot (the same, double-buffered
#               tiles: --cuda-gemm-stages 2), mlp.aot (examples/mlp: compute-sanitizer's subject)
#   gpu_carry3  bert_layer_tf32.aot, gpt2_block_tf32.aot: gpu_carry1's models with cuda_math tf32
#   gpu_carry5  reductions_threads.aot: gpu_carry4's reductions.aot with a thread per row where
#               it takes a thread block (--cuda-block-row-min 2^40: the block kernels' baseline;
#               7 MB, which gpu_carry3 had no room for)
#   gpu_carry4  gemm_tf32.aot, gemm_f16.aot, gemm_bf16.aot: gemm.aot on tensor cores
#               (gemm_tf32_stages2.aot: TF32 with two stages); gemm_tensors_f16.aot and
#               gemm_tensors_bf16.aot: gemm.aot's shapes as f16 and bf16 tensors (their own mma);
#               bert_layer_warp64.aot: the BERT layer with --cuda-warp-reduce-min 64 (its softmax
#               rows of 128 a warp each, against gpu_carry1's thread each); reductions.aot (a
#               whole-tensor sum and min of 32 × 1024: block reductions; a row max: warps;
#               top-k sampling's torch.topk(logits, 200) over a vocabulary of 50257: chunks of
#               2048 sorted by thread blocks;
#               top-p sampling's sort of 4 × 50257, and its whole filter at 4 × 50257 and
#               2 × 5000: a thread block per row sorts, scans and scatters);
#               reduce_total.aot and reduce_total_unsplit.aot (x.sum(), x.abs().amax(), x.argmax() of
#               8192 × 4096 f32: split across the grid, and a block each, --cuda-split-reduce-chunk 2^40);
#               bandwidth.aot and bandwidth_scalar.aot (x·2 + y and gelu(x) on rows × 4096 f32: four
#               elements a thread as 16-byte vectors, and one a thread, --cuda-vector-elements 1):
#               42 MiB
# Then, with the device tool:  run  bash tools/gpu/device_check.sh gpu_carry1 $OUT
#   (carry: ["gpu_carry1"]), and the same for gpu_carry2, 3, 4 and 5 within 30 s of each other
#   (the machine stays warm). The script fails when a carry and the tracked tree exceed 64 MiB.
# Usage: tools/gpu/prepare.sh [ARCHS]   (default sm_90: the device tool's H100 and H200)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
archs=${1:-sm_90}
aotrace=$root/build/cli/aotrace
[ -x "$aotrace" ] || { echo "build first: make build" >&2; exit 1; }
specs=$(mktemp -d)
trap 'rm -rf "$specs"' EXIT
spec() {  # NAME CALL INPUTS [DIMS]
  printf 'version: 1\nname: %s\nscript: %s/bench/models.py\ntargets: [cuda]\nentries:\n%s\n%s' \
    "$1" "$root" "$2" "${3:-}" > "$specs/$1.yaml"
}
dims=$'dims:\n  batch: {min: 1, max: 32}\n'
spec bert_layer $'  bert_layer:\n    call: bert_layer\n    inputs:\n      src: {dtype: float32, shape: [batch, 128, 768]}' "$dims"
spec gpt2_block $'  gpt2_block:\n    call: gpt2_block\n    inputs:\n      x: {dtype: float32, shape: [batch, 128, 768]}' "$dims"
spec resnet18 $'  resnet18:\n    call: resnet18\n    inputs:\n      x: {dtype: float32, shape: [batch, 3, 224, 224]}' "$dims"
gemm=""
# name M K N [batch]: the BERT layer's projections at batch 32 and 1, attention's QKᵀ at 32.
while read -r name m k n b; do
  a="[$m, $k]" bb="[$k, $n]"
  [ -n "$b" ] && a="[$b, $m, $k]" bb="[$b, $k, $n]"
  gemm+=$'  '"$name"$':\n    call: matmul\n    inputs:\n      a: {dtype: float32, shape: '"$a"$'}\n      b: {dtype: float32, shape: '"$bb"$'}\n'
done <<'EOF'
qkv_b32 4096 768 2304
ff1_b32 4096 768 3072
ff2_b32 4096 3072 768
proj_b1 128 768 768
ff1_b1 128 768 3072
scores_b32 128 64 128 384
EOF
spec gemm "$gemm"
for mm in gemm:tf32 gemm:f16 gemm:bf16 bert_layer:tf32 gpt2_block:tf32; do  # on tensor cores
  m=${mm%:*} math=${mm#*:}
  sed -e "s/^name: $m/name: ${m}_$math/" "$specs/$m.yaml" > "$specs/${m}_$math.yaml"
  printf '\noptions: {cuda_math: %s}\n' "$math" >> "$specs/${m}_$math.yaml"
done
carries="gpu_carry1 gpu_carry2 gpu_carry3 gpu_carry4 gpu_carry5"
for carry in $carries; do
  rm -rf "$root/$carry"
  mkdir -p "$root/$carry"
  cp "$root/build/artifacts/runtime/aotrace_run" "$root/$carry/"
  strip "$root/$carry/aotrace_run"
done
build() {  # SPEC CARRY [OUT_NAME EXTRA_FLAGS...]
  local spec=$1 carry=$2 name=${3:-$(basename "$1" .yaml)}
  shift $(( $# < 3 ? $# : 3 ))
  "$aotrace" compile "$spec" -q --no-cache --cuda-arch "$archs" -o "$root/$carry/$name.aot" "$@"
}
build "$specs/bert_layer.yaml" gpu_carry1
build "$specs/gpt2_block.yaml" gpu_carry1
build "$specs/gemm.yaml" gpu_carry2
build "$specs/gemm.yaml" gpu_carry2 gemm_stages2 --cuda-gemm-stages 2
for t in f16:float16 bf16:bfloat16; do  # gemm.aot on f16 and bf16 tensors: their own mma, no option
  sed -e "s/^name: gemm/name: gemm_tensors_${t%%:*}/" -e "s/dtype: float32/dtype: ${t#*:}/g" "$specs/gemm.yaml" \
    > "$specs/gemm_tensors_${t%%:*}.yaml"
done
build "$specs/gemm_tf32.yaml" gpu_carry4
build "$specs/gemm_f16.yaml" gpu_carry4
build "$specs/gemm_bf16.yaml" gpu_carry4
build "$specs/gemm_tensors_f16.yaml" gpu_carry4
build "$specs/gemm_tensors_bf16.yaml" gpu_carry4
build "$specs/gemm_tf32.yaml" gpu_carry4 gemm_tf32_stages2 --cuda-gemm-stages 2
build "$specs/bert_layer.yaml" gpu_carry4 bert_layer_warp64 --cuda-warp-reduce-min 64
cat > "$specs/reductions.py" <<'PY'
import torch


def total(x):
    return x.sum(), x.amin()


def row_max(x):
    return x.amax(-1)


def topk(logits):
    return torch.topk(logits, 200)


# stable=True: ties (f32 normals over 50257 have some) in index order, as ours, for the selftest.
def sort(logits):
    return torch.sort(logits, descending=True, stable=True)


def top_p(logits):  # bench/models.py's top_p_sampling: a block sort, a block cumsum, a block scatter
    sorted_logits, order = torch.sort(logits, descending=False, stable=True)
    remove = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= 1 - 0.9
    remove = remove.scatter(1, order, remove)
    return torch.softmax(logits.masked_fill(remove, float("-inf")), dim=-1)
PY
printf 'version: 1\nname: reductions\nscript: reductions.py\ntargets: [cuda]\nentries:\n%s\n%s\n%s\n%s\n%s\n%s\n' \
  "  total: {call: total, inputs: {x: {dtype: float32, shape: [32, 1024]}}}" \
  "  row_max: {call: row_max, inputs: {x: {dtype: float32, shape: [256, 1024]}}}" \
  "  topk: {call: topk, inputs: {logits: {dtype: float32, shape: [1, 50257]}}}" \
  "  sort: {call: sort, inputs: {logits: {dtype: float32, shape: [4, 50257]}}}" \
  "  top_p: {call: top_p, inputs: {logits: {dtype: float32, shape: [4, 50257]}}}" \
  "  top_p_small: {call: top_p, inputs: {logits: {dtype: float32, shape: [2, 5000]}}}" > "$specs/reductions.yaml"
build "$specs/reductions.yaml" gpu_carry4
build "$specs/reductions.yaml" gpu_carry5 reductions_threads --cuda-block-row-min $((1 << 40))
cat > "$specs/reduce_total.py" <<'PY'
def total(x):
    return x.sum()


def absmax(x):
    return x.abs().amax()


def argmax(x):
    return x.argmax()
PY
printf 'version: 1\nname: reduce_total\nscript: reduce_total.py\ntargets: [cuda]\nentries:\n%s\n%s\n%s\n' \
  "  total: {call: total, inputs: {x: {dtype: float32, shape: [8192, 4096]}}}" \
  "  absmax: {call: absmax, inputs: {x: {dtype: float32, shape: [8192, 4096]}}}" \
  "  argmax: {call: argmax, inputs: {x: {dtype: float32, shape: [8192, 4096]}}}" > "$specs/reduce_total.yaml"
build "$specs/reduce_total.yaml" gpu_carry4
build "$specs/reduce_total.yaml" gpu_carry4 reduce_total_unsplit --cuda-split-reduce-chunk 1099511627776
cat > "$specs/bandwidth.py" <<'PY'
import torch


def axpy(x, y):
    return x * 2.0 + y


def gelu(x):
    return torch.nn.functional.gelu(x)
PY
printf 'version: 1\nname: bandwidth\nscript: bandwidth.py\ntargets: [cuda]\ndims:\n  rows: {min: 1, max: 8192}\nentries:\n%s\n%s\n' \
  "  axpy: {call: axpy, inputs: {x: {dtype: float32, shape: [rows, 4096]}, y: {dtype: float32, shape: [rows, 4096]}}}" \
  "  gelu: {call: gelu, inputs: {x: {dtype: float32, shape: [rows, 4096]}}}" > "$specs/bandwidth.yaml"
build "$specs/bandwidth.yaml" gpu_carry4
build "$specs/bandwidth.yaml" gpu_carry4 bandwidth_scalar --cuda-vector-elements 1
build "$specs/bert_layer_tf32.yaml" gpu_carry3
build "$specs/gpt2_block_tf32.yaml" gpu_carry3
sed -e 's/^targets:.*//' "$root/examples/mlp/mlp.yaml" > "$specs/mlp.yaml"
sed -i "s#^script: #script: $root/examples/mlp/#" "$specs/mlp.yaml"
echo "targets: [cuda]" >> "$specs/mlp.yaml"
build "$specs/mlp.yaml" gpu_carry2
build "$specs/resnet18.yaml" gpu_carry2
# The device tool carries at most 64 MiB: a carry with the tracked tree.
tree=$(cd "$root" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
for carry in $carries; do
  bytes=$(du -sb "$root/$carry" | cut -f1)
  echo "$carry: $((bytes / 1048576)) MiB (+ $((tree / 1048576)) MiB of tree)"
  if [ $((bytes + tree)) -gt $((64 * 1048576)) ]; then
    echo "error: $carry and the tree exceed the device tool's 64 MiB: move a bundle to another carry" >&2
    exit 1
  fi
done
