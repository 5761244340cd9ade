# Installs the ebla build tree into a fresh prefix, then builds a C and a Fortran program
# with make and pkg-config alone (pkgconfig/Makefile) and runs them against libebla.so.
#   -DEBLA_BUILD=<ebla build dir> -DWORK=<scratch dir> -DMAKEFILE=<Makefile>
#   -DC_SOURCE=<C program> -DF_SOURCE=<Fortran program> [-DEXAMPLE=<examples/drop_in_cg>]
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/build")
include(${CMAKE_CURRENT_LIST_DIR}/step.cmake)
step(${CMAKE_COMMAND} --install "${EBLA_BUILD}" --prefix "${WORK}/prefix")
file(GLOB pc "${WORK}/prefix/lib*/pkgconfig/ebla.pc")
get_filename_component(pcdir "${pc}" DIRECTORY)
get_filename_component(libdir "${pcdir}" DIRECTORY)
step(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
     make -C "${WORK}/build" -f "${MAKEFILE}" C_SOURCE=${C_SOURCE} F_SOURCE=${F_SOURCE})
# the programs find libebla.so (and its SONAME link) in the prefix only
step(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} "${WORK}/build/qdot_c")
step(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} "${WORK}/build/qdot_fortran")
# the C program needs libebla.so.0 (its SONAME)
step(readelf -d "${WORK}/build/qdot_c")
# the example of a CG whose dot product is ebla_dqdot, with its own Makefile
if(EXAMPLE)
  file(COPY "${EXAMPLE}/" DESTINATION "${WORK}/example")
  step(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} make -C "${WORK}/example")
  step(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} "${WORK}/example/cg" 20 20 10)
endif()
