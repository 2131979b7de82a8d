# cmake -DROUTE=installed|build_tree -DWORK=dir -DAOTRACE_SOURCE_DIR=.. -DAOTRACE_BUILD_DIR=..
#       -DAOTRACE_EXECUTABLE=.. -DGENERATOR=.. -DMAKE_PROGRAM=.. -DCXX_COMPILER=.. -P cmake_app_test.cmake
# Builds and runs examples/cmake_app against a copy of examples/mlp in WORK (see CMakeLists.txt).
cmake_minimum_required(VERSION 3.20)
set(compile_line "aotrace: compiling bundle mlp_bundle")

# Runs a command; stops the test with its output when it fails. The output is in `out`.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE o)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}): ${ARGN}\n${o}")
  endif()
  set(out "${o}" PARENT_SCOPE)
endfunction()

function(expect_in what needle haystack)
  string(FIND "${haystack}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${needle}' in:\n${haystack}")
  endif()
endfunction()

function(expect_not_in what needle haystack)
  string(FIND "${haystack}" "${needle}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${what}: did not expect '${needle}' in:\n${haystack}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/mlp)
file(COPY ${AOTRACE_SOURCE_DIR}/examples/mlp/mlp.py ${AOTRACE_SOURCE_DIR}/examples/mlp/mlp.yaml
     DESTINATION ${WORK}/mlp)
set(build ${WORK}/build)
set(configure ${CMAKE_COMMAND} -S ${AOTRACE_SOURCE_DIR}/examples/cmake_app -B ${build}
    -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DMLP_SPEC=${WORK}/mlp/mlp.yaml)
if(ROUTE STREQUAL "installed")
  step("cmake --install" ${CMAKE_COMMAND} --install ${AOTRACE_BUILD_DIR} --prefix ${WORK}/prefix)
  step("configure against the install" ${configure} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  expect_in("configure against the install" "compiled by ${WORK}/prefix/bin/aotrace" "${out}")
else()
  step("configure against the build tree" ${configure} -DAOTRACE_SOURCE_DIR=${AOTRACE_SOURCE_DIR}
       -DAOTRACE_EXECUTABLE=${AOTRACE_EXECUTABLE})
  expect_in("configure against the build tree" "compiled by ${AOTRACE_EXECUTABLE}" "${out}")
endif()

step("build" ${CMAKE_COMMAND} --build ${build} -j 1)
expect_in("first build" "${compile_line}" "${out}")
step("cmake_app" ${build}/cmake_app)
expect_in("cmake_app" "output [8, 10]" "${out}")
expect_in("cmake_app" "selftest: 3 golden pair(s) ok" "${out}")
expect_in("cmake_app" "cmake_app ok" "${out}")
step("no-op build" ${CMAKE_COMMAND} --build ${build} -j 1)
expect_not_in("a build with nothing changed" "${compile_line}" "${out}")
if(NOT ROUTE STREQUAL "installed")
  return()
endif()

# An edit to the script reruns the compile (through the depfile); the bundle is rewritten.
file(TIMESTAMP ${build}/mlp.aot/bundle.fb before "%s")
file(READ ${WORK}/mlp/mlp.py script)
string(REPLACE "torch.manual_seed(0)" "torch.manual_seed(1)" script "${script}")
file(WRITE ${WORK}/mlp/mlp.py "${script}")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1)
step("build after editing mlp.py" ${CMAKE_COMMAND} --build ${build} -j 1)
expect_in("a build after editing mlp.py" "${compile_line}" "${out}")
file(TIMESTAMP ${build}/mlp.aot/bundle.fb after "%s")
if(after STREQUAL before)
  message(FATAL_ERROR "mlp.aot/bundle.fb was not rewritten after editing mlp.py")
endif()
step("cmake_app after the edit" ${build}/cmake_app)
expect_in("cmake_app after the edit" "cmake_app ok" "${out}")
step("no-op build after the edit" ${CMAKE_COMMAND} --build ${build} -j 1)
expect_not_in("a second build after the edit" "${compile_line}" "${out}")

# So does an edit to the spec.
file(APPEND ${WORK}/mlp/mlp.yaml "# edited\n")
step("build after editing mlp.yaml" ${CMAKE_COMMAND} --build ${build} -j 1)
expect_in("a build after editing mlp.yaml" "${compile_line}" "${out}")

# The prefix holds a copy of the compiler (over 100 MB with debug info): not kept.
file(REMOVE_RECURSE ${WORK}/prefix)
