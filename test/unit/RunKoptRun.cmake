# Runs kopt-run and checks its exit code, its stderr and fields of its JSON
# report. Used by the fake-driver tests of CMakeLists.txt.
#   cmake -DPROGRAM=kopt-run -DMANIFEST=m.json -DOUT=report.json
#         -DEXPECTED=N [-DARGS="a;b"] [-DSTDERR_REGEX=re]
#         [-DCHECKS="path.to.field=value|..."] -P RunKoptRun.cmake
# A CHECKS path is dot-separated (array indices are numbers); booleans read
# as ON/OFF. "path?" only checks that the field exists.
string(REPLACE " " ";" args "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${MANIFEST} ${args} -o ${OUT}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
message("${err}")
if(NOT rc STREQUAL "${EXPECTED}")
  message(FATAL_ERROR "exit code '${rc}', expected ${EXPECTED}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}'")
endif()
file(READ ${OUT} report)
string(REPLACE "|" ";" checks "${CHECKS}")
foreach(check IN LISTS checks)
  if(check MATCHES "^(.*)\\?$")
    string(REPLACE "." ";" path "${CMAKE_MATCH_1}")
    string(JSON value ERROR_VARIABLE jerr GET "${report}" ${path})
    if(jerr)
      message(FATAL_ERROR "report field ${CMAKE_MATCH_1} missing: ${jerr}")
    endif()
    continue()
  endif()
  if(NOT check MATCHES "^([^=]*)=(.*)$")
    message(FATAL_ERROR "bad check '${check}'")
  endif()
  set(field "${CMAKE_MATCH_1}")
  set(want "${CMAKE_MATCH_2}")
  string(REPLACE "." ";" path "${field}")
  string(JSON value ERROR_VARIABLE jerr GET "${report}" ${path})
  if(jerr)
    message(FATAL_ERROR "report field ${field}: ${jerr}")
  endif()
  if(NOT value MATCHES "^${want}$")
    message(FATAL_ERROR "report field ${field} is '${value}', "
                        "expected '${want}'")
  endif()
endforeach()
