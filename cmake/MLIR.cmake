# Finds Debian's LLVM/MLIR 22 and sets up TableGen and the shared libMLIR link.
# See ../shared/MLIR22-NOTES.md: link the shared libMLIR.so/libLLVM.so with
# mlir_target_link_libraries, never LINK_LIBS in add_mlir_* (that pulls the static .a files).
set(KOPT_LLVM_ROOT "/usr/lib/llvm-22" CACHE PATH "LLVM/MLIR 22 install prefix")
set(MLIR_LINK_MLIR_DYLIB ON CACHE BOOL "" FORCE)
set(LLVM_LINK_LLVM_DYLIB ON CACHE BOOL "" FORCE)
find_package(MLIR REQUIRED CONFIG HINTS ${KOPT_LLVM_ROOT}/lib/cmake/mlir)
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")
message(STATUS "Using LLVMConfig.cmake in: ${LLVM_DIR}")

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
