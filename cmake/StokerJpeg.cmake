# libjpeg for the image layer and the suites, as the imported target StokerJpeg::libjpeg.
#
#   STOKER_LIBJPEG_PREFIX  scripts/build_libjpeg.sh's build, Debian's libjpeg-turbo static and
#                          position-independent (default: its link under STOKER_CACHE_DIR):
#                          linked in where it is there, so that the Python extension carries it
#                          with its symbols hidden and needs no `libjpeg.so.62` of the process
#                          (another library of that name, loaded first, would stand in for it);
#                          else the system's shared libjpeg (Debian's -dev package) through
#                          pkg-config.
# Both are the same version, Debian's: the decodes are the same. STOKER_LIBJPEG_LIBRARY: the static
# archive, or "" for the system's (stokerConfig.cmake makes the target again from it).

set(STOKER_LIBJPEG_PREFIX "${STOKER_CACHE_DIR}/libjpeg" CACHE PATH
  "scripts/build_libjpeg.sh's static libjpeg; the system's shared one where it is not there")

function(stoker_find_jpeg)
  add_library(StokerJpeg::libjpeg INTERFACE IMPORTED GLOBAL)
  if(EXISTS "${STOKER_LIBJPEG_PREFIX}/complete")
    # The real path: a new build (another Debian version) changes the link line.
    get_filename_component(prefix "${STOKER_LIBJPEG_PREFIX}" REALPATH)
    set_target_properties(StokerJpeg::libjpeg PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${prefix}/include"
      INTERFACE_LINK_LIBRARIES "${prefix}/lib/libjpeg.a")
    set(STOKER_LIBJPEG_LIBRARY "${prefix}/lib/libjpeg.a" CACHE INTERNAL "")
    message(STATUS "libjpeg: static, from ${prefix}")
  else()
    pkg_check_modules(LIBJPEG REQUIRED IMPORTED_TARGET libjpeg)
    set_target_properties(StokerJpeg::libjpeg PROPERTIES INTERFACE_LINK_LIBRARIES PkgConfig::LIBJPEG)
    set(STOKER_LIBJPEG_LIBRARY "" CACHE INTERNAL "")
    message(STATUS "libjpeg: the system's (no ${STOKER_LIBJPEG_PREFIX}: scripts/build_libjpeg.sh)")
  endif()
endfunction()
