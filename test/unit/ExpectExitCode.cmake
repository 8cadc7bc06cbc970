# cmake -DPROGRAM=... -DARG=... -DEXPECTED=N -P ExpectExitCode.cmake
# Runs PROGRAM ARG and fails unless its exit code is EXPECTED.
execute_process(COMMAND ${PROGRAM} ${ARG} RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECTED}")
  message(FATAL_ERROR "${PROGRAM} ${ARG}: exit code '${rc}', expected "
                      "${EXPECTED}\n${err}")
endif()
