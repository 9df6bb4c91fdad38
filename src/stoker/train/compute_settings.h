#pragma once
// The process's compute settings, the caller's to set (the CLI does; contract 9: the library
// sets nothing process-wide; the Trainer only reads them), before training starts:
// - how many threads the math libraries use. torch::set_num_threads bounds LibTorch's intra-op
//   pool but not OpenBLAS, which runs its own pool of one thread per core: on a 2-core machine
//   that pool then competes with the loader's worker. OpenBLAS is bounded too when it is the
//   BLAS the process loaded (looked up at run time: no link-time dependency on a BLAS vendor);
// - cuDNN's autotuning (PyTorch's cudnn.benchmark): a run's input shape is fixed (the schema's,
//   or the image size), so cuDNN times its convolution algorithms once per shape and keeps the
//   fastest. No effect on the CPU.

namespace stoker {

void set_compute_settings(int threads);

}  // namespace stoker
