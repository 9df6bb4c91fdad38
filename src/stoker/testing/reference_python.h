#pragma once
// Test helper: the Python that runs the references (STOKER_PYTHON), pinned to one MKL code path,
// and the check of how torchvision itself differs by CPU (docs/DESIGN.md, "Exact on every CPU").
// torch's float32 BLAS products go through MKL, whose kernel depends on the CPU: torchvision's
// affine grid (rotate, shear, translate of a tensor) is one, and Intel's AVX-512 kernel rounds
// some grid points otherwise than the AVX2 one (which AMD's CPUs run too). Under MKL_CBWR=AVX2
// the product is the same on every x86-64 CPU with AVX2, and stoker must equal that. MKL's
// dispatch is an Intel CPU's on any machine: MKL is made to take this CPU for Intel's
// (mkl_as_intel.cc), so on one with AVX-512, of either vendor, it is an Intel Xeon's.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "stoker/testing/build_paths.h"

namespace stoker::testing {

// STOKER_PYTHON with MKL dispatching as on an Intel CPU with this CPU's vector extensions: what
// torchvision gives on an Intel Xeon where this machine has AVX-512, whatever its vendor.
inline std::string intel_dispatch_python() {
  return std::string("LD_PRELOAD=") + kMklAsIntelPath + " " STOKER_PYTHON;
}

// `python` with MKL on its AVX2 path whatever the environment asks (MKL_ENABLE_INSTRUCTIONS=AVX512
// would overrule MKL_CBWR alone).
inline std::string mkl_pinned(const std::string& python) {
  return "MKL_CBWR=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 " + python;
}

// Every reference run: pinned as on an Intel CPU, so that a reference left unpinned fails on
// AMD's CPUs with AVX-512 too, not on Intel's only.
inline std::string reference_python() { return mkl_pinned(intel_dispatch_python()); }

// torchvision's samples with MKL's Intel dispatch (`native`, intel_dispatch_python) against the
// pinned ones (`pinned`, the same samples): they may differ only where `grid[k]` (the sample
// goes through torch's affine grid), a grid point rounded otherwise and the interpolation taking
// a neighbour's pixel (17 of 300 samples on an Intel Xeon with AVX-512). Prints how many differ.
inline void expect_cpu_dependence_in_grid_only(const std::vector<std::vector<uint8_t>>& pinned,
                                               const std::vector<std::vector<uint8_t>>& native,
                                               const std::vector<bool>& grid,
                                               const std::vector<std::string>& labels) {
  ASSERT_EQ(native.size(), pinned.size());
  size_t differ = 0;
  int unexplained = 0;
  for (size_t k = 0; k < pinned.size(); ++k) {
    if (native[k] == pinned[k]) continue;
    ++differ;
    if (!grid[k] && ++unexplained <= 5) {
      ADD_FAILURE() << labels[k] << ": torchvision with MKL's Intel dispatch differs from "
                    << "its MKL_CBWR=AVX2 run, and no affine grid explains it";
    }
  }
  EXPECT_EQ(unexplained, 0) << "samples unlike torchvision's with MKL pinned, no grid among them";
  std::printf(
      "torchvision with MKL's Intel dispatch: %zu of %zu samples differ from "
      "MKL_CBWR=AVX2's\n",
      differ, pinned.size());
}

}  // namespace stoker::testing
