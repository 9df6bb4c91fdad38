// A library preloaded into the tests' Python (reference_python.h, and scripts/test.sh's python
// stage) so that MKL dispatches as it does on an Intel CPU with this CPU's vector extensions.
// MKL asks these two functions whether the CPU is Intel's; where they say no (AMD's CPUs), its
// float32 products round as its AVX2 kernel's whatever the CPU has (on an AMD EPYC with AVX-512,
// every MKL_CBWR branch gives the same affine grids), where an Intel Xeon runs its AVX-512
// kernel. Preloaded, a machine of either vendor with AVX-512 computes what the Xeon computes.
// MKL is linked into libtorch_cpu.so, which exports both, so these definitions win. On an
// Intel CPU they change nothing.

extern "C" {
__attribute__((visibility("default"))) int mkl_serv_intel_cpu_true() { return 1; }
__attribute__((visibility("default"))) int mkl_serv_intel_cpu() { return 1; }
}
