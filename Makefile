# aotrace — set-up, build and test. `make run` and `make test` do everything on a fresh Debian 12.
BUILD ?= build
JOBS ?= 2
PY := /usr/bin/python3.11
# qemu-user and g++-aarch64-linux-gnu: cross_aarch64_tests run --triple aarch64-linux-gnu bundles.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git \
  python3.11 python3.11-dev libpython3.11-dev python3-numpy python3-torch python3-torchvision \
  llvm-16-dev lld-16 clang-16 libcli11-dev libyaml-cpp-dev libflatbuffers-dev flatbuffers-compiler \
  libxxhash-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libopenblas0-pthread \
  zlib1g-dev libzstd-dev libedit-dev libffi-dev libtinfo-dev libxml2-dev \
  qemu-user g++-aarch64-linux-gnu

.PHONY: deps build test run clean bench fuzz

# Installs only what is missing; quiet when everything is present.
deps:
	@missing=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(DEB_PACKAGES) 2>/dev/null | \
	  awk '$$NF=="installed"{print $$1}' | sort > /tmp/.aotrace-have; \
	  for p in $(DEB_PACKAGES); do grep -qx "$$p" /tmp/.aotrace-have || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

run: build
	$(PY) examples/run_examples.py --aotrace $(BUILD)/cli/aotrace

# Benchmarks (bench/, issue 6): the runtime's dispatch overhead (Google Benchmark), then every
# model of bench/models.yaml compiled and timed against torch eager with THREADS threads each.
THREADS ?= $(shell nproc)
MIN_TIME ?= 1
bench: build
	$(BUILD)/bench/dispatch_bench --benchmark_min_time=0.2
	$(PY) bench/run_bench.py \
	  --aotrace $(BUILD)/cli/aotrace --threads $(THREADS) --min-time $(MIN_TIME) --out $(BUILD)/bench-out

# libFuzzer targets (tests/fuzz) for FUZZ_SECONDS each; `make test` runs a 5-second pass.
FUZZ_SECONDS ?= 60
fuzz: build
	cd $(BUILD) && ctest -R fuzz_seed --output-on-failure
	@for t in bundle yaml; do echo "fuzz_$$t ($(FUZZ_SECONDS) s):"; \
	  tests/fuzz/run_fuzzer.sh $(BUILD)/tests/fuzz/fuzz_$$t $(BUILD)/tests/fuzz/corpus/$$t \
	    $(BUILD)/tests/fuzz/seeds/$$t $(FUZZ_SECONDS) || exit 1; done

clean:
	rm -rf $(BUILD)
