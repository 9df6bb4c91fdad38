// Writes the megatron_index fuzz target's seed corpus into a directory: a data file's size (8
// bytes) then a Megatron-LM index as its _IndexWriter writes it (contiguous sequences, sequences
// out of order, an empty one, a multimodal index's modes), and one cut short.
#include <fstream>
#include <iostream>
#include <string>

#include "stoker/testing/megatron_bytes.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: megatron_index_fuzz_seeds DIR\n";
    return 2;
  }
  using stoker::testing::append_le;
  using stoker::testing::megatron_index_bytes;
  // The data file's size, then the index.
  auto seed = [](uint64_t bin_size, const std::string& index) {
    std::string out;
    append_le(out, bin_size);
    return out + index;
  };
  const std::string plain = seed(40, megatron_index_bytes(8, {12, 8}, {0, 24}, {0, 1, 2}));
  const std::string seeds[] = {
      plain, seed(18, megatron_index_bytes(8, {4, 3, 2, 0}, {6, 0, 14, 18}, {0, 1, 3, 4})),
      seed(64, megatron_index_bytes(4, {10, 6}, {0, 40}, {0, 2}) + std::string(2, '\1')),
      seed(16, megatron_index_bytes(5, {2}, {0}, {0, 1})), plain.substr(0, 50)};
  int k = 0;
  for (const std::string& bytes : seeds)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++), std::ios::binary) << bytes;
  return 0;
}
