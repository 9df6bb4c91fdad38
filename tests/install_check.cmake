# cmake -DBUILD_DIR=.. -DCONSUMER_DIR=.. -DWORK_DIR=.. -DGENERATOR=.. -DCXX_COMPILER=..
#       -DWITH_TORCH=ON|OFF [-DTORCH_DIR=.. -DCUDA_COMPILER=..] -P install_check.cmake
#
# Installs the (built) build tree BUILD_DIR into a scratch prefix and checks the package a user
# gets from it:
# 1. the exported targets files exist for each component built (core; torch with LibTorch) and
#    their link interfaces name targets, never an absolute path or a library file;
# 2. every `#include "stoker/..."` of an installed header names an installed header;
# 3. the consumer project CONSUMER_DIR configures against the prefix (find_package(stoker
#    COMPONENTS core), then the torch component too when built: each link interface item must
#    be a target there), builds against stoker::stoker_core and runs: it writes a dataset, opens
#    it and loads it with the loader (LoaderCore).
cmake_minimum_required(VERSION 3.22)

# run(WHAT COMMAND...): runs COMMAND; stops with its output if it fails.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed:\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# 1. Exported link interfaces.
set(expected stokerCoreTargets.cmake)
if(WITH_TORCH)
  list(APPEND expected stokerTorchTargets.cmake)
endif()
file(GLOB_RECURSE config ${prefix}/*/stokerConfig.cmake)
if(NOT config)
  message(FATAL_ERROR "no stokerConfig.cmake installed under ${prefix}")
endif()
get_filename_component(package_dir "${config}" DIRECTORY)
foreach(name IN LISTS expected)
  if(NOT EXISTS ${package_dir}/${name})
    message(FATAL_ERROR "${name} not installed in ${package_dir}")
  endif()
endforeach()
file(GLOB exports ${package_dir}/stoker*Targets*.cmake)
foreach(export IN LISTS exports)
  file(STRINGS ${export} lines REGEX "INTERFACE_LINK_LIBRARIES")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^.*INTERFACE_LINK_LIBRARIES \"(.*)\"$" "\\1" items "${line}")
    string(REPLACE "\\$<LINK_ONLY:" "" items "${items}")
    string(REPLACE ">" "" items "${items}")
    foreach(item IN LISTS items)
      if(IS_ABSOLUTE "${item}" OR item MATCHES "\\.(so|a)(\\.[0-9]+)*$")
        message(FATAL_ERROR "${export}: '${item}' in a link interface is a path, not a target")
      endif()
    endforeach()
  endforeach()
endforeach()

# 2. Installed headers include only installed headers.
file(GLOB_RECURSE headers RELATIVE ${prefix}/include ${prefix}/include/stoker/*.h)
foreach(header IN LISTS headers)
  file(STRINGS ${prefix}/include/${header} includes REGEX "^#include \"stoker/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*$" "\\1" included "${line}")
    if(NOT EXISTS ${prefix}/include/${included})
      message(FATAL_ERROR "installed ${header} includes ${included}, which is not installed")
    endif()
  endforeach()
endforeach()

# 3. A consumer project, finding the LibTorch stoker was built with (TORCH_DIR; a CUDA one's
# CMake files need nvcc, CUDA_COMPILER) as a user of a wheel's LibTorch does.
set(consumer ${WORK_DIR}/consumer)
set(torch_args "")
if(WITH_TORCH)
  set(torch_args -DTorch_DIR=${TORCH_DIR} -DCaffe2_DIR=${TORCH_DIR}/../Caffe2)
  if(CUDA_COMPILER)
    list(APPEND torch_args -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER} -DTORCH_CUDA_ARCH_LIST=9.0)
  endif()
endif()
run("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${consumer} -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
  -DCHECK_TORCH_COMPONENT=${WITH_TORCH} ${torch_args})
run("building the consumer" ${CMAKE_COMMAND} --build ${consumer})
file(MAKE_DIRECTORY ${WORK_DIR}/data)
run("running the consumer" ${consumer}/consumer ${WORK_DIR}/data)
if(NOT run_output STREQUAL "10 records, labels 0 1 4 9 16 25 36 49 64 81, batch sums 14 126 145\n")
  message(FATAL_ERROR "the consumer printed '${run_output}'")
endif()
message(STATUS "consumer: ${run_output}")

file(REMOVE_RECURSE ${WORK_DIR})
