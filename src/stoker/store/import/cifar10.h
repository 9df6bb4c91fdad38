#pragma once
// CIFAR-10 importer: the dataset's binary version (docs/FORMAT.md). data_batch_1.bin ..
// data_batch_5.bin become OUT/train, test_batch.bin OUT/test, and batches.meta.txt gives the
// class names. Each record of a .bin file is 1 label byte and 3072 pixel bytes: 1024 red, then
// 1024 green, then 1024 blue, each plane 32 rows of 32 — which is the CHW layout of
// torchvision's ToTensor, so the record's image is those bytes as they are.

#include <cstdint>
#include <functional>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

// The files of CIFAR-10's binary version.
constexpr const char* kCifar10TrainFiles[] = {"data_batch_1.bin", "data_batch_2.bin",
                                              "data_batch_3.bin", "data_batch_4.bin",
                                              "data_batch_5.bin"};
constexpr const char* kCifar10TestFile = "test_batch.bin";
constexpr const char* kCifar10MetaFile = "batches.meta.txt";
constexpr int kCifar10Classes = 10;
// Bytes of one record in a .bin file: the label, then the 3 x 32 x 32 image.
constexpr uint64_t kCifar10RecordBytes = 1 + 3 * 32 * 32;

struct Cifar10ImportOptions {
  std::string src;  // directory holding the .bin files and batches.meta.txt
  std::string out;  // OUT/train and OUT/test are created (neither may exist)
  uint64_t shard_bytes = uint64_t{256} << 20;
  // Polled before each record; true stops the import (kCancelled, nothing left). Optional.
  std::function<bool()> stop_requested;
};

struct Cifar10ImportCounts {
  uint64_t train = 0;  // records written to OUT/train
  uint64_t test = 0;   // records written to OUT/test
};

// Converts CIFAR-10 into two datasets with fields
//   image: uint8 [3, 32, 32] (CHW)   label: int64 scalar
// and the class names of batches.meta.txt in their manifests. Every file is checked before
// anything is written: it exists and is a regular file, its size is a whole, non-zero number
// of records (the real files hold 10,000 each; any whole count is accepted), and the meta file
// holds exactly 10 names (one per line; trailing blank lines ignored) of valid UTF-8. Then
// each label must be below 10. Errors are one line naming the file (and the record, counted
// from 0). Memory is bounded by a buffer, whatever the files' size. Nothing is left at OUT on
// failure (SplitWriter).
Result<Cifar10ImportCounts> import_cifar10(const Cifar10ImportOptions& options);

}  // namespace stoker
