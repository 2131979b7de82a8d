# `cmake --install build --prefix P`: the compiler's CMake package.
#   P/bin/aotrace
#   P/lib/cmake/aotrace/           aotraceConfig.cmake: aotrace_add_bundle (aotrace_bundle.cmake)
#   P/lib/cmake/aotrace_runtime/   aotrace::runtime, aotrace::runtime_shared (artifacts/runtime)
#   P/include/aotrace/             aotrace_runtime.h, aotrace_c.h, aotrace_kernel_abi.h, npy.h
#   P/lib/libaotrace_runtime.{a,so}
# The installed aotrace still reads the runtime sources it ships in each bundle from this source
# tree, and the bundle schema header from this build tree (artifacts/CMakeLists.txt).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Keep the RUNPATH to libLLVM-16 (/usr/lib/llvm-16/lib), which is not on the loader's path.
set_target_properties(aotrace PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS aotrace RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(AOTRACE_INSTALL_EXE ${CMAKE_INSTALL_BINDIR}/aotrace)
set(_aotrace_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/aotrace)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/aotraceConfig.cmake.in ${CMAKE_BINARY_DIR}/aotraceConfig.cmake
  INSTALL_DESTINATION ${_aotrace_cmake_dir}
  PATH_VARS AOTRACE_INSTALL_EXE)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/aotraceConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/aotraceConfig.cmake ${CMAKE_BINARY_DIR}/aotraceConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/aotrace_bundle.cmake
        DESTINATION ${_aotrace_cmake_dir})
