# aotrace — set-up, build and test. `make run` and `make test` do everything on a fresh Debian 12.
BUILD ?= build
JOBS ?= 2
PY := /usr/bin/python3.11
# The Debian packages: tools/debian-packages.txt, one per line, with why each is needed.
DEB_PACKAGES := $(strip $(shell sed 's/\#.*//' tools/debian-packages.txt))

.PHONY: deps build build-cli test run clean bench bench-deps fuzz depcheck

# Installs only what is missing; quiet when everything is present.
deps:
	@missing=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(DEB_PACKAGES) 2>/dev/null | \
	  awk '$$NF=="installed"{print $$1}' | sort > /tmp/.aotrace-have; \
	  for p in $(DEB_PACKAGES); do grep -qx "$$p" /tmp/.aotrace-have || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Only what `make run` runs: the aotrace command (with the runtime it ships).
build-cli: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target aotrace

test: build
	# Builders must read torch call arguments by their schema names (embed/torch_schema.cpp).
	cd $(BUILD) && AOTRACE_STRICT_BINDING=1 ctest --output-on-failure -j $(JOBS)

run: build-cli
	$(PY) examples/run_examples.py --aotrace $(BUILD)/cli/aotrace

# Benchmarks (bench/, issues 6 and 14): the runtime's dispatch overhead (Google Benchmark), then
# every model of bench/models.yaml compiled and timed against torch eager and ONNX Runtime with
# THREADS threads each.
THREADS ?= $(shell nproc)
MIN_TIME ?= 1
ORT_VERSION := 1.20.1
ORT_DIR := $(BUILD)/ort
# ONNX Runtime's CPU build from the npm registry into the build tree (its install script only
# fetches GPU extras, so --ignore-scripts); npm from Debian when it is missing. A failure is not
# fatal: the bench then says why its ORT column is empty.
bench-deps:
	@command -v npm >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "make bench-deps: installing npm"; $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null; } || true
	@[ -f $(ORT_DIR)/node_modules/onnxruntime-node/package.json ] && \
	  grep -q '"version": "$(ORT_VERSION)"' $(ORT_DIR)/node_modules/onnxruntime-node/package.json || \
	  { mkdir -p $(ORT_DIR) && echo "make bench-deps: npm install onnxruntime-node@$(ORT_VERSION)" && \
	    npm install --prefix $(ORT_DIR) --ignore-scripts --no-audit --no-fund --loglevel=error \
	      onnxruntime-node@$(ORT_VERSION) >/dev/null; } || echo "make bench-deps: onnxruntime-node could not be installed"

bench: build bench-deps
	$(BUILD)/bench/dispatch_bench --benchmark_min_time=0.2
	$(PY) bench/run_bench.py \
	  --aotrace $(BUILD)/cli/aotrace --threads $(THREADS) --min-time $(MIN_TIME) --out $(BUILD)/bench-out \
	  --ort $(ORT_DIR) $$( [ -x $(BUILD)/bench/fma_peak ] && echo --fma-peak $(BUILD)/bench/fma_peak )
	$(PY) bench/dynamic_bench.py --aotrace $(BUILD)/cli/aotrace --threads $(THREADS) --out $(BUILD)/bench-dynamic

# libFuzzer targets (tests/fuzz) for FUZZ_SECONDS each; `make test` runs a 5-second pass.
FUZZ_SECONDS ?= 60
fuzz: build
	cd $(BUILD) && ctest -R fuzz_seed --output-on-failure
	@for t in bundle yaml; do echo "fuzz_$$t ($(FUZZ_SECONDS) s):"; \
	  tests/fuzz/run_fuzzer.sh $(BUILD)/tests/fuzz/fuzz_$$t $(BUILD)/tests/fuzz/corpus/$$t \
	    $(BUILD)/tests/fuzz/seeds/$$t $(FUZZ_SECONDS) || exit 1; done

# What CI runs (.ci/run): `make test run` with every file it opens under /usr recorded, then a
# check that each file's Debian package is one `make deps` installs (tools/depcheck.py; root).
# `make depcheck DEPCHECK_TARGETS="test run bench"` checks the benchmarks too.
DEPCHECK_TARGETS ?= test run
depcheck: deps
	@mkdir -p $(BUILD)
	tools/depcheck.py record $(BUILD)/depcheck-trace.txt -- $(MAKE) $(DEPCHECK_TARGETS)
	tools/depcheck.py check $(BUILD)/depcheck-trace.txt

clean:
	rm -rf $(BUILD)
