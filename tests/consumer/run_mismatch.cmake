# Installs the ebla build tree into a fresh prefix, changes the Kokkos that its eblaConfig.cmake
# says ebla was built with to a version that is nowhere, and checks that configuring the
# consumer project stops with an error naming that version and the one found instead.
#   -DEBLA_BUILD=<ebla build dir> -DWORK=<scratch dir> -DSOURCE=<consumer source dir>
#   -DKOKKOS_VERSION=<the version ebla was really built with> -DKOKKOS_DIR=<its config directory>
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${EBLA_BUILD}" --prefix "${WORK}/prefix"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
set(config "${WORK}/prefix/lib/cmake/ebla/eblaConfig.cmake")
if(NOT EXISTS "${config}")
  file(GLOB config "${WORK}/prefix/lib*/cmake/ebla/eblaConfig.cmake")
endif()
file(READ "${config}" text)
string(REGEX REPLACE "set\\(EBLA_BUILT_Kokkos_VERSION \"[^\"]*\"\\)" "set(EBLA_BUILT_Kokkos_VERSION \"0.0.7\")" changed "${text}")
string(REGEX REPLACE "set\\(EBLA_BUILT_Kokkos_DIR \"[^\"]*\"\\)" "set(EBLA_BUILT_Kokkos_DIR \"${WORK}/nowhere\")" changed "${changed}")
if(changed STREQUAL text)
  message(FATAL_ERROR "${config} does not record the Kokkos ebla was built with")
endif()
file(WRITE "${config}" "${changed}")
# Kokkos_DIR: the real Kokkos is in sight, but it is not the version the config asks for
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}/build" -DCMAKE_PREFIX_PATH=${WORK}/prefix
                        -DKokkos_DIR=${KOKKOS_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE "\n" " " all "${out}${err}")
string(REGEX REPLACE " +" " " all "${all}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the consumer configured against a Kokkos other than ebla's:\n${out}${err}")
endif()
string(REPLACE "." "\\." found "${KOKKOS_VERSION}")
if(NOT all MATCHES "ebla was built with Kokkos 0\\.0\\.7 .* but found (.*, )?Kokkos ${found} \\(")
  message(FATAL_ERROR "no error naming both versions (0.0.7, ${KOKKOS_VERSION}):\n${out}${err}")
endif()
message(STATUS "stopped as it should: built with Kokkos 0.0.7, found ${KOKKOS_VERSION}")
