# LibTorch for the LibTorch layers: the one inside the PyTorch of a Python environment (PyPI's
# wheels carry LibTorch's headers, libraries and CMake files), found by asking that Python.
#
#   stoker_query_torch()  before any target: runs STOKER_PYTHON (default: python3 on PATH) to
#                         read torch's version, CUDA version, C++ ABI and CMake prefix; refuses
#                         a torch older than STOKER_MIN_TORCH in one line; sets the C++
#                         standard the headers need (C++20 from torch 2.13 on, else C++17).
#   stoker_find_torch()   after: find_package(Torch) on that prefix. A CUDA build of torch
#                         needs the CUDA toolkit's nvcc for its CMake files; without one, or
#                         with one of another CUDA major version than torch's, the build is CPU
#                         only (the `torch` target made here from the wheel's libraries) and
#                         says so in one line. A toolkit of an older minor version than torch's
#                         CUDA compiles, and links torch's own CUDA runtime (see below).
# Errors are one line each (a message starting with a space is not re-wrapped by CMake).
# -DTorch_DIR=... skips the query and uses that LibTorch as it is (a LibTorch archive).
# STOKER_PYTHON is also the Python that the tests run (torch, torchvision, PIL) and the default
# of `stoker bench train --python`: the macro STOKER_PYTHON in the tests and the CLI.

set(STOKER_MIN_TORCH 2.4)
set(STOKER_PYTHON "" CACHE FILEPATH "The Python whose PyTorch provides LibTorch (default: python3)")
if(NOT STOKER_PYTHON)
  find_program(STOKER_PYTHON_FOUND NAMES python3 python NO_CACHE)
  set(STOKER_PYTHON "${STOKER_PYTHON_FOUND}" CACHE FILEPATH "" FORCE)
endif()

macro(stoker_query_torch)
  if(NOT Torch_DIR)
    execute_process(
      COMMAND "${STOKER_PYTHON}" -c "import torch, torch.utils
print(torch.utils.cmake_prefix_path)
print(torch.__version__.split('+')[0])
print(torch.version.cuda or '')
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
      RESULT_VARIABLE _stoker_rc OUTPUT_VARIABLE _stoker_out ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _stoker_rc EQUAL 0)
      message(FATAL_ERROR " stoker: '${STOKER_PYTHON}' cannot import torch: install PyTorch >= "
        "${STOKER_MIN_TORCH} into it (bash scripts/setup.sh makes an environment with the pinned "
        "one), pass -DSTOKER_PYTHON=<a python with torch>, or build without LibTorch "
        "(-DSTOKER_WITH_TORCH=OFF)")
    endif()
    string(REPLACE "\n" ";" _stoker_out "${_stoker_out}")
    list(GET _stoker_out 0 STOKER_TORCH_PREFIX)
    list(GET _stoker_out 1 STOKER_TORCH_VERSION)
    list(GET _stoker_out 2 STOKER_TORCH_CUDA)
    list(GET _stoker_out 3 STOKER_TORCH_ABI)
    if(STOKER_TORCH_VERSION VERSION_LESS STOKER_MIN_TORCH)
      message(FATAL_ERROR " stoker: '${STOKER_PYTHON}' has torch ${STOKER_TORCH_VERSION}; stoker "
        "needs torch >= ${STOKER_MIN_TORCH} (scripts/requirements.txt pins the checked one)")
    endif()
    if(STOKER_TORCH_VERSION VERSION_GREATER_EQUAL 2.13)
      set(CMAKE_CXX_STANDARD 20)  # torch 2.13's headers need C++20
    endif()
  endif()
endmacro()

# The nvcc for a CUDA torch: CMAKE_CUDA_COMPILER or CUDACXX if given, else nvcc on PATH, in
# $CUDA_HOME/bin or /usr/local/cuda/bin. Sets STOKER_NVCC (empty when none) and
# STOKER_NVCC_VERSION, its CUDA release (major.minor; empty when nvcc does not say).
function(stoker_find_nvcc)
  if(CMAKE_CUDA_COMPILER)
    set(nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX})
    set(nvcc "$ENV{CUDACXX}")
  else()
    find_program(nvcc nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin NO_CACHE)
  endif()
  if(nvcc AND NOT EXISTS "${nvcc}")
    set(nvcc "")
  endif()
  set(version "")
  if(nvcc)
    execute_process(COMMAND "${nvcc}" --version OUTPUT_VARIABLE out ERROR_QUIET)
    if(out MATCHES "release ([0-9]+\\.[0-9]+)")
      set(version "${CMAKE_MATCH_1}")
    endif()
  endif()
  set(STOKER_NVCC "${nvcc}" PARENT_SCOPE)
  set(STOKER_NVCC_VERSION "${version}" PARENT_SCOPE)
endfunction()

