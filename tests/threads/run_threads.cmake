# cmake -DPROGRAM=test_threads [-DLAUNCHER="mpiexec -n 2 ..."] -P run_threads.cmake
# Runs PROGRAM with OMP_NUM_THREADS = 1, 2 and 3, then on 2 threads with EBLA_ISA=generic
# (the stored CG and power passes in their generic form instead of their AVX2 or AVX-512
# one), and fails unless every run prints the same digests. A threaded host space must report the thread count asked for; a serial one
# (Kokkos built without OpenMP or Threads) runs on one thread every time, and says so.
# LAUNCHER, if given, is the command line that starts PROGRAM (an MPI launcher: every
# rank then runs that many threads).
separate_arguments(launcher UNIX_COMMAND "${LAUNCHER}")
set(reference "")
foreach(run 1 2 3 generic)
  set(threads ${run})
  set(isa "")
  if(run STREQUAL "generic")
    set(threads 2)
    set(isa EBLA_ISA=generic)
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=${threads} OMP_PROC_BIND=false ${isa} ${launcher} ${PROGRAM}
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} on ${threads} thread(s) exited with ${code}:\n${out}\n${err}")
  endif()
  string(REGEX MATCH "^host ([A-Za-z]+) threads ([0-9]+)\n" head "${out}")
  if(NOT head)
    message(FATAL_ERROR "${PROGRAM} did not name its host space:\n${out}")
  endif()
  set(space "${CMAKE_MATCH_1}")
  set(got "${CMAKE_MATCH_2}")
  if(space STREQUAL "Serial")
    if(NOT got EQUAL 1)
      message(FATAL_ERROR "Serial host space reports ${got} threads")
    endif()
  elseif(NOT got EQUAL threads)
    message(FATAL_ERROR "asked for ${threads} thread(s), the ${space} host space runs ${got}")
  endif()
  string(REPLACE "${head}" "" body "${out}")
  string(REGEX MATCHALL "\n" lines "${body}")
  list(LENGTH lines count)
  message(STATUS "${space}, ${got} thread(s) ${isa}: ${count} cases")
  if(run STREQUAL "1")
    set(reference "${body}")
  elseif(NOT body STREQUAL reference)
    message(FATAL_ERROR "results differ between 1 and ${threads} threads ${isa}:\n--- 1 thread\n${reference}--- ${threads} threads ${isa}\n${body}")
  endif()
endforeach()
if(count LESS 1)
  message(FATAL_ERROR "no case ran")
endif()
