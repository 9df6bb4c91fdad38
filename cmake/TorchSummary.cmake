# stoker_torch_summary(): one configure-time line saying which LibTorch was found (its CMake
# directory and version), its C++ ABI, whether it was built with CUDA (and which toolkit its
# CMake files found) and whether an NCCL library sits beside it. Call after find_package(Torch).
# Reads only what TorchConfig.cmake / Caffe2Config.cmake set. Sets STOKER_NCCL_INCLUDE_DIR in
# the caller's scope when NCCL (library and nccl.h) is there: the distributed code then builds
# its NCCL backend (src/stoker/distributed/CMakeLists.txt); and STOKER_BUILD_SUMMARY, the line's
# CUDA and NCCL part, which `stoker env` prints.
function(stoker_torch_summary)
  set(abi "${STOKER_TORCH_ABI}")
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
    set(abi "${CMAKE_MATCH_1}")
  endif()
  if(CAFFE2_USE_CUDA)
    if(DEFINED CUDAToolkit_VERSION)
      set(cuda "CUDA ${CUDAToolkit_VERSION}")
    else()
      set(cuda "CUDA ${CUDA_VERSION}")
    endif()
    if(STOKER_NVCC_VERSION VERSION_LESS STOKER_TORCH_CUDA)  # cmake/StokerTorch.cmake
      set(cuda "${cuda} toolkit, torch's CUDA ${STOKER_TORCH_CUDA} runtime (${CUDA_cudart_LIBRARY})")
    endif()
    # PyTorch's wheels load NCCL from the nvidia-nccl package beside torch; a LibTorch archive
    # or a source build keeps it in its own lib/.
    find_library(STOKER_NCCL_LIBRARY NAMES nccl libnccl.so.2
      HINTS "${TORCH_INSTALL_PREFIX}/lib" "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/lib"
      NO_CACHE)
    find_path(STOKER_NCCL_INCLUDE_DIR NAMES nccl.h
      HINTS "${TORCH_INSTALL_PREFIX}/include" "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include"
      NO_CACHE)
    if(STOKER_NCCL_LIBRARY AND STOKER_NCCL_INCLUDE_DIR)
      file(STRINGS "${STOKER_NCCL_INCLUDE_DIR}/nccl.h" nccl_version
        REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
      string(REGEX REPLACE "[^;]* ([0-9]+)" "\\1" nccl_version "${nccl_version}")
      string(REPLACE ";" "." nccl_version "${nccl_version}")
      set(nccl "NCCL ${nccl_version} (${STOKER_NCCL_LIBRARY})")
      set(STOKER_NCCL_INCLUDE_DIR "${STOKER_NCCL_INCLUDE_DIR}" PARENT_SCOPE)
    elseif(STOKER_NCCL_LIBRARY)
      set(nccl "NCCL ${STOKER_NCCL_LIBRARY} without nccl.h (the nccl backend is left out)")
    else()
      set(nccl "no NCCL library found")
    endif()
  elseif(STOKER_TORCH_CPU_ONLY)
    set(cuda "CPU only: ${STOKER_TORCH_CPU_ONLY}")
    set(nccl "no NCCL")
  else()
    set(cuda "CPU only (no CUDA)")
    set(nccl "no NCCL")
  endif()
  message(STATUS
    "stoker: LibTorch ${Torch_VERSION} from ${Torch_DIR}, C++ ABI ${abi}, ${cuda}, ${nccl}")
  # What `stoker env` prints as the build's line: the same words.
  set(STOKER_BUILD_SUMMARY "${cuda}, ${nccl}" PARENT_SCOPE)
endfunction()
