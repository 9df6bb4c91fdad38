# cmake -DSOURCE_DIR=.. -DWORK_DIR=.. -DGENERATOR=.. -DPYTHON=.. -DTORCH_VERSION=.. -P torch_config_check.cmake
#
# How the configure finds LibTorch through a Python (cmake/StokerTorch.cmake), in scratch build
# trees:
# - a Python that cannot import torch, and one whose torch is too old, each stop the configure
#   with one line naming what was found and what is needed (a stand-in `python` script answers
#   as an old torch would);
# - PYTHON's CUDA torch without an nvcc builds CPU only and says why in the stoker: line; the
#   device memory source, which has CUDA code, compiles that way.
cmake_minimum_required(VERSION 3.22)

# configure(NAME OUT_VAR RC_VAR ARGS...): configures ${WORK_DIR}/NAME with ARGS.
function(configure name out_var rc_var)
  file(REMOVE_RECURSE ${WORK_DIR}/${name})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${name} -G ${GENERATOR}
      -DSTOKER_BUILD_TESTS=OFF -DSTOKER_BUILD_BENCH=OFF ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

# expect_refused(NAME LINE_REGEX ARGS...): the configure fails, and its error is LINE_REGEX on
# one line.
function(expect_refused name line)
  configure(${name} out rc ${ARGN})
  if(rc EQUAL 0)
    message(FATAL_ERROR "${name}: the configure succeeded:\n${out}")
  endif()
  if(NOT out MATCHES "\n   (${line})\n")
    message(FATAL_ERROR "${name}: no line matching '${line}' in:\n${out}")
  endif()
endfunction()

expect_refused(no_torch "stoker: '/bin/false' cannot import torch: install PyTorch >= [0-9.]+ [^\n]*"
  -DSTOKER_PYTHON=/bin/false)

file(WRITE ${WORK_DIR}/old_python/python "#!/bin/sh\nprintf '/nowhere\\n1.13.1\\n\\n1\\n'\n")
file(CHMOD ${WORK_DIR}/old_python/python PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
expect_refused(old_torch
  "stoker: '${WORK_DIR}/old_python/python' has torch 1\\.13\\.1; stoker needs torch >= [0-9.]+ [^\n]*"
  -DSTOKER_PYTHON=${WORK_DIR}/old_python/python)

configure(no_nvcc out rc -DSTOKER_PYTHON=${PYTHON} -DCMAKE_CUDA_COMPILER=/nonexistent/nvcc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "no_nvcc: the configure failed:\n${out}")
endif()
set(expected "CPU only: torch ${TORCH_VERSION} has CUDA [0-9.]+ but no nvcc was found")
if(NOT out MATCHES "-- stoker: LibTorch ${TORCH_VERSION} from [^\n]*, ${expected}")
  message(FATAL_ERROR "no_nvcc: no stoker: line saying '${expected}' in:\n${out}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/no_nvcc
    --target CMakeFiles/stoker.dir/src/stoker/train/device_memory.cc.o
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "no_nvcc: device_memory.cc did not compile CPU only:\n${out}")
endif()
