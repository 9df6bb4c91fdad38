# cmake -DSOURCE_DIR=.. -DWORK_DIR=.. -DGENERATOR=.. -P build_flags_check.cmake
#
# Configures stoker in scratch build trees (without LibTorch, tests or benchmarks, so each takes
# a few seconds) and checks the compile command of one source in compile_commands.json:
# - no build type: RelWithDebInfo with stoker's flags (-O2 -g1 -DNDEBUG);
# - Release: CMake's Release flags (with -DNDEBUG), none of stoker's RelWithDebInfo ones;
# - flags the user passes (CMAKE_CXX_FLAGS, CMAKE_CXX_FLAGS_<CONFIG>) are used as given, and
#   still after a reconfigure.
cmake_minimum_required(VERSION 3.22)

# configure(NAME ARGS...): configures ${WORK_DIR}/NAME with ARGS; keeps an existing tree.
function(configure name)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${name} -G ${GENERATOR}
      -DSTOKER_WITH_TORCH=OFF -DSTOKER_BUILD_TESTS=OFF -DSTOKER_BUILD_BENCH=OFF -DSTOKER_UNITY_BUILD=OFF
      -DCMAKE_EXPORT_COMPILE_COMMANDS=ON ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: configure failed:\n${out}")
  endif()
endfunction()

# expect_flags(NAME BUILD_TYPE [HAS flags...] [LACKS flags...]): the cached build type of
# ${WORK_DIR}/NAME is BUILD_TYPE and the compile command of util/checksum.cc has every HAS flag
# and no LACKS flag (whole words).
function(expect_flags name build_type)
  cmake_parse_arguments(ARG "" "" "HAS;LACKS" ${ARGN})
  set(dir ${WORK_DIR}/${name})
  file(STRINGS ${dir}/CMakeCache.txt cached REGEX "^CMAKE_BUILD_TYPE:")
  if(NOT cached MATCHES ":[A-Z]+=${build_type}$")
    message(FATAL_ERROR "${name}: expected build type ${build_type}, the cache has '${cached}'")
  endif()
  file(READ ${dir}/compile_commands.json json)
  string(JSON count LENGTH "${json}")
  math(EXPR last "${count} - 1")
  set(command "")
  foreach(i RANGE ${last})
    string(JSON file GET "${json}" ${i} file)
    if(file MATCHES "/src/stoker/util/checksum\\.cc$")
      string(JSON command GET "${json}" ${i} command)
    endif()
  endforeach()
  if(NOT command)
    message(FATAL_ERROR "${name}: no compile command for util/checksum.cc")
  endif()
  separate_arguments(words UNIX_COMMAND "${command}")
  foreach(flag IN LISTS ARG_HAS)
    if(NOT flag IN_LIST words)
      message(FATAL_ERROR "${name}: '${flag}' missing from the compile command:\n${command}")
    endif()
  endforeach()
  foreach(flag IN LISTS ARG_LACKS)
    if(flag IN_LIST words)
      message(FATAL_ERROR "${name}: unexpected '${flag}' in the compile command:\n${command}")
    endif()
  endforeach()
  message(STATUS "${name}: ${build_type}, flags as expected")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})

configure(default)
expect_flags(default RelWithDebInfo HAS -O2 -g1 -DNDEBUG LACKS -g -O3)

configure(release -DCMAKE_BUILD_TYPE=Release)
expect_flags(release Release HAS -O3 -DNDEBUG LACKS -g1 -O2)

configure(user -DCMAKE_BUILD_TYPE=RelWithDebInfo
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DSTOKER_USER_CONFIG_FLAG"
  -DCMAKE_CXX_FLAGS=-DSTOKER_USER_FLAG)
expect_flags(user RelWithDebInfo HAS -O1 -DSTOKER_USER_CONFIG_FLAG -DSTOKER_USER_FLAG
  LACKS -O2 -g1 -DNDEBUG)
configure(user)  # a reconfigure keeps the user's values
expect_flags(user RelWithDebInfo HAS -O1 -DSTOKER_USER_CONFIG_FLAG -DSTOKER_USER_FLAG
  LACKS -O2 -g1 -DNDEBUG)

file(REMOVE_RECURSE ${WORK_DIR})
