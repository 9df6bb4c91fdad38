#include <stoker/store/dataset.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATASET_DIR\n", argv[0]);
    return 2;
  }
  try {
    auto dataset = stoker::Dataset::open(argv[1]).value_or_throw();  // throws stoker::Error
    std::printf("%llu records\n", static_cast<unsigned long long>(dataset->size()));
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());  // one line naming the file
    return 1;
  }
  return 0;
}
