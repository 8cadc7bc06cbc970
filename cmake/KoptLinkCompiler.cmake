# How kopt's binaries link the compiler (LLVM/MLIR 22), in one place.
#
#   kopt_link_compiler(TARGET)        links the kopt compiler libraries and the
#                                     upstream MLIR libraries that kopt's
#                                     registration needs into TARGET (an
#                                     executable or a SHARED library); every
#                                     target that links the compiler calls it.
#   kopt_link_self_contained(TARGET)  with KOPT_SELF_CONTAINED, the link options
#                                     of a binary that travels to a host without
#                                     LLVM; nothing otherwise. kopt_link_compiler
#                                     calls it; kopt-space and kopt-run (which do
#                                     not link the compiler) call it themselves.
#
# Two modes (the top-level option KOPT_SELF_CONTAINED; cmake/MLIR.cmake finds
# the libraries accordingly):
#   OFF (default, for development): the shared libMLIR.so and libLLVM.so of
#       Debian's packages; links take seconds. ../shared/MLIR22-NOTES.md.
#   ON: the static libraries of llvm-22-dev and libmlir-22-dev
#       (/usr/lib/llvm-22/lib/*.a), only the objects that are referenced, with
#       libstdc++ and libgcc linked statically, unused sections dropped and the
#       result stripped: the binaries need nothing but glibc (scripts/bundle.sh
#       packs them for a GPU host). A shared library (the C API's libkopt.so)
#       keeps the symbols of the static libraries it contains local
#       (--exclude-libs), so that it cannot clash with another LLVM or
#       libstdc++ in the same process (PyTorch, Triton).

# The upstream MLIR libraries of what kopt registers (registerCompilerDialects
# in lib/Pipeline/Compile.cpp, registerCompilerPasses in tools/kopt-opt):
# dialects, their external interface models and ConvertToLLVM extensions, the
# upstream passes of the kopt-to-ptx pipeline, the LLVM IR translations and
# the NVVM target. The kopt libraries bring their own MLIR dependencies. Keep this
# list in step with the registration: a missing library is an undefined
# reference at link time in the self-contained build.
set(KOPT_COMPILER_MLIR_LIBS
  MLIROptLib
  # Dialects and their interface models.
  MLIRAffineDialect MLIRArithDialect MLIRArithValueBoundsOpInterfaceImpl
  MLIRArithTransforms MLIRBufferizationDialect MLIRBufferizationTransforms
  MLIRCastInterfaces MLIRControlFlowDialect MLIRControlFlowTransforms
  MLIRFuncDialect MLIRFuncInlinerExtension MLIRGPUDialect MLIRGPUTransforms
  MLIRLLVMDialect MLIRLLVMIRTransforms MLIRLinalgDialect
  MLIRLinalgTransforms MLIRMathDialect MLIRMemRefDialect MLIRMemRefTransforms
  MLIRNVGPUDialect MLIRNVVMDialect MLIRSCFDialect MLIRSCFTransforms
  MLIRTensorDialect MLIRTensorInferTypeOpInterfaceImpl
  MLIRTensorTilingInterfaceImpl MLIRTensorTransforms MLIRUBDialect
  MLIRVectorDialect MLIRVectorTransforms
  # ConvertToLLVM interfaces and the conversion passes of the pipeline.
  MLIRArithToLLVM MLIRControlFlowToLLVM MLIRFuncToLLVM MLIRGPUToGPURuntimeTransforms
  MLIRGPUToNVVMTransforms MLIRMathToLLVM MLIRMemRefToLLVM
  MLIRNVGPUToNVVM MLIRNVVMToLLVM MLIRReconcileUnrealizedCasts
  MLIRSCFToControlFlow MLIRUBToLLVM MLIRVectorToLLVM
  # Generic passes (canonicalize, cse, ...), translation to LLVM IR, PTX.
  MLIRTransforms MLIRBuiltinToLLVMIRTranslation MLIRGPUToLLVMIRTranslation
  MLIRLLVMToLLVMIRTranslation MLIRNVVMToLLVMIRTranslation MLIRNVVMTarget)

# The kopt libraries of the compiler, outermost first.
set(KOPT_COMPILER_LIBS KoptPipeline KoptPasses KoptKernelBuilders KoptTarget
  KoptDialect)

function(kopt_link_self_contained target)
  if(NOT KOPT_SELF_CONTAINED)
    return()
  endif()
  get_target_property(type ${target} TYPE)
  # One section per function and object, so that --gc-sections can drop what
  # is not referenced. LLVM's and MLIR's static libraries and kopt's compiler
  # code have them already (HandleLLVMOptions adds them to CMAKE_CXX_FLAGS);
  # this covers targets defined before that (kopt-run).
  if(NOT CMAKE_CXX_FLAGS MATCHES "-ffunction-sections")
    target_compile_options(${target} PRIVATE -ffunction-sections -fdata-sections)
  endif()
  target_link_options(${target} PRIVATE
    -static-libstdc++ -static-libgcc
    -Wl,--gc-sections
    # Drop the shared libraries LLVMSupport names (zlib, zstd, z3) when no
    # object that is linked uses them.
    -Wl,--as-needed
    -Wl,--strip-all)
  if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY")
    target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL)
  endif()
  # No run path into /usr/lib/llvm-22 (add_llvm_executable sets one): the
  # binary needs no shared library of LLVM.
  set_target_properties(${target} PROPERTIES
    SKIP_BUILD_RPATH ON BUILD_WITH_INSTALL_RPATH OFF INSTALL_RPATH "")
endfunction()

function(kopt_link_compiler target)
  target_link_libraries(${target} PRIVATE ${KOPT_COMPILER_LIBS})
  mlir_target_link_libraries(${target} PRIVATE ${KOPT_COMPILER_MLIR_LIBS})
  kopt_link_self_contained(${target})
endfunction()
