# FFmpeg's libraries for the video layer (src/stoker/video: demux, decode, the RGB conversion's
# filter graph): libavformat, libavcodec, libavfilter, libswscale and libavutil, as the imported
# target StokerFFmpeg::libav.
#
#   STOKER_WITH_VIDEO     AUTO by default: ON where FFmpeg is found, else OFF (said in one line
#                         naming the missing libraries); ON requires it; OFF leaves video out.
#   STOKER_FFMPEG_PREFIX  scripts/build_ffmpeg.sh's build, Debian's FFmpeg slim and static
#                         (default: its link ~/.cache/stoker/ffmpeg): linked in whole where it
#                         is there, with what its pkg-config files name besides (Debian's shared
#                         libdav1d, zlib, threads); else the system's shared FFmpeg (Debian's
#                         -dev packages) through pkg-config.
#   stoker_find_video()   leaves STOKER_VIDEO ON or OFF, for ON the target and
#                         STOKER_FFMPEG_LIBRARIES (the static build's link items, empty for the
#                         system's: stokerConfig.cmake makes the target again from them); or stops
#                         in one line naming what is missing.
# Without video the video layer, the video operations (decode_clip, clip_frame_indices), the
# videofolder source, the Python video binding and their tests are left out of the build (their
# registries then have no entry for them); the Python package refuses video in one line.

set(STOKER_WITH_VIDEO AUTO CACHE STRING "Decode videos (FFmpeg's libav*): AUTO, ON or OFF")
set(STOKER_FFMPEG_PREFIX "${STOKER_CACHE_DIR}/ffmpeg" CACHE PATH
  "scripts/build_ffmpeg.sh's static FFmpeg; the system's shared one where it is not there")
set(STOKER_LIBAV_MODULES libavformat libavcodec libavfilter libswscale libavutil)

# StokerFFmpeg::libav from the static build at STOKER_FFMPEG_PREFIX.
function(stoker_static_ffmpeg)
  # The link's target: a new build (other flags, another Debian version) changes the command
  # lines, so what links it is linked again.
  get_filename_component(prefix "${STOKER_FFMPEG_PREFIX}" REALPATH)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${prefix}/lib/pkgconfig"
      "${PKG_CONFIG_EXECUTABLE}" --libs ${STOKER_LIBAV_MODULES}
    OUTPUT_VARIABLE libraries RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR " stoker: pkg-config finds no libav* in ${prefix} (scripts/build_ffmpeg.sh)")
  endif()
  separate_arguments(libraries UNIX_COMMAND "${libraries}")
  add_library(StokerFFmpeg::libav INTERFACE IMPORTED GLOBAL)
  set_target_properties(StokerFFmpeg::libav PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${prefix}/include" INTERFACE_LINK_LIBRARIES "${libraries}")
  set(STOKER_FFMPEG_LIBRARIES "${libraries}" CACHE INTERNAL "")
  message(STATUS "Video: FFmpeg static, from ${prefix}")
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/StokerOptional.cmake)

function(stoker_find_video)
  set(STOKER_VIDEO OFF PARENT_SCOPE)
  set(STOKER_FFMPEG_LIBRARIES "" CACHE INTERNAL "")
  string(TOUPPER "${STOKER_WITH_VIDEO}" mode)
  if(NOT mode STREQUAL "AUTO" AND NOT STOKER_WITH_VIDEO)
    message(STATUS "Video: off (STOKER_WITH_VIDEO=${STOKER_WITH_VIDEO})")
    return()
  endif()
  if(EXISTS "${STOKER_FFMPEG_PREFIX}/complete")
    stoker_static_ffmpeg()
    set(STOKER_VIDEO ON PARENT_SCOPE)
    return()
  endif()
  pkg_check_modules(LIBAV QUIET IMPORTED_TARGET GLOBAL ${STOKER_LIBAV_MODULES})
  if(NOT LIBAV_FOUND)
    set(missing)
    foreach(module IN LISTS STOKER_LIBAV_MODULES)
      pkg_check_modules(STOKER_LIBAV_PROBE QUIET ${module})
      if(NOT STOKER_LIBAV_PROBE_FOUND)
        list(APPEND missing ${module})
      endif()
    endforeach()
    list(TRANSFORM missing APPEND -dev OUTPUT_VARIABLE packages)
    string(REPLACE ";" " " packages "${packages}")
    string(REPLACE ";" ", " missing "${missing}")
    stoker_feature_unavailable(Video STOKER_WITH_VIDEO "no ${STOKER_FFMPEG_PREFIX} "
      "(scripts/build_ffmpeg.sh) and pkg-config finds no ${missing} (FFmpeg's): apt-get "
      "install ${packages}, then configure again")
  endif()
  add_library(StokerFFmpeg::libav INTERFACE IMPORTED GLOBAL)
  set_target_properties(StokerFFmpeg::libav PROPERTIES INTERFACE_LINK_LIBRARIES PkgConfig::LIBAV)
  set(STOKER_VIDEO ON PARENT_SCOPE)
  message(STATUS "Video: the system's FFmpeg, libavformat ${LIBAV_libavformat_VERSION}, "
    "libavcodec ${LIBAV_libavcodec_VERSION} (${LIBAV_libavformat_LIBDIR})")
endfunction()
