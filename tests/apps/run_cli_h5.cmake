# Runs one ebla command line that writes an HDF5 file, then checks the file.
#   -DCMD="<exe>;<arg>;..."  -DRC=<expected exit code>  -DFILE=<the --output path>
#   [-DMATCH=<regex the combined stdout+stderr must match>]
#   [-DH5DUMP=<h5dump executable> -DH5MATCH=<regex its header listing must match>]
# Exit code 0: FILE must exist and be HDF5 (its 8-byte signature). Any other code: FILE
# must not exist (an existing one is removed first). Either way no FILE.tmp-* may remain.
file(REMOVE "${FILE}")
include(${CMAKE_CURRENT_LIST_DIR}/run_cli.cmake)  # runs CMD, checks RC and MATCH, sets `all`
file(GLOB leftovers "${FILE}.tmp-*")
if(leftovers)
  message(FATAL_ERROR "temporary files left behind: ${leftovers}")
endif()
if(NOT RC STREQUAL "0")
  if(EXISTS "${FILE}")
    message(FATAL_ERROR "${FILE} exists although the command failed")
  endif()
  return()
endif()
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE} was not written\n${all}")
endif()
file(READ "${FILE}" signature LIMIT 8 HEX)
if(NOT signature STREQUAL "894844460d0a1a0a")
  message(FATAL_ERROR "${FILE} is not an HDF5 file (starts with ${signature})")
endif()
if(H5DUMP AND DEFINED H5MATCH)
  execute_process(COMMAND ${H5DUMP} -H "${FILE}" RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT listing MATCHES "${H5MATCH}")
    message(FATAL_ERROR "h5dump -H ${FILE} (exit ${rc}) does not match '${H5MATCH}':\n${listing}${err}")
  endif()
endif()
