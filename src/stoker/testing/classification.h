#pragma once
// Test helper: a small, easily learnt image-classification dataset for trainer tests.

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "stoker/store/dataset_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/store/schema.h"

namespace stoker::testing {

constexpr int64_t kRowClasses = 4;

// Writes a dataset of `n` records {image: uint8 [1,4,4], label: int64} at `dir`: label c in
// [0, kRowClasses) is drawn as a bright row c on a noisy dark background. `label_of(i)`, if
// given, overrides the stored label of record i (the image keeps its row); `class_names` go
// into the manifest.
inline void write_rows_dataset(const std::string& dir, int64_t n, uint64_t seed,
                               std::vector<std::string> class_names = {},
                               const std::function<int64_t(int64_t)>& label_of = nullptr) {
  Schema schema =
      Schema::create({{"image", DType::kUint8, {1, 4, 4}}, {"label", DType::kInt64, {}}})
          .value_or_throw();
  std::mt19937_64 rng(seed);
  RecordEncoder encoder(schema);
  DatasetWriterOptions options;
  options.class_names = std::move(class_names);
  auto writer = DatasetWriter::create(dir, schema, options).value_or_throw();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = static_cast<int64_t>(rng() % kRowClasses);
    uint8_t image[16];
    for (int p = 0; p < 16; ++p) {
      image[p] = static_cast<uint8_t>(p / 4 == label ? 180 + rng() % 76 : rng() % 60);
    }
    const int64_t stored = label_of ? label_of(i) : label;
    throw_if_error(encoder.set_fixed(0, image, sizeof(image)));
    throw_if_error(encoder.set_fixed(1, &stored, sizeof(stored)));
    const std::vector<uint8_t> record = encoder.encode();
    throw_if_error(writer->append(record.data(), record.size()));
  }
  throw_if_error(writer->finish());
}

}  // namespace stoker::testing
