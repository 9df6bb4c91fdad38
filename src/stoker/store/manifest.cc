#include "stoker/store/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "stoker/store/shard_format.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxManifestShardBytes = uint64_t{1} << 50;

// Checks a JSON document without building it (nlohmann's SAX interface), before it is parsed
// into values: at most kMaxManifestValues values (objects, arrays, keys, scalars: a parsed
// value takes 10 to 40 times its text's bytes), nested at most kMaxManifestDepth deep (values
// are printed recursively), no object repeating a key (readers would disagree on which value
// counts).
class DocumentCheck : public nlohmann::json_sax<json> {
 public:
  bool null() override { return count(); }
  bool boolean(bool) override { return count(); }
  bool number_integer(number_integer_t) override { return count(); }
  bool number_unsigned(number_unsigned_t) override { return count(); }
  bool number_float(number_float_t, const string_t&) override { return count(); }
  bool string(string_t&) override { return count(); }
  bool binary(binary_t&) override { return count(); }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return count() && nest();
  }
  bool key(string_t& key) override {
    if (keys_.back().insert(key).second) return count();
    error_ = "key " + json(key).dump() + " repeats";
    return false;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return count() && nest(); }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = std::string("not valid JSON: ") + e.what();
    return false;
  }

  // Why the document was refused.
  const std::string& error() const { return error_; }

 private:
  bool count() {
    if (++values_ <= kMaxManifestValues) return true;
    error_ = fmt::format("more than {} JSON values (objects, arrays, keys, scalars)",
                         kMaxManifestValues);
    return false;
  }
  bool nest() {
    if (++depth_ <= kMaxManifestDepth) return true;
    error_ = fmt::format("JSON nested more than {} deep", kMaxManifestDepth);
    return false;
  }

  std::vector<std::set<std::string>> keys_;  // of each open object
  uint64_t values_ = 0;
  int depth_ = 0;
  std::string error_;
};

// Parses `text` as one JSON document that passes DocumentCheck, with nothing but white space
// after it.
Result<json> parse_json(const std::string& text, const std::string& path) {
  // nlohmann::json stops at a NUL byte as at the end of the input: JSON text holds none.
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    return corrupt(fmt::format("{}: not valid JSON: a NUL byte at offset {}", path, nul));
  DocumentCheck check;
  if (!json::sax_parse(text, &check)) return corrupt(path + ": " + check.error());
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt(path + ": not valid JSON");  // not after DocumentCheck
  return j;
}

Status wrong_type(const std::string& where, const char* key, const char* expected) {
  return corrupt(fmt::format("{}: '{}' must be {}", where, key, expected));
}

// The value of required key `key` of `object`; errors name `where`.
Result<const json*> get_key(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return corrupt(fmt::format("{}: no '{}'", where, key));
  return &*it;
}

Result<std::string> get_string(const json& object, const char* key, const std::string& where) {
  STOKER_ASSIGN_OR_RETURN(const json* value, get_key(object, key, where));
  if (!value->is_string()) return wrong_type(where, key, "a string");
  return value->get<std::string>();
}

// A non-negative integer (JSON numbers such as 1.0, -0 or 1e3 are not).
Result<uint64_t> get_count(const json& object, const char* key, const std::string& where) {
  STOKER_ASSIGN_OR_RETURN(const json* value, get_key(object, key, where));
  if (!value->is_number_unsigned()) return wrong_type(where, key, "a non-negative integer");
  return value->get<uint64_t>();
}

// An integer version from 1 up; kUnsupported if newer than this build reads.
Result<uint32_t> get_format_version(const json& manifest, const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(const json* value, get_key(manifest, "format_version", path));
  if (!value->is_number_integer()) return wrong_type(path, "format_version", "an integer");
  if (!value->is_number_unsigned() || value->get<uint64_t>() == 0)
    return corrupt(path + ": format_version " + value->dump() +
                   " is not a version (they start at 1)");
  const uint64_t version = value->get<uint64_t>();
  if (version > kDatasetFormatVersion)
    return unsupported(
        fmt::format("{}: dataset format version {} is newer than this stoker reads ({})", path,
                    version, kDatasetFormatVersion));
  return static_cast<uint32_t>(version);
}

