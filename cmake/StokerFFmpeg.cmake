# FFmpeg's libraries for the video layer (libavformat, libavcodec, libavfilter, libswscale,
# libavutil) as the imported target StokerFFmpeg::libav:
#
#   STOKER_FFMPEG_PREFIX     scripts/build_ffmpeg.sh's build, Debian's FFmpeg slim and static
#                            (default: its link ~/.cache/stoker/ffmpeg): linked in whole where it
#                            is there, with what its pkg-config files name besides (Debian's
#                            shared libdav1d, zlib, threads); else the system's shared FFmpeg
#                            (Debian's -dev packages) through pkg-config.
#   STOKER_FFMPEG_LIBRARIES  the static build's link items, empty for the system's: the
#                            installed stokerConfig.cmake makes the target again from them.
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(stoker_ffmpeg_default "$ENV{XDG_CACHE_HOME}/stoker/ffmpeg")
else()
  set(stoker_ffmpeg_default "$ENV{HOME}/.cache/stoker/ffmpeg")
endif()
set(STOKER_FFMPEG_PREFIX "${stoker_ffmpeg_default}" CACHE PATH
  "scripts/build_ffmpeg.sh's static FFmpeg; the system's shared one where it is not there")
set(stoker_ffmpeg_modules libavformat libavcodec libavfilter libswscale libavutil)
add_library(StokerFFmpeg::libav INTERFACE IMPORTED)
if(EXISTS "${STOKER_FFMPEG_PREFIX}/complete")
  # The link's target: a new build (other flags, another Debian version) changes the command
  # lines, so what links it is linked again.
  get_filename_component(stoker_ffmpeg_prefix "${STOKER_FFMPEG_PREFIX}" REALPATH)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${stoker_ffmpeg_prefix}/lib/pkgconfig"
      "${PKG_CONFIG_EXECUTABLE}" --libs ${stoker_ffmpeg_modules}
    OUTPUT_VARIABLE stoker_ffmpeg_libraries RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FFmpeg: pkg-config finds no libav* in ${stoker_ffmpeg_prefix}")
  endif()
  separate_arguments(stoker_ffmpeg_libraries UNIX_COMMAND "${stoker_ffmpeg_libraries}")
  set_target_properties(StokerFFmpeg::libav PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${stoker_ffmpeg_prefix}/include"
    INTERFACE_LINK_LIBRARIES "${stoker_ffmpeg_libraries}")
  message(STATUS "FFmpeg: static, from ${stoker_ffmpeg_prefix}")
else()
  pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET ${stoker_ffmpeg_modules})
  set_target_properties(StokerFFmpeg::libav PROPERTIES INTERFACE_LINK_LIBRARIES PkgConfig::LIBAV)
  set(stoker_ffmpeg_libraries "")
  message(STATUS "FFmpeg: the system's (no ${STOKER_FFMPEG_PREFIX}: scripts/build_ffmpeg.sh)")
endif()
set(STOKER_FFMPEG_LIBRARIES "${stoker_ffmpeg_libraries}" CACHE INTERNAL "")
