#pragma once
// Test helpers: random schemas and records, and writing them as a dataset.

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/store/dataset_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/store/schema.h"
#include "stoker/store/shard_format.h"

namespace stoker::testing {

// A schema of 1-4 fields of random dtypes and small shapes (bytes fields included).
inline Schema random_schema(std::mt19937_64& rng) {
  std::vector<Field> fields;
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    Field f;
    f.name = "f" + std::to_string(i);
    f.dtype = static_cast<DType>(rng() % 4);
    if (f.is_fixed()) {
      int dims = static_cast<int>(rng() % 3);
      for (int d = 0; d < dims; ++d) f.shape.push_back(1 + static_cast<int64_t>(rng() % 7));
    }
    fields.push_back(f);
  }
  return Schema::create(fields).value_or_throw();
}

// A record of random field values; bytes fields get 0..max_bytes random bytes, variable-length
// fields as many rows as fit max_bytes (0 included), the same for fields sharing a dimension.
inline std::vector<uint8_t> random_record(const Schema& schema, std::mt19937_64& rng,
                                          size_t max_bytes = 300) {
  RecordEncoder encoder(schema);
  std::map<std::string, uint64_t> rows;  // per dimension name
  for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
    const Field& field = schema.fields()[f];
    if (field.is_variable_length()) {
      auto [dim, first] = rows.try_emplace(field.length_dim, 0);
      if (first) dim->second = rng() % (max_bytes / field.row_bytes() + 1);
      std::vector<uint8_t> value(dim->second * field.row_bytes());
      for (uint8_t& b : value) b = static_cast<uint8_t>(rng());
      throw_if_error(encoder.set_rows(f, value.data(), dim->second));
      continue;
    }
    std::vector<uint8_t> value(field.is_fixed() ? field.fixed_bytes() : rng() % (max_bytes + 1));
    for (uint8_t& b : value) b = static_cast<uint8_t>(rng());
    Status s = field.is_fixed() ? encoder.set_fixed(f, value.data(), value.size())
                                : encoder.set_bytes(f, value.data(), value.size());
    throw_if_error(s);
  }
  return encoder.encode();
}

// Writes `records` as a dataset at `dir` with shards of about `shard_bytes`.
inline void write_dataset(const std::string& dir, const Schema& schema,
                          const std::vector<std::vector<uint8_t>>& records,
                          uint64_t shard_bytes = uint64_t{256} << 20) {
  DatasetWriterOptions options;
  options.shard_bytes = shard_bytes;
  auto writer = DatasetWriter::create(dir, schema, options).value_or_throw();
  for (const auto& r : records) throw_if_error(writer->append(r.data(), r.size()));
  throw_if_error(writer->finish());
}

// A dataset of `n` records {image: uint8 [1,2,2] = i*4+k, label: int64 = i % classes}.
inline void write_labelled_dataset(const std::string& dir, int64_t n, int64_t classes = 10,
                                   uint64_t shard_bytes = uint64_t{256} << 20) {
  Schema schema =
      Schema::create({{"image", DType::kUint8, {1, 2, 2}}, {"label", DType::kInt64, {}}})
          .value_or_throw();
  RecordEncoder encoder(schema);
  std::vector<std::vector<uint8_t>> records;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t image[4];
    for (int k = 0; k < 4; ++k) image[k] = static_cast<uint8_t>(i * 4 + k);
    int64_t label = i % classes;
    throw_if_error(encoder.set_fixed(0, image, 4));
    throw_if_error(encoder.set_fixed(1, &label, 8));
    records.push_back(encoder.encode());
  }
  write_dataset(dir, schema, records, shard_bytes);
}

// Shard file path and byte offset of global record i of the dataset at `dir`.
inline std::pair<std::string, uint64_t> record_location(const std::string& dir, uint64_t i) {
  auto dataset = Dataset::open(dir).value_or_throw();
  Dataset::Location at = dataset->locate(i);
  const ShardReader& shard = dataset->shard(at.shard);
  const uint64_t start = shard_format::data_start(dataset->schema().to_json().size());
  const uint64_t offset = start + (shard.record(at.record).data - shard.record(0).data);
  return {dir + "/" + dataset->manifest().shards[at.shard].file, offset};
}

// Flips one bit of the byte at `offset` in the file at `path`.
inline void flip_byte(const std::string& path, uint64_t offset) {
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  std::fseek(f, static_cast<long>(offset), SEEK_SET);
  int c = std::fgetc(f);
  std::fseek(f, static_cast<long>(offset), SEEK_SET);
  std::fputc(c ^ 0x10, f);
  std::fclose(f);
}

}  // namespace stoker::testing
