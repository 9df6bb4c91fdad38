#pragma once
// Sets how many threads the math libraries use. torch::set_num_threads bounds LibTorch's
// intra-op pool but not Debian's OpenBLAS, which runs its own pool of one thread per core (a
// 2048x2048 matmul measured 2.1 s of CPU in 1.6 s wall with "1" thread): on a 2-core machine
// that pool then competes with the loader's worker. OpenBLAS is bounded too when it is the BLAS
// the process loaded (looked up at run time: no link-time dependency on a BLAS vendor).

namespace stoker {

// Process-wide, so the caller's to set (the CLI does; the Trainer only reads the count); call
// before training starts.
void set_compute_threads(int threads);

}  // namespace stoker
