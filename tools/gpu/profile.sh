#!/bin/bash
# Per-kernel GPU times of a bundle's entry (issue 17): aotrace_run --repeat --profile on random
# inputs in GPU memory. Usage: tools/gpu/profile.sh CARRY_DIR MODEL INPUT SHAPE_AFTER_BATCH BATCH...
# e.g. tools/gpu/profile.sh gpu_carry1 bert_layer src 128,768 1 32
set -u
carry=$1 model=$2 input=$3 shape=$4
shift 4
for batch in "$@"; do
  python3 -c "import numpy as np; np.save('/tmp/in.npy', np.random.default_rng(0).standard_normal(($batch,$shape)).astype(np.float32))"
  echo "== $model batch $batch"
  timeout 120 "$carry/aotrace_run" "$carry/$model.aot" --input "$input=/tmp/in.npy" --device cuda --repeat 20 \
    --profile 12 --output-dir /tmp/profile_out 2>&1 | grep -v '^  /tmp'
done
