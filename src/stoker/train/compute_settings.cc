#include "stoker/train/compute_settings.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace stoker {

void set_compute_settings(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto set_openblas =
          reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set_openblas(threads);
  at::globalContext().setBenchmarkCuDNN(true);
}

}  // namespace stoker
