# Runs one ebla command line and checks its exit code and its stderr alone.
#   -DCMD="<exe>;<arg>;..."  -DRC=<expected exit code>
#   -DMATCH=<regex stderr must match>  -DNOMATCH=<regex stdout must not match>
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}\n${out}${err}")
endif()
if(NOT err MATCHES "${MATCH}")
  message(FATAL_ERROR "stderr does not match '${MATCH}':\n${err}")
endif()
if(out MATCHES "${NOMATCH}")
  message(FATAL_ERROR "stdout matches '${NOMATCH}':\n${out}")
endif()
