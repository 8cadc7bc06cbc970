# Checks of the self-contained build (KOPT_SELF_CONTAINED; label bundle), on the
# binaries of this build folder, through scripts/bundle.sh:
#   bundle.deps      no shared LLVM/MLIR/libstdc++/libgcc_s, no exported LLVM
#                    symbols, the glibc versions needed; every examples/*.mlir
#                    compiled with LLVM and libstdc++ hidden (a private mount
#                    namespace) and assembled by ptxas -arch=sm_90a
#   bundle.same-ptx  the same examples give byte-identical PTX and manifests to
#                    the normal build's kopt-opt (KOPT_REFERENCE_OPT, default
#                    <source>/build/bin/kopt-opt); skipped when it is missing
set(KOPT_REFERENCE_OPT "${KOPT_SOURCE_DIR}/build/bin/kopt-opt" CACHE FILEPATH
  "kopt-opt of a normal (shared libMLIR) build, to compare the bundle's PTX with")
add_test(NAME bundle.deps
  COMMAND ${KOPT_SOURCE_DIR}/scripts/bundle.sh --check-deps ${CMAKE_BINARY_DIR})
add_test(NAME bundle.same-ptx
  COMMAND ${KOPT_SOURCE_DIR}/scripts/bundle.sh --check-ptx ${CMAKE_BINARY_DIR})
set_tests_properties(bundle.deps bundle.same-ptx PROPERTIES
  LABELS bundle TIMEOUT 900
  ENVIRONMENT "KOPT_PTXAS=${KOPT_PTXAS};KOPT_REFERENCE_OPT=${KOPT_REFERENCE_OPT}")
set_tests_properties(bundle.same-ptx PROPERTIES SKIP_RETURN_CODE 77)
