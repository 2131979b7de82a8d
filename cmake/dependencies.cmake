# What the build and the tests need from the system, checked when CMake configures: a missing
# one stops here, naming the Debian package that provides it and the make target that installs
# it, instead of failing minutes into the build or the tests. tools/debian-packages.txt is the
# list `make deps` installs; tools/depcheck.py checks that it covers what a run really opens.
#
# Optional parts can be turned off instead of installed:
#   -DAOTRACE_FUZZERS=OFF       the libFuzzer targets (clang-16, libclang-rt-16-dev)
#   -DAOTRACE_CROSS_TESTS=OFF   the aarch64 cross test (g++-aarch64-linux-gnu, qemu-user)

option(AOTRACE_FUZZERS "build the libFuzzer targets of tests/fuzz (needs clang-16 and libclang-rt-16-dev)" ON)
option(AOTRACE_CROSS_TESTS "test aarch64 bundles under qemu (needs g++-aarch64-linux-gnu and qemu-user)" ON)

# Stops configuring: WHAT is missing, PACKAGE provides it, WHO needs it, OPTION (if any) skips it.
# Each line is indented so that CMake prints it as it is, unwrapped.
function(aot_missing what package who)
  string(CONCAT msg "  ${what} was not found (needed by ${who}).\n"
         "  Install Debian's ${package}: `make deps` installs it (or: sudo apt-get install ${package}).")
  if(ARGC GREATER 3)
    string(APPEND msg "\n  Or configure with -D${ARGV3}=OFF to build without it.")
  endif()
  message(FATAL_ERROR "${msg}")
endfunction()

# find_program that stops with aot_missing when PROGRAM is not on PATH.
function(aot_require_program var program package who)
  find_program(${var} ${program})
  if(NOT ${var})
    aot_missing("program ${program}" ${package} "${who}" ${ARGN})
  endif()
endfunction()

# find_package that stops with aot_missing when the package's CMake files are not there.
macro(aot_require_package name package who)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    aot_missing("CMake package ${name}" ${package} "${who}")
  endif()
endmacro()

# --- Always needed ---------------------------------------------------------------------------
# Debian's CPython 3.11 only (a pyenv python3 without torch may be first on PATH).
set(Python3_EXECUTABLE /usr/bin/python3.11 CACHE FILEPATH "" FORCE)
find_package(Python3 3.11 EXACT QUIET COMPONENTS Interpreter Development.Embed)
if(NOT Python3_Interpreter_FOUND OR NOT Python3_Development.Embed_FOUND)
  aot_missing("CPython 3.11 with its embedding library (/usr/bin/python3.11, libpython3.11)"
              libpython3.11-dev "embed/ (the interpreter aotrace embeds)")
endif()
# torch eager is what the tests compare with, and the user's scripts import it inside aotrace.
foreach(module_package numpy:python3-numpy torch:python3-torch torchvision:python3-torchvision)
  string(REPLACE ":" ";" pair ${module_package})
  list(GET pair 0 module)
  list(GET pair 1 package)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import ${module}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    aot_missing("Python module ${module} (for ${Python3_EXECUTABLE})" ${package}
                "capture and the tests against torch eager")
  endif()
endforeach()

aot_require_package(LLVM llvm-16-dev "lowering/ (LLVM 16)" 16 CONFIG
                    PATHS /usr/lib/llvm-16/lib/cmake/llvm NO_DEFAULT_PATH)
aot_require_package(yaml-cpp libyaml-cpp-dev "shape_profiles/")
aot_require_package(FlatBuffers libflatbuffers-dev "artifacts/ (bundle.fb)")
aot_require_package(GTest libgtest-dev "the tests")
aot_require_package(benchmark libbenchmark-dev "bench/dispatch_bench (`make bench`)")
find_package(CLI11 CONFIG QUIET)
find_path(AOT_CLI11_HEADER CLI/CLI.hpp)
if(NOT AOT_CLI11_HEADER)
  aot_missing("header CLI/CLI.hpp" libcli11-dev "cli/")
endif()
find_path(AOT_XXHASH_HEADER xxhash.h)
find_library(AOT_XXHASH_LIBRARY xxhash)
if(NOT AOT_XXHASH_HEADER OR NOT AOT_XXHASH_LIBRARY)
  aot_missing("xxHash (xxhash.h, libxxhash)" libxxhash-dev "artifacts/ (file hashes)")
endif()
find_path(AOT_JSON_HEADER nlohmann/json.hpp)
if(NOT AOT_JSON_HEADER)
  aot_missing("header nlohmann/json.hpp" nlohmann-json3-dev "the compiler's reports")
endif()
aot_require_program(FLATC flatc flatbuffers-compiler "artifacts/ (bundle schema)")
aot_require_program(LD_LLD ld.lld-16 lld-16 "aotrace compile (links the kernels)")

# --- Optional: the fuzzers -------------------------------------------------------------------
if(AOTRACE_FUZZERS)
  aot_require_program(AOT_CLANGXX_16 clang++-16 clang-16 "the fuzzers (tests/fuzz)" AOTRACE_FUZZERS)
  # The sanitizer and libFuzzer runtimes come in another package than clang itself: link a
  # one-line fuzzer now rather than fail at the end of a long build.
  set(probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/aot_fuzzer_probe)
  file(WRITE ${probe_dir}/probe.cpp
       "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(
    COMMAND ${AOT_CLANGXX_16} -fsanitize=fuzzer,address ${probe_dir}/probe.cpp -o ${probe_dir}/probe
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REGEX MATCH "[^ \n]*libclang_rt[^ \n:]*" runtime "${out}")
    aot_missing("clang-16's sanitizer runtime (${runtime})" libclang-rt-16-dev
                "the fuzzers (clang++-16 -fsanitize=fuzzer,address)" AOTRACE_FUZZERS)
  endif()
endif()

# --- Optional: aarch64 under qemu ------------------------------------------------------------
if(AOTRACE_CROSS_TESTS)
  aot_require_program(AOT_CROSS_CXX aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
                      "cross_aarch64_tests (cross-builds a bundle's runtime)" AOTRACE_CROSS_TESTS)
  aot_require_program(AOT_QEMU_AARCH64 qemu-aarch64 qemu-user
                      "cross_aarch64_tests (runs the aarch64 runtime)" AOTRACE_CROSS_TESTS)
endif()
