# FFmpeg's libraries for the video layer (src/stoker/video: demux, decode, the RGB conversion's
# filter graph): libavformat, libavcodec, libavfilter, libswscale and libavutil through
# pkg-config (Debian 12's FFmpeg 5.1, which scripts/setup.sh installs).
#
#   STOKER_WITH_VIDEO   AUTO by default: ON where pkg-config finds all five, else OFF (said in
#                       one line naming the missing ones); ON requires them; OFF leaves video out.
#   stoker_find_video() leaves STOKER_VIDEO ON or OFF; for ON, the imported target
#                       PkgConfig::LIBAV (stokerConfig.cmake makes it again for an installed
#                       stoker_core); or stops in one line naming what is missing.
# Without video the video layer, the video operations (decode_clip, clip_frame_indices), the
# videofolder source, the Python video binding and their tests are left out of the build (their
# registries then have no entry for them); the Python package refuses video in one line.

set(STOKER_WITH_VIDEO AUTO CACHE STRING
  "Decode videos (FFmpeg's libav* through pkg-config): AUTO, ON or OFF")
set(STOKER_LIBAV_MODULES libavformat libavcodec libavfilter libswscale libavutil)

function(stoker_find_video)
  set(STOKER_VIDEO OFF PARENT_SCOPE)
  string(TOUPPER "${STOKER_WITH_VIDEO}" mode)
  if(NOT mode STREQUAL "AUTO" AND NOT STOKER_WITH_VIDEO)
    message(STATUS "Video: off (STOKER_WITH_VIDEO=${STOKER_WITH_VIDEO})")
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
    set(why "pkg-config finds no ${missing} (FFmpeg's): apt-get install ${packages}")
    if(mode STREQUAL "AUTO")
      message(STATUS "Video: off (${why}; then configure again)")
      return()
    endif()
    message(FATAL_ERROR " stoker: ${why}, or build with -DSTOKER_WITH_VIDEO=OFF")
  endif()
  set(STOKER_VIDEO ON PARENT_SCOPE)
  message(STATUS "Video: FFmpeg's libavformat ${LIBAV_libavformat_VERSION}, libavcodec "
    "${LIBAV_libavcodec_VERSION} (${LIBAV_libavformat_LIBDIR})")
endfunction()
