# Apache Arrow's C++ Parquet reader for store/import/parquet_source.h: the libarrow and
# libparquet that PyPI's pyarrow wheel ships with their headers, found by asking a Python that
# has it (Python_EXECUTABLE where given, as setup.py does under build isolation, else
# STOKER_PYTHON). pyarrow's wheels are built with the C++11 ABI of libstdc++ and need GLIBCXX
# 3.4.30 at most (GCC 12's: Debian 12's libstdc++).
#
#   STOKER_WITH_PARQUET   AUTO by default: ON where that Python has pyarrow, else OFF (said in
#                         one line); ON requires it; OFF by default in sanitizer builds (Arrow's
#                         prebuilt libraries are not instrumented: TSan reports their threads'
#                         work as races).
#   stoker_find_parquet() leaves STOKER_PARQUET ON or OFF; for ON, STOKER_PARQUET_INCLUDE,
#                         STOKER_PARQUET_LIBRARIES (the versioned libraries by full path: CMake
#                         puts their folder in the build rpath) and the imported target
#                         StokerArrow::parquet linking them (stokerConfig.cmake makes it again
#                         for an installed stoker_core); or stops in one line naming what is
#                         missing.
# The Python package loads them from the installed pyarrow before its extension
# (python/stoker/_arrow_libraries.py), wherever that pyarrow is.

if(STOKER_SANITIZE)
  set(STOKER_PARQUET_DEFAULT OFF)
else()
  set(STOKER_PARQUET_DEFAULT AUTO)
endif()
set(STOKER_WITH_PARQUET ${STOKER_PARQUET_DEFAULT} CACHE STRING
  "Read Parquet files in place (Arrow's C++ reader, from pyarrow): AUTO, ON or OFF")
set(STOKER_PYARROW_VERSION 26.0.1)  # scripts/requirements.txt and pyproject.toml pin it too

include(${CMAKE_CURRENT_LIST_DIR}/StokerOptional.cmake)

function(stoker_find_parquet)
  set(STOKER_PARQUET OFF PARENT_SCOPE)
  string(TOUPPER "${STOKER_WITH_PARQUET}" mode)
  if(NOT mode STREQUAL "AUTO" AND NOT STOKER_WITH_PARQUET)
    return()
  endif()
  if(STOKER_OLD_ABI)
    stoker_feature_unavailable(Parquet STOKER_WITH_PARQUET "torch ${STOKER_TORCH_VERSION} has libstdc++'s pre-C++11 ABI, "
      "pyarrow's libraries the C++11 one: build against torch >= 2.6")
  endif()
  set(python "${STOKER_PYTHON}")
  if(Python_EXECUTABLE)
    set(python "${Python_EXECUTABLE}")
  endif()
  execute_process(
    COMMAND "${python}" -c "import pyarrow
print(pyarrow.__version__)
print(pyarrow.get_include())
print(pyarrow.get_library_dirs()[0])"
    OUTPUT_VARIABLE out ERROR_QUIET RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    stoker_feature_unavailable(Parquet STOKER_WITH_PARQUET "'${python}' cannot import pyarrow, whose Arrow C++ libraries read "
      "Parquet: pip install pyarrow==${STOKER_PYARROW_VERSION}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(GET lines 0 version)
  list(GET lines 1 include)
  list(GET lines 2 libdir)
  if(NOT version VERSION_EQUAL STOKER_PYARROW_VERSION)
    message(FATAL_ERROR " stoker: '${python}' has pyarrow ${version}; stoker is built against "
      "${STOKER_PYARROW_VERSION} (pip install pyarrow==${STOKER_PYARROW_VERSION}), or build "
      "with -DSTOKER_WITH_PARQUET=OFF")
  endif()
  # pyarrow's libparquet exports a whole OpenSSL of its own. A symbol is looked up breadth-first
  # through a program's (or a dlopen'ed extension's) libraries, so where libparquet came before
  # the system's libcrypto, libcrypto's own calls, and libcurl's, bound to that copy: `import
  # stoker; import hashlib` crashed. The system's libssl and libcrypto are named first.
  # (The run-time libraries libcurl loads: no -dev package needed.)
  find_library(STOKER_LIBSSL NAMES libssl.so.3 ssl)
  find_library(STOKER_LIBCRYPTO NAMES libcrypto.so.3 crypto)
  if(NOT STOKER_LIBSSL OR NOT STOKER_LIBCRYPTO)
    message(FATAL_ERROR " stoker: OpenSSL's libssl.so.3 and libcrypto.so.3 not found (Debian: "
      "libssl3), which must come before pyarrow's libparquet; or build with "
      "-DSTOKER_WITH_PARQUET=OFF")
  endif()
  set(libraries "-Wl,--push-state,--no-as-needed" "${STOKER_LIBSSL}" "${STOKER_LIBCRYPTO}"
    "-Wl,--pop-state")
  foreach(name parquet arrow)
    file(GLOB found "${libdir}/lib${name}.so.[0-9]*")
    if(NOT found)
      message(FATAL_ERROR " stoker: pyarrow ${version} at ${libdir} has no lib${name}.so")
    endif()
    list(GET found 0 library)
    list(APPEND libraries "${library}")
  endforeach()
  if(NOT TARGET StokerArrow::parquet)
    add_library(StokerArrow::parquet INTERFACE IMPORTED GLOBAL)
    set_target_properties(StokerArrow::parquet PROPERTIES INTERFACE_LINK_LIBRARIES "${libraries}")
  endif()
  set(STOKER_PARQUET ON PARENT_SCOPE)
  set(STOKER_PARQUET_INCLUDE "${include}" PARENT_SCOPE)
  set(STOKER_PARQUET_LIBRARIES "${libraries}" PARENT_SCOPE)
  message(STATUS "Parquet: Arrow's reader from pyarrow ${version} (${libdir})")
endfunction()
