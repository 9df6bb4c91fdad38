# cmake -DSOURCE_DIR=.. -DWORK_DIR=.. -DGENERATOR=.. -DPYTHON=.. -DTORCH_VERSION=..
#       [-DTORCH_CUDA=.. -DCUDA_COMPILER=..] -P torch_config_check.cmake
#
# How the configure finds LibTorch through a Python (cmake/StokerTorch.cmake), in scratch build
# trees:
# - a Python that cannot import torch, and one whose torch is too old, each stop the configure
#   with one line naming what was found and what is needed (a stand-in `python` script answers
#   as an old torch would);
# - PYTHON's CUDA torch without an nvcc builds CPU only and says why in the stoker: line; the
#   device memory source, which has CUDA code, compiles that way;
# - with the build's nvcc (CUDA_COMPILER, for a torch of the toolkit's CUDA major version
#   TORCH_CUDA), stand-ins for PYTHON that answer with another CUDA version: another major
#   version builds CPU only, saying why; a newer minor version builds CUDA with torch's runtime,
#   saying which; and CPU only, saying why, where no runtime sits beside torch.
cmake_minimum_required(VERSION 3.22)

# configure(NAME OUT_VAR RC_VAR ARGS...): configures ${WORK_DIR}/NAME with ARGS.
function(configure name out_var rc_var)
  file(REMOVE_RECURSE ${WORK_DIR}/${name})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${name} -G ${GENERATOR}
      -DSTOKER_BUILD_TESTS=OFF -DSTOKER_BUILD_BENCH=OFF -DSTOKER_UNITY_BUILD=OFF ${ARGN}
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

if(NOT TORCH_CUDA OR NOT CUDA_COMPILER)
  return()
endif()

# stand_in(NAME CUDA [PREFIX]): writes ${WORK_DIR}/NAME/python, PYTHON answering torch's CUDA
# version CUDA (and cmake prefix PREFIX) instead of its own to StokerTorch.cmake's question
# (the one that imports torch.utils), and every other question (pyarrow's) as PYTHON does;
# sets stand_in to its path.
function(stand_in name cuda)
  set(edit "-e '3s|.*|${cuda}|'")
  if(ARGC GREATER 2)
    string(APPEND edit " -e '1s|.*|${ARGV2}|'")
  endif()
  set(stand_in ${WORK_DIR}/${name}_python/python)
  file(WRITE ${stand_in} "#!/bin/sh\ncase \"$*\" in\n"
    "  *torch.utils*) '${PYTHON}' \"$@\" | sed ${edit} ;;\n"
    "  *) exec '${PYTHON}' \"$@\" ;;\nesac\n")
  file(CHMOD ${stand_in} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(stand_in ${stand_in} PARENT_SCOPE)
endfunction()

# expect_line(NAME WORDS ARGS...): the configure with ARGS succeeds and its stoker: line ends in
# WORDS (a regex).
function(expect_line name words)
  configure(${name} out rc -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER} ${ARGN})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: the configure failed:\n${out}")
  endif()
  if(NOT out MATCHES "-- stoker: LibTorch ${TORCH_VERSION} from [^\n]*, ${words}")
    message(FATAL_ERROR "${name}: no stoker: line saying '${words}' in:\n${out}")
  endif()
endfunction()

string(REGEX MATCH "^[0-9]+" major "${TORCH_CUDA}")
string(REPLACE "." "\\." nvcc "${CUDA_COMPILER}")

stand_in(other_major 99.0)
expect_line(other_major
  "CPU only: torch ${TORCH_VERSION} has CUDA 99\\.0 but ${nvcc} is CUDA ${major}\\.[0-9]+ \\("
  -DSTOKER_PYTHON=${stand_in})

stand_in(newer_minor ${major}.99)
expect_line(newer_minor
  "CUDA ${major}\\.[0-9.]+ toolkit, torch's CUDA ${major}\\.99 runtime \\([^)]*/nvidia/[^)]*/libcudart\\.so\\.${major}\\), NCCL"
  -DSTOKER_PYTHON=${stand_in})

# A torch with nothing beside it: its own headers, libraries and CMake files, linked.
execute_process(COMMAND ${PYTHON} -c "import torch, os; print(os.path.dirname(torch.__file__))"
  OUTPUT_VARIABLE torch_root OUTPUT_STRIP_TRAILING_WHITESPACE)
file(REMOVE_RECURSE ${WORK_DIR}/lone_torch)
file(MAKE_DIRECTORY ${WORK_DIR}/lone_torch/torch)
foreach(dir include lib share)
  file(CREATE_LINK ${torch_root}/${dir} ${WORK_DIR}/lone_torch/torch/${dir} SYMBOLIC)
endforeach()
stand_in(no_runtime ${major}.99 ${WORK_DIR}/lone_torch/torch/share/cmake)
expect_line(no_runtime
  "CPU only: torch ${TORCH_VERSION} has CUDA ${major}\\.99, newer than ${nvcc}'s ${major}\\.[0-9]+, and no libcudart\\.so\\.${major} beside it \\("
  -DSTOKER_PYTHON=${stand_in})
