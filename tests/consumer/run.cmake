# Installs the ebla build tree into a fresh prefix, then configures, builds and runs
# the consumer project against it with find_package(ebla).
#   -DEBLA_BUILD=<ebla build dir> -DWORK=<scratch dir> -DSOURCE=<consumer source dir>
#   [-DMPIEXEC=<mpiexec>: also runs the ebla::mpi consumer on 2 ranks]
file(REMOVE_RECURSE "${WORK}")
include(${CMAKE_CURRENT_LIST_DIR}/step.cmake)
step(${CMAKE_COMMAND} --install "${EBLA_BUILD}" --prefix "${WORK}/prefix")
step(${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}/build" -DCMAKE_PREFIX_PATH=${WORK}/prefix
     -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build "${WORK}/build")
step("${WORK}/build/consumer_cxx")
step("${WORK}/build/consumer_c")
step("${WORK}/build/readme_cxx")
step("${WORK}/build/readme_c")
step("${WORK}/build/docs_cxx")
if(MPIEXEC)
  step(${MPIEXEC} -n 2 --oversubscribe "${WORK}/build/consumer_mpi")
endif()