# Why a CUDA torch builds CPU only with this nvcc (STOKER_NVCC, STOKER_NVCC_VERSION): sets
# STOKER_TORCH_CPU_ONLY to the reason, or empty when the CUDA code can be built. When the
# toolkit is an older minor version of torch's CUDA, sets CUDA_cudart_LIBRARY (which torch's
# FindCUDAToolkit then takes for CUDA::cudart) to the CUDA runtime beside torch (PyPI's
# nvidia-* packages): the one libtorch_cuda was built for. A program then loads one runtime,
# the newer: CUDA's runtime runs code built against an older minor version of it, not the
# reverse (the toolkit's runtime, found first, would run libtorch_cuda on an older one).
# Another major version is another runtime and ABI: CPU only.
function(stoker_check_cuda_toolkit torch_root)
  set(torch_cuda "${STOKER_TORCH_CUDA}")
  set(need "put the CUDA ${torch_cuda} toolkit's bin/ on PATH or set CUDACXX for a CUDA build")
  string(REGEX MATCH "^[0-9]+" major "${torch_cuda}")
  string(REGEX MATCH "^[0-9]+" nvcc_major "${STOKER_NVCC_VERSION}")
  set(reason "")
  if(NOT STOKER_NVCC)
    set(reason "torch ${STOKER_TORCH_VERSION} has CUDA ${torch_cuda} but no nvcc was found (${need})")
  elseif(NOT STOKER_NVCC_VERSION)
    set(reason "torch ${STOKER_TORCH_VERSION} has CUDA ${torch_cuda} but '${STOKER_NVCC} --version' names no CUDA release (${need})")
  elseif(NOT nvcc_major STREQUAL major)
    set(reason "torch ${STOKER_TORCH_VERSION} has CUDA ${torch_cuda} but ${STOKER_NVCC} is CUDA ${STOKER_NVCC_VERSION} (${need})")
  elseif(STOKER_NVCC_VERSION VERSION_LESS torch_cuda)
    find_library(cudart NAMES libcudart.so.${major} NO_DEFAULT_PATH NO_CACHE
      PATHS "${torch_root}/../nvidia/cu${major}/lib" "${torch_root}/../nvidia/cuda_runtime/lib")
    if(cudart)
      set(CUDA_cudart_LIBRARY "${cudart}" CACHE FILEPATH "torch's CUDA runtime" FORCE)
    else()
      set(reason "torch ${STOKER_TORCH_VERSION} has CUDA ${torch_cuda}, newer than ${STOKER_NVCC}'s ${STOKER_NVCC_VERSION}, and no libcudart.so.${major} beside it (${need})")
    endif()
  endif()
  set(STOKER_TORCH_CPU_ONLY "${reason}" PARENT_SCOPE)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/StokerCpuTorch.cmake)

macro(stoker_find_torch)
  if(NOT Torch_DIR)
    # Another torch than the last configure's (or the same one upgraded in place): forget the
    # libraries found for it then.
    set(_stoker_torch_key "${STOKER_TORCH_PREFIX} ${STOKER_TORCH_VERSION} ${STOKER_TORCH_CUDA}")
    if(NOT _stoker_torch_key STREQUAL STOKER_TORCH_KEY_CACHED)
      foreach(found TORCH_LIBRARY c10_LIBRARY C10_CUDA_LIBRARY kineto_LIBRARY CUDA_cudart_LIBRARY)
        unset(${found} CACHE)
      endforeach()
      set(STOKER_TORCH_KEY_CACHED "${_stoker_torch_key}" CACHE INTERNAL "")
    endif()
    # Exactly this torch's CMake files and libraries, before any system LibTorch.
    get_filename_component(_stoker_torch_root "${STOKER_TORCH_PREFIX}/../.." ABSOLUTE)
    set(Torch_DIR "${STOKER_TORCH_PREFIX}/Torch")
    set(Caffe2_DIR "${STOKER_TORCH_PREFIX}/Caffe2")
    list(PREPEND CMAKE_PREFIX_PATH "${_stoker_torch_root}")
  endif()
  if(NOT STOKER_TORCH_CUDA)
    find_package(Torch REQUIRED)
  else()
    stoker_find_nvcc()
    stoker_check_cuda_toolkit("${_stoker_torch_root}")
    if(NOT STOKER_TORCH_CPU_ONLY)
      set(CMAKE_CUDA_COMPILER "${STOKER_NVCC}")
      # Enabled here, its default architectures dropped: torch's CMake files warn about them
      # and use TORCH_CUDA_ARCH_LIST instead.
      enable_language(CUDA)
      unset(CMAKE_CUDA_ARCHITECTURES CACHE)
      unset(CMAKE_CUDA_ARCHITECTURES)
      # No GPU to detect an architecture from: the GPU machine's (H100, H200) unless given.
      if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
        set(TORCH_CUDA_ARCH_LIST "9.0")
      endif()
      # kineto is inside libtorch_cpu in PyPI's wheels; TorchConfig warns when it finds no file.
      set(kineto_LIBRARY "${_stoker_torch_root}/lib/libtorch_cpu.so" CACHE FILEPATH "")
      find_package(Torch REQUIRED)
    else()
      # The wheel's CMake files would fail with a page of errors (no nvcc), or build against
      # two CUDA runtimes (another major version): build CPU only instead.
      stoker_cpu_torch_target("${_stoker_torch_root}" "${STOKER_TORCH_ABI}")
      set(STOKER_CPU_TORCH_PREFIX "${_stoker_torch_root}")  # for the installed package's config
      set(TORCH_INSTALL_PREFIX "${_stoker_torch_root}")
      set(Torch_VERSION "${STOKER_TORCH_VERSION}")
      set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=${STOKER_TORCH_ABI}")
      set(CAFFE2_USE_CUDA OFF)
    endif()
  endif()
endmacro()
