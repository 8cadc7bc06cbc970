# Finds Debian's LLVM/MLIR 22 and sets up TableGen and the link with MLIR.
# See ../shared/MLIR22-NOTES.md: link MLIR with mlir_target_link_libraries, never
# LINK_LIBS in add_mlir_* (that pulls the static .a files into the shared build);
# cmake/KoptLinkCompiler.cmake says what the binaries link.
#
# By default the shared libMLIR.so/libLLVM.so. With KOPT_SELF_CONTAINED the
# static libraries: Debian's MLIR targets name the shared `LLVM` as their LLVM
# dependency (its LLVM was built as one library), so below that name is
# replaced by LLVM's static component libraries.
set(KOPT_LLVM_ROOT "/usr/lib/llvm-22" CACHE PATH "LLVM/MLIR 22 install prefix")
if(KOPT_SELF_CONTAINED)
  set(kopt_dylib OFF)
else()
  set(kopt_dylib ON)
endif()
set(MLIR_LINK_MLIR_DYLIB ${kopt_dylib} CACHE BOOL "" FORCE)
set(LLVM_LINK_LLVM_DYLIB ${kopt_dylib} CACHE BOOL "" FORCE)
find_package(MLIR REQUIRED CONFIG HINTS ${KOPT_LLVM_ROOT}/lib/cmake/mlir)
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")
message(STATUS "Using LLVMConfig.cmake in: ${LLVM_DIR}")

if(KOPT_SELF_CONTAINED)
  # LLVMConfig.cmake sets LLVM_LINK_LLVM_DYLIB ON (a normal variable, which
  # hides the cache entry): add_llvm_executable's LLVM_LINK_COMPONENTS then
  # link the static component libraries instead.
  set(LLVM_LINK_LLVM_DYLIB OFF)
  # The LLVM components MLIR's libraries use (LINK_COMPONENTS in upstream's
  # mlir/lib): code generation for NVPTX, the optimization pipeline, bitcode
  # (libdevice) and linking, OpenMP's IR builder (used by the LLVM IR export).
  # Their own dependencies come with them (LLVMExports.cmake); only referenced
  # archive members end up in a binary.
  llvm_map_components_to_libnames(KOPT_LLVM_STATIC_LIBS
    NVPTXCodeGen NVPTXDesc NVPTXInfo Passes ipo Linker IRReader BitReader
    BitWriter FrontendOpenMP TransformUtils Analysis Target TargetParser MC Core
    Support)
  set(replaced 0)
  foreach(t IN LISTS MLIR_EXPORTED_TARGETS)
    if(NOT TARGET ${t})
      continue()
    endif()
    get_target_property(type ${t} TYPE)
    if(NOT type STREQUAL "STATIC_LIBRARY")
      continue()
    endif()
    get_target_property(deps ${t} INTERFACE_LINK_LIBRARIES)
    if(NOT deps)
      continue()
    endif()
    set(fixed)
    set(changed OFF)
    foreach(d IN LISTS deps)
      if(d STREQUAL "LLVM" OR d STREQUAL "$<LINK_ONLY:LLVM>")
        list(APPEND fixed ${KOPT_LLVM_STATIC_LIBS})
        set(changed ON)
      else()
        list(APPEND fixed "${d}")
      endif()
    endforeach()
    if(changed)
      set_target_properties(${t} PROPERTIES INTERFACE_LINK_LIBRARIES "${fixed}")
      math(EXPR replaced "${replaced} + 1")
    endif()
  endforeach()
  # LLVMSupport names shared libraries of the build machine: Z3 (the static
  # analyzer's solver interface, never referenced by kopt: left out), zlib and
  # zstd (compression of object files: the MC layer references them, kopt
  # never calls them). Take their static libraries (zlib1g-dev,
  # libzstd-dev); without libzstd.a the binaries need the shared libzstd.so.1
  # on the host (present on every Debian and Ubuntu: dpkg uses it).
  find_library(KOPT_ZLIB_STATIC NAMES libz.a)
  find_library(KOPT_ZSTD_STATIC NAMES libzstd.a)
  if(NOT KOPT_ZSTD_STATIC)
    find_library(KOPT_ZSTD_SHARED NAMES libzstd.so.1 zstd)
    message(STATUS "kopt self-contained: libzstd.a not found (install "
                   "libzstd-dev); the binaries will need ${KOPT_ZSTD_SHARED}")
  endif()
  get_target_property(deps LLVMSupport INTERFACE_LINK_LIBRARIES)
  set(fixed)
  foreach(d IN LISTS deps)
    if(d MATCHES "z3")
      continue()
    elseif(d MATCHES "zstd")
      if(KOPT_ZSTD_STATIC)
        list(APPEND fixed ${KOPT_ZSTD_STATIC})
      elseif(KOPT_ZSTD_SHARED)
        list(APPEND fixed ${KOPT_ZSTD_SHARED})
      endif()
    elseif(d STREQUAL "ZLIB::ZLIB" AND KOPT_ZLIB_STATIC)
      list(APPEND fixed ${KOPT_ZLIB_STATIC})
    else()
      list(APPEND fixed "${d}")
    endif()
  endforeach()
  set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${fixed}")
  message(STATUS "kopt self-contained: static LLVM/MLIR libraries (the shared "
                 "LLVM replaced in ${replaced} MLIR targets)")
endif()

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
include_directories(${KOPT_SOURCE_DIR}/include ${KOPT_BINARY_DIR}/include)
link_directories(${LLVM_BUILD_LIBRARY_DIR})
separate_arguments(KOPT_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${KOPT_LLVM_DEFINITIONS})