// A name for a file inside the dataset directory: not empty, `.` or `..`; no `/` or NUL.
bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

Result<ShardInfo> parse_shard(const json& shard, const std::string& where) {
  if (!shard.is_object()) return corrupt(where + ": not a JSON object");
  ShardInfo info;
  STOKER_ASSIGN_OR_RETURN(info.file, get_string(shard, "file", where));
  if (!is_plain_name(info.file))
    return corrupt(where + ": " + json(info.file).dump() + " is not a plain file name");
  STOKER_ASSIGN_OR_RETURN(info.records, get_count(shard, "records", where));
  STOKER_ASSIGN_OR_RETURN(info.bytes, get_count(shard, "bytes", where));
  // No shard is smaller than its header and footer; none is near 2^64 (sums of sizes, a
  // cache's budget, must not wrap): 2^50 (1 PiB) is more than any file system holds.
  if (info.bytes < shard_format::kMinShardBytes || info.bytes > kMaxManifestShardBytes)
    return corrupt(fmt::format("{}: 'bytes' is {}, not a shard's size ({} to 2^50)", where,
                               info.bytes, shard_format::kMinShardBytes));
  STOKER_ASSIGN_OR_RETURN(std::string checksum, get_string(shard, "index_xxh3", where));
  if (checksum.size() != 16 || !std::all_of(checksum.begin(), checksum.end(),
                                            [](unsigned char c) { return std::isxdigit(c) != 0; }))
    return wrong_type(where, "index_xxh3", "16 hex digits");
  info.index_checksum = std::stoull(checksum, nullptr, 16);
  return info;
}

