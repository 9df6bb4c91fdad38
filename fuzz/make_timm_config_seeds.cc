// Writes the timm config fuzz target's seed corpus into a directory: configs timm's own
// recipes and docs use (RandAugment and AugMix), one file each.
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: timm_config_fuzz_seeds DIR\n";
    return 2;
  }
  const char* const configs[] = {"rand-m9-mstd0.5-inc1",
                                 "rand-m9-mstd0.5",
                                 "rand-m7-n3-p1",
                                 "rand-m15-mmax20-n2-p0.8-inc1",
                                 "rand-mstd1-tweights",
                                 "rand-m9-n3-mstd101",
                                 "rand",
                                 "augmix-m3-w3",
                                 "augmix-m5-w4-d2",
                                 "augmix-m9-mstd0.5-a0.5-b0",
                                 "augmix"};
  int k = 0;
  for (const char* config : configs)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++)) << config;
  return 0;
}
