# aotrace_add_bundle: `aotrace compile` as a build step of a CMake project.
#
#   aotrace_add_bundle(NAME SPEC spec.yaml [OUTPUT dir] [TARGETS cpu ...] [CPU name] [TRIPLE t]
#                      [OPTIONS arg ...] [EXCLUDE_FROM_ALL])
#
# defines a custom command that runs
#   aotrace compile SPEC -o OUTPUT --depfile OUTPUT.d --quiet [--target T,...] [--cpu C] [--triple T] OPTIONS...
# with OUTPUT/bundle.fb as its output and the depfile aotrace writes (the spec, the script, every
# user module it imported and every file it opened) as its DEPFILE, so that editing any of them,
# or a new aotrace executable, reruns the compile and nothing else does. And a target NAME that
# builds the bundle (part of `all` unless EXCLUDE_FROM_ALL); add_dependencies(app NAME) orders an
# application after it.
#   SPEC     the shape-profile YAML, relative to the current source folder.
#   OUTPUT   the bundle folder, relative to the current binary folder; default NAME.aot there.
#   TARGETS  --target (cpu, cuda); default: the spec's `targets:`.
#   CPU      --cpu (one CPU, e.g. x86-64-v3 or native); default: the baseline and the host's level.
#   TRIPLE   --triple (e.g. aarch64-linux-gnu).
#   OPTIONS  further `aotrace compile` arguments (--no-cache, --jobs 2, --report r.json, ...).
# The bundle folder is in the target's AOTRACE_BUNDLE_DIR property and in ${NAME}_BUNDLE_DIR:
#   target_compile_definitions(app PRIVATE MODEL_BUNDLE="$<TARGET_PROPERTY:NAME,AOTRACE_BUNDLE_DIR>")
#
# The aotrace command: AOTRACE_EXECUTABLE (find_package(aotrace) sets it to the installed one;
# from a build tree pass -DAOTRACE_EXECUTABLE=<build>/cli/aotrace and include this file), else the
# `aotrace` target of the project (inside aotrace itself), else `aotrace` on PATH.
#
# Needs CMake 3.20 (DEPFILE with the Ninja and Makefile generators); Debian 12 has 3.25.
include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "aotrace_add_bundle needs CMake 3.20 or newer (DEPFILE support); this is ${CMAKE_VERSION}")
endif()

# Functions keep the policies in force where they are defined: depfile paths are rewritten for
# Ninja (CMP0116) whatever the calling project's cmake_minimum_required says.
cmake_policy(PUSH)
cmake_policy(SET CMP0116 NEW)

function(aotrace_add_bundle name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "EXCLUDE_FROM_ALL" "SPEC;OUTPUT;CPU;TRIPLE" "TARGETS;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotrace_add_bundle(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SPEC)
    message(FATAL_ERROR "aotrace_add_bundle(${name}): SPEC spec.yaml is required")
  endif()
  get_filename_component(spec "${arg_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${spec}")
    message(FATAL_ERROR "aotrace_add_bundle(${name}): SPEC ${spec} does not exist")
  endif()
  if(NOT arg_OUTPUT)
    set(arg_OUTPUT "${name}.aot")
  endif()
  get_filename_component(out "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  if(AOTRACE_EXECUTABLE)
    set(exe "${AOTRACE_EXECUTABLE}")
    set(exe_dep "${AOTRACE_EXECUTABLE}")
  elseif(TARGET aotrace)
    set(exe "$<TARGET_FILE:aotrace>")
    set(exe_dep aotrace)
  else()
    find_program(AOTRACE_EXECUTABLE aotrace)
    if(NOT AOTRACE_EXECUTABLE)
      message(FATAL_ERROR "aotrace_add_bundle(${name}): no aotrace command: use find_package(aotrace), "
                          "or set AOTRACE_EXECUTABLE to <aotrace build>/cli/aotrace")
    endif()
    set(exe "${AOTRACE_EXECUTABLE}")
    set(exe_dep "${AOTRACE_EXECUTABLE}")
  endif()

  set(cmd "${exe}" compile "${spec}" -o "${out}" --depfile "${out}.d" --quiet)
  if(arg_TARGETS)
    list(JOIN arg_TARGETS "," targets)
    list(APPEND cmd --target "${targets}")
  endif()
  if(arg_CPU)
    list(APPEND cmd --cpu "${arg_CPU}")
  endif()
  if(arg_TRIPLE)
    list(APPEND cmd --triple "${arg_TRIPLE}")
  endif()
  list(APPEND cmd ${arg_OPTIONS})

  # bundle.fb is written last and is the depfile's target (README, "Build integration").
  file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${out}")
  add_custom_command(
    OUTPUT "${out}/bundle.fb"
    COMMAND ${cmd}
    DEPENDS "${spec}" ${exe_dep}
    DEPFILE "${out}.d"
    COMMENT "aotrace: compiling bundle ${name} (${arg_SPEC}) -> ${shown}"
    VERBATIM)
  set(all ALL)
  if(arg_EXCLUDE_FROM_ALL)
    set(all "")
  endif()
  add_custom_target(${name} ${all} DEPENDS "${out}/bundle.fb")
  set_target_properties(${name} PROPERTIES AOTRACE_BUNDLE_DIR "${out}" AOTRACE_SPEC "${spec}")
  set(${name}_BUNDLE_DIR "${out}" PARENT_SCOPE)
endfunction()

cmake_policy(POP)
