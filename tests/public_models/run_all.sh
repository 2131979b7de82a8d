#!/bin/sh
# Compiles public models from their authors' code with aotrace and compares them with torch eager
# (tests/public_models/check.py). Not part of `make test`: it needs the authors' repositories,
# which CI cannot download. Usage:
#   tests/public_models/run_all.sh AOTRACE CHECKOUTS
# where CHECKOUTS holds git checkouts named nanoGPT, minGPT, annotated-transformer, examples
# (github.com/karpathy/nanoGPT, karpathy/minGPT, harvardnlp/annotated-transformer,
# pytorch/examples). Each model's driver (run.py: builds the model, seeds torch) and spec are here;
# the model code itself is copied from the checkout, unmodified, into a temporary folder.
set -eu
aotrace=$(realpath "$1") checkouts=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
status=0
model() {  # NAME INT_HIGH FILES...: checkout-relative paths, copied next to run.py (minGPT's into mingpt/)
  name=$1 high=$2; shift 2
  mkdir -p "$work/$name"
  cp "$here/$name/run.py" "$here/$name/spec.yaml" "$work/$name/"
  for f in "$@"; do
    dest="$work/$name/$(basename "$f")"
    case $f in *mingpt/*) mkdir -p "$work/$name/mingpt"; dest="$work/$name/mingpt/$(basename "$f")";; esac
    cp "$checkouts/$f" "$dest"
  done
  echo "== $name"
  (cd "$work/$name" && /usr/bin/python3.11 "$here/check.py" "$aotrace" spec.yaml "$high" 2>&1 | grep -v '^  ') || status=1
}
model nanogpt 97 nanoGPT/model.py
mkdir -p "$work/mingpt/mingpt"; touch "$work/mingpt/mingpt/__init__.py"
model mingpt 97 minGPT/mingpt/model.py minGPT/mingpt/utils.py
model annotated_transformer 11 annotated-transformer/the_annotated_transformer.py
model super_resolution 2 examples/super_resolution/model.py
model fast_neural_style 2 examples/fast_neural_style/neural_style/transformer_net.py
model word_language_model 50 examples/word_language_model/model.py
model vae 2 examples/vae/main.py
rm -rf "$work"
exit $status
