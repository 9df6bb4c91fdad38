# stoker_cpu_torch_target(PREFIX ABI): the `torch` target of a CUDA wheel of torch used without
# a CUDA toolkit of its major version: its CPU libraries and headers under PREFIX, libstdc++'s
# ABI (0 or 1) as torch's. The build makes it (StokerTorch.cmake), and an installed stoker built
# so makes it again for its users (stokerConfig.cmake), where torch's own CMake files would
# look for that toolkit.
function(stoker_cpu_torch_target prefix abi)
  set(lib "${prefix}/lib")
  add_library(torch INTERFACE IMPORTED GLOBAL)
  set_target_properties(torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${prefix}/include;${prefix}/include/torch/csrc/api/include"
    INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=${abi};USE_DISTRIBUTED;USE_C10D_GLOO"
    INTERFACE_LINK_LIBRARIES "${lib}/libtorch.so;${lib}/libtorch_cpu.so;${lib}/libc10.so")
endfunction()
