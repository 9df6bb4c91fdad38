#include "stoker/store/manifest.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/util/atomic_file.h"

namespace stoker {

using nlohmann::json;

Status Manifest::save(const std::string& dir) const {
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
  return write_file_atomically(dir + "/" + kManifestName, j.dump(2) + "\n");
}

Result<Manifest> Manifest::load(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  if (!std::filesystem::is_directory(dir)) return not_found(dir + ": no such dataset directory");
  if (!std::filesystem::exists(path))
    return not_found(dir + ": not a stoker dataset (no " + kManifestName + ")");
  STOKER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt(path + ": not valid JSON");
  Manifest m;
  try {
    if (j.at("format").get<std::string>() != "stoker-dataset")
      return corrupt(path + ": not a stoker dataset manifest");
    m.format_version = j.at("format_version").get<uint32_t>();
    if (m.format_version > kDatasetFormatVersion)
      return unsupported(path + ": dataset format version " + std::to_string(m.format_version) +
                         " is newer than this stoker reads (" +
                         std::to_string(kDatasetFormatVersion) + ")");
    STOKER_ASSIGN_OR_RETURN(m.schema, Schema::from_json(j.at("schema").dump(), path));
    m.records = j.at("records").get<uint64_t>();
    for (const json& s : j.at("shards")) {
      ShardInfo info;
      info.file = s.at("file").get<std::string>();
      if (info.file.empty() || info.file.find('/') != std::string::npos)
        return corrupt(path + ": shard name '" + info.file + "' is not a plain file name");
      info.records = s.at("records").get<uint64_t>();
      info.bytes = s.at("bytes").get<uint64_t>();
      info.index_checksum = std::stoull(s.at("index_xxh3").get<std::string>(), nullptr, 16);
      m.shards.push_back(std::move(info));
    }
    m.source = j.value("source", "");
    m.class_names = j.value("class_names", std::vector<std::string>{});
  } catch (const std::exception& e) {
    return corrupt(path + ": malformed manifest: " + e.what());
  }
  uint64_t total = 0;
  for (const ShardInfo& s : m.shards) total += s.records;
  if (total != m.records)
    return corrupt(path + ": shard record counts add up to " + std::to_string(total) + ", not " +
                   std::to_string(m.records));
  return m;
}

}  // namespace stoker
