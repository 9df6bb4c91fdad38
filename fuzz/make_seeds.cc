// Writes the seed corpus of shard_fuzz: a few small valid shards (fixed fields only, bytes
// fields between fixed ones, bytes only, no records) into the directory given as argv[1].
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "stoker/store/shard_writer.h"
#include "stoker/testing/records.h"

int main(int argc, char** argv) {
  using namespace stoker;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::vector<std::vector<Field>> schemas = {
      {{"image", DType::kUint8, {1, 4, 4}}, {"label", DType::kInt64, {}}},
      {{"a", DType::kBytes, {}}, {"label", DType::kInt64, {}}, {"b", DType::kBytes, {}}},
      {{"jpeg", DType::kBytes, {}}},
      {{"x", DType::kFloat32, {2, 3}}},
      // Version 2: boxes and labels sharing N, tokens of their own length.
      {{"boxes", DType::kFloat32, {4}, "N"},
       {"id", DType::kInt64, {}},
       {"labels", DType::kInt64, {}, "N"},
       {"tokens", DType::kUint8, {}, "T"}},
  };
  std::mt19937_64 rng(1);
  try {
    for (size_t s = 0; s < schemas.size(); ++s) {
      Schema schema = Schema::create(schemas[s]).value_or_throw();
      const std::string path = std::string(argv[1]) + "/seed-" + std::to_string(s) + ".stk";
      ShardWriter writer = ShardWriter::create(path, schema).value_or_throw();
      for (size_t i = 0; i < 3 - s % 4; ++i) {
        std::vector<uint8_t> record = testing::random_record(schema, rng, 24);
        throw_if_error(writer.append(record.data(), record.size()));
      }
      throw_if_error(writer.finish());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
