// Writes the npy fuzz target's seed corpus into a directory: .npy files as numpy writes them
// (versions 1.0, 2.0 and 3.0; C and Fortran order; a scalar, rows, an empty array, a structured
// dtype) with their data, and a header cut short.
#include <fstream>
#include <iostream>
#include <string>

#include "stoker/testing/npy_bytes.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: npy_fuzz_seeds DIR\n";
    return 2;
  }
  using stoker::testing::npy_bytes;
  const std::string grid = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                     std::string(24, 'f'));
  const std::string seeds[] = {
      grid,
      npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3, 2), }", std::string(48, 'i'),
                2),
      npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (), }", "\x07", 3),
      npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", std::string(32, 'd')),
      npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (0, 2), }"),
      npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "abcd"),
      grid.substr(0, 40)};
  int k = 0;
  for (const std::string& seed : seeds)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++), std::ios::binary) << seed;
  return 0;
}
