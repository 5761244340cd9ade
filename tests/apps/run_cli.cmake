# Runs one ebla command line and checks its exit code and output.
#   -DCMD="<exe>;<arg>;..."  -DRC=<expected exit code>
#   -DMATCH=<regex the combined stdout+stderr must match>  [-DNOMATCH=<regex it must not>]
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}\n${all}")
endif()
if(DEFINED MATCH AND NOT all MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}':\n${all}")
endif()
if(DEFINED NOMATCH AND all MATCHES "${NOMATCH}")
  message(FATAL_ERROR "output matches '${NOMATCH}':\n${all}")
endif()