// `count` numbers in [lo, hi] (hi_open: below hi; lo_open: above lo) under `key` of `object`.
Result<std::vector<double>> get_values(const json& object, const char* key, size_t count, double lo,
                                       bool lo_open, double hi, const std::string& where) {
  STOKER_ASSIGN_OR_RETURN(const json* value, get_key(object, key, where));
  const std::string range = fmt::format("{}{}, {}]", lo_open ? "(" : "[", lo, hi);
  const std::string expected =
      fmt::format("an array of {} number{} in {}", count, count == 1 ? "" : "s", range);
  if (!value->is_array() || value->size() != count ||
      !std::all_of(value->begin(), value->end(), [](const json& v) { return v.is_number(); }))
    return corrupt(fmt::format("{}: '{}' must be {} (one per channel)", where, key, expected));
  std::vector<double> values = value->get<std::vector<double>>();
  for (size_t c = 0; c < count; ++c) {
    const double v = values[c];
    if (!std::isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
      return corrupt(fmt::format("{}: '{}' of channel {} is {}, not in {}", where, key, c,
                                 (*value)[c].dump(), range));
  }
  return values;
}

// The "statistics" of `schema`'s field `name`.
Result<FieldStatistics> parse_statistics(const json& value, const std::string& name,
                                         const Schema& schema, const std::string& path) {
  const std::string where = fmt::format("{}: statistics of {}", path, json(name).dump());
  const int f = schema.find(name);
  if (f < 0) return corrupt(where + ": the schema has no such field");
  const Field& field = schema.fields()[f];
  const int channels = statistics_channels(field);
  if (channels == 0)
    return corrupt(fmt::format(
        "{}: a {} field of {} dimensions has none (only uint8 [C,H,W] or [H,W] and bytes fields)",
        where, dtype_name(field.dtype), field.shape.size()));
  if (!value.is_object()) return corrupt(where + ": not a JSON object");
  FieldStatistics stats;
  STOKER_ASSIGN_OR_RETURN(stats.mean, get_values(value, "mean", channels, 0, false, 1, where));
  STOKER_ASSIGN_OR_RETURN(stats.std, get_values(value, "std", channels, 0, true, 0.5, where));
  STOKER_ASSIGN_OR_RETURN(stats.pixels, get_count(value, "pixels", where));
  if (stats.pixels == 0) return corrupt(where + ": 'pixels' is 0");
  // n values of 0..255, not all equal, have a std of at least sqrt(n - 1) / n steps (one value
  // a step from the others): a smaller one is no data's, and training would divide by it.
  const double n = static_cast<double>(stats.pixels);
  const double least = std::sqrt(n - 1) / n / 255 * (1 - 1e-9);
  for (size_t c = 0; c < stats.std.size(); ++c) {
    if (stats.std[c] < least)
      return corrupt(fmt::format(
          "{}: 'std' of channel {} is {}, below {:.3g}, the least that {} pixels of 0..255 can "
          "have",
          where, c, stats.std[c], least, stats.pixels));
  }
  return stats;
}

// The "max_lengths" of `manifest`: required with, and only with, variable-length fields: one
// count per such field, at most the rows a u32 length holds.
Result<std::map<std::string, uint64_t>> parse_max_lengths(const json& manifest,
                                                          const Schema& schema,
                                                          const std::string& path) {
  std::map<std::string, uint64_t> max_lengths;
  const bool needed = schema.format_version() >= 2;
  if (!manifest.contains("max_lengths")) {
    if (needed) return corrupt(path + ": no 'max_lengths' (the schema has variable-length fields)");
    return max_lengths;
  }
  const json& value = manifest.at("max_lengths");
  if (!value.is_object()) return wrong_type(path, "max_lengths", "an object");
  const std::string where = path + ": max_lengths";
  for (const auto& [name, count] : value.items()) {
    const int f = schema.find(name);
    if (f < 0 || !schema.fields()[f].is_variable_length())
      return corrupt(fmt::format("{}: {} is not a variable-length field of the schema", where,
                                 json(name).dump()));
    STOKER_ASSIGN_OR_RETURN(const uint64_t rows, get_count(value, name.c_str(), where));
    const uint64_t most = shard_format::kMaxPayloadBytes / schema.fields()[f].row_bytes();
    if (rows > most)
      return corrupt(fmt::format("{}: {} of {} is more than the {} rows a record can hold", where,
                                 rows, json(name).dump(), most));
    max_lengths[name] = rows;
  }
  for (const Field& field : schema.fields()) {
    if (field.is_variable_length() && !max_lengths.count(field.name))
      return corrupt(
          fmt::format("{}: no entry for variable-length field {}", where, json(field.name).dump()));
  }
  return max_lengths;
}

}  // namespace

std::string Manifest::to_json() const {
  json shard_list = json::array();
  for (const ShardInfo& s : shards) {
    shard_list.push_back({{"file", s.file},
                          {"records", s.records},
                          {"bytes", s.bytes},
                          {"index_xxh3", fmt::format("{:016x}", s.index_checksum)}});
  }
  json j = {{"format", "stoker-dataset"},
            {"format_version", format_version},
            {"schema", json::parse(schema.to_json())},
            {"records", records},
            {"shards", shard_list},
            {"source", source},
            {"class_names", class_names}};
  for (const auto& [field, stats] : statistics)
    j["statistics"][field] = {{"mean", stats.mean}, {"std", stats.std}, {"pixels", stats.pixels}};
  if (record_shuffle_seed)
    j["record_order"] = {{"order", "shuffled"}, {"seed", *record_shuffle_seed}};
  if (!max_lengths.empty()) j["max_lengths"] = max_lengths;
  return j.dump(2) + "\n";
}

Status Manifest::save(const std::string& dir) const {
  return write_file_atomically(dir + "/" + kManifestName, to_json());
}

Result<Manifest> Manifest::load(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  std::error_code ec;  // a path the system cannot resolve (a symlink loop) is no directory
  if (std::filesystem::is_regular_file(dir, ec))
    return not_found(dir + ": a file, not a dataset (a directory holding " + kManifestName + ")");
  if (!std::filesystem::is_directory(dir, ec))
    return not_found(dir + ": no such dataset directory");
  Result<std::string> read = read_file(path, kMaxManifestBytes);
  if (read.status().code() == StatusCode::kNotFound)
    return not_found(dir + ": not a stoker dataset (no " + kManifestName + ")");
  STOKER_ASSIGN_OR_RETURN(std::string text, std::move(read));
  return parse(text, path);
}

