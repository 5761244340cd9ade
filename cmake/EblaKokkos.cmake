# Finds Kokkos and Kokkos Kernels and makes their targets usable.
#
# With a normal Kokkos 4.x install, find_package(Kokkos) and find_package(KokkosKernels)
# provide Kokkos::kokkos and Kokkos::kokkoskernels and nothing here changes them.
#
# Debian's Trilinos packaging (libtrilinos-kokkos-dev, Kokkos 3.4) is broken in two
# ways, repaired below:
#  1. Kokkos::kokkos has INTERFACE_INCLUDE_DIRECTORIES "<prefix>/include" computed
#     four levels above the config file, which gives /usr/lib/include: a directory that
#     does not exist. The headers are in Kokkos_INCLUDE_DIRS (/usr/include/trilinos).
#  2. KokkosKernels' config defines only the plain imported target
#     trilinos_kokkoskernels, no Kokkos::kokkoskernels, and its include directories are
#     again only in a variable.
# This file is installed with ebla and included by eblaConfig.cmake, so projects that
# find_package(ebla) get the same repair.

include_guard(GLOBAL)

find_package(Kokkos REQUIRED)

# Repair 1: drop include directories that do not exist, add Kokkos_INCLUDE_DIRS.
if(TARGET Kokkos::kokkos)
  get_target_property(_ebla_kokkos_target Kokkos::kokkos ALIASED_TARGET)
  if(NOT _ebla_kokkos_target)
    set(_ebla_kokkos_target Kokkos::kokkos)
  endif()
  get_target_property(_ebla_inc ${_ebla_kokkos_target} INTERFACE_INCLUDE_DIRECTORIES)
  set(_ebla_good_inc "")
  set(_ebla_repaired FALSE)
  if(_ebla_inc)
    foreach(_dir IN LISTS _ebla_inc)
      if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
        list(APPEND _ebla_good_inc "${_dir}")
      else()
        set(_ebla_repaired TRUE)
      endif()
    endforeach()
  endif()
  if(_ebla_repaired OR NOT _ebla_inc)
    foreach(_dir IN LISTS Kokkos_INCLUDE_DIRS)
      get_filename_component(_dir "${_dir}" REALPATH)
      if(EXISTS "${_dir}")
        list(APPEND _ebla_good_inc "${_dir}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES _ebla_good_inc)
    set_target_properties(${_ebla_kokkos_target} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${_ebla_good_inc}")
    message(STATUS "ebla: repaired Kokkos::kokkos include directories: ${_ebla_good_inc}")
  endif()
else()
  message(FATAL_ERROR "ebla: find_package(Kokkos) succeeded but defined no Kokkos::kokkos target")
endif()

find_package(KokkosKernels REQUIRED)

# Repair 2: create Kokkos::kokkoskernels from the plain Trilinos target.
if(NOT TARGET Kokkos::kokkoskernels)
  if(NOT TARGET trilinos_kokkoskernels)
    message(FATAL_ERROR "ebla: KokkosKernels found, but neither Kokkos::kokkoskernels "
                        "nor trilinos_kokkoskernels is a target")
  endif()
  set(_ebla_kk_inc "")
  foreach(_dir IN LISTS KokkosKernels_INCLUDE_DIRS)
    get_filename_component(_dir "${_dir}" REALPATH)
    if(EXISTS "${_dir}")
      list(APPEND _ebla_kk_inc "${_dir}")
    endif()
  endforeach()
  add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
  set_target_properties(Kokkos::kokkoskernels PROPERTIES
    INTERFACE_LINK_LIBRARIES "trilinos_kokkoskernels;Kokkos::kokkos"
    INTERFACE_INCLUDE_DIRECTORIES "${_ebla_kk_inc}")
  message(STATUS "ebla: created Kokkos::kokkoskernels from trilinos_kokkoskernels")
endif()
