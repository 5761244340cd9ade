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
#
# Included by eblaConfig.cmake, it finds the Kokkos and Kokkos Kernels that ebla was built
# with: eblaConfig.cmake sets EBLA_BUILT_<Kokkos|KokkosKernels>_VERSION and _DIR (the
# version, empty if the package records none, and the directory of its config file), and
# the search looks in that directory before the usual places and accepts only that version.
# Another version stops with an error naming both.

include_guard(GLOBAL)

# find_package(<package>) in a build, or the package ebla was built with in an installed ebla.
macro(_ebla_find_kokkos_package package)
  if(NOT DEFINED EBLA_BUILT_${package}_DIR)
    find_package(${package} REQUIRED)
  else()
    set(_ebla_want "${EBLA_BUILT_${package}_VERSION}")
    set(_ebla_where "${EBLA_BUILT_${package}_DIR}")
    if(${package}_FOUND AND _ebla_want AND NOT "${${package}_VERSION}" VERSION_EQUAL _ebla_want)
      # found before ebla was looked for (by the project, or another package's config)
      message(FATAL_ERROR "ebla was built with ${package} ${_ebla_want} (${_ebla_where}), but this "
                          "project already uses ${package} ${${package}_VERSION} (${${package}_DIR}). "
                          "Build ebla with the same ${package}, or point ${package}_DIR at ${_ebla_where}.")
    endif()
    if(_ebla_want)
      find_package(${package} ${_ebla_want} EXACT CONFIG QUIET HINTS "${_ebla_where}")
    else()  # Debian's Kokkos Kernels records no version: the directory alone says which
      find_package(${package} CONFIG QUIET HINTS "${_ebla_where}")
    endif()
    if(NOT ${package}_FOUND)
      set(_ebla_seen "")
      foreach(_ebla_config _ebla_version IN ZIP_LISTS ${package}_CONSIDERED_CONFIGS
                                                     ${package}_CONSIDERED_VERSIONS)
        if(_ebla_config)
          get_filename_component(_ebla_config "${_ebla_config}" REALPATH)
          list(APPEND _ebla_seen "${package} ${_ebla_version} (${_ebla_config})")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _ebla_seen)
      if(_ebla_seen)
        list(JOIN _ebla_seen ", " _ebla_seen)
      else()
        set(_ebla_seen "no ${package} at all")
      endif()
      message(FATAL_ERROR "ebla was built with ${package} ${_ebla_want} (${_ebla_where}), but found "
                          "${_ebla_seen}. Install ebla's ${package} there again, or set "
                          "${package}_DIR (or CMAKE_PREFIX_PATH) to its location.")
    endif()
  endif()
endmacro()

_ebla_find_kokkos_package(Kokkos)

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

_ebla_find_kokkos_package(KokkosKernels)

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