Result<Manifest> Manifest::parse(const std::string& text, const std::string& path) {
  if (text.size() > kMaxManifestBytes)
    return invalid_argument(
        fmt::format("{}: larger than {} bytes, the limit for this file", path, kMaxManifestBytes));
  STOKER_ASSIGN_OR_RETURN(json j, parse_json(text, path));
  if (!j.is_object()) return corrupt(path + ": not a JSON object");
  STOKER_ASSIGN_OR_RETURN(std::string format, get_string(j, "format", path));
  if (format != "stoker-dataset") return corrupt(path + ": not a stoker dataset manifest");
  Manifest m;
  STOKER_ASSIGN_OR_RETURN(m.format_version, get_format_version(j, path));
  STOKER_ASSIGN_OR_RETURN(const json* schema, get_key(j, "schema", path));
  if (!schema->is_object()) return wrong_type(path, "schema", "an object");
  STOKER_ASSIGN_OR_RETURN(m.schema, Schema::from_json(schema->dump(), path));
  if (m.format_version < m.schema.format_version())
    return corrupt(
        fmt::format("{}: format_version {} with variable-length fields (which need version {})",
                    path, m.format_version, m.schema.format_version()));
  STOKER_ASSIGN_OR_RETURN(m.records, get_count(j, "records", path));
  STOKER_ASSIGN_OR_RETURN(const json* shards, get_key(j, "shards", path));
  if (!shards->is_array()) return wrong_type(path, "shards", "an array");
  std::set<std::string> names;
  uint64_t total = 0;
  for (size_t i = 0; i < shards->size(); ++i) {
    STOKER_ASSIGN_OR_RETURN(ShardInfo info,
                            parse_shard((*shards)[i], fmt::format("{}: shard {}", path, i)));
    if (!names.insert(info.file).second)
      return corrupt(fmt::format("{}: shard {} is listed twice", path, json(info.file).dump()));
    if (info.records > std::numeric_limits<uint64_t>::max() - total)
      return corrupt(path + ": shard record counts add up to more than 2^64");
    total += info.records;
    m.shards.push_back(std::move(info));
  }
  if (total != m.records)
    return corrupt(path + ": shard record counts add up to " + std::to_string(total) + ", not " +
                   std::to_string(m.records));
  if (j.contains("source")) {
    STOKER_ASSIGN_OR_RETURN(m.source, get_string(j, "source", path));
  }
  if (j.contains("class_names")) {
    const json& names_json = j.at("class_names");
    if (!names_json.is_array() || !std::all_of(names_json.begin(), names_json.end(),
                                               [](const json& n) { return n.is_string(); }))
      return wrong_type(path, "class_names", "an array of strings");
    m.class_names = names_json.get<std::vector<std::string>>();
  }
  if (j.contains("record_order")) {
    const std::string where = path + ": record_order";
    const json& order = j.at("record_order");
    if (!order.is_object()) return wrong_type(path, "record_order", "an object");
    STOKER_ASSIGN_OR_RETURN(const std::string kind, get_string(order, "order", where));
    if (kind != "shuffled")
      return corrupt(where + ": 'order' " + json(kind).dump() + " is not \"shuffled\"");
    STOKER_ASSIGN_OR_RETURN(m.record_shuffle_seed, get_count(order, "seed", where));
  }
  STOKER_ASSIGN_OR_RETURN(m.max_lengths, parse_max_lengths(j, m.schema, path));
  if (j.contains("statistics")) {
    const json& statistics = j.at("statistics");
    if (!statistics.is_object()) return wrong_type(path, "statistics", "an object");
    for (const auto& [name, value] : statistics.items()) {
      STOKER_ASSIGN_OR_RETURN(m.statistics[name], parse_statistics(value, name, m.schema, path));
    }
  }
  return m;
}

}  // namespace stoker
