#pragma once
// Manifest: the `manifest.json` that makes a directory a dataset (docs/FORMAT.md). It is
// written last, so a directory without one is never mistaken for a complete dataset.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/channel_statistics.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

constexpr const char* kManifestName = "manifest.json";
// The newest manifest version this build reads (docs/FORMAT.md "Versioning"); a dataset is
// written in the version its schema needs (Schema::format_version).
constexpr uint32_t kDatasetFormatVersion = 2;
// A larger manifest is refused without reading it (docs/FORMAT.md).
constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
// A manifest holding more JSON values (objects, arrays, keys and scalars) is refused while it is
// parsed, which bounds its memory to about 150 MiB (docs/FORMAT.md): 2^20, room for 100,000
// shards.
constexpr uint64_t kMaxManifestValues = uint64_t{1} << 20;
// ... and so is one whose arrays and objects nest deeper than this.
constexpr int kMaxManifestDepth = 64;

struct ShardInfo {
  std::string file;  // name relative to the dataset directory
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t index_checksum = 0;  // XXH3-64 of the shard's index, cross-checked on open
};

struct Manifest {
  uint32_t format_version = 1;  // at least schema.format_version()
  Schema schema;
  uint64_t records = 0;
  std::vector<ShardInfo> shards;
  std::string source;                    // where the data came from (informational)
  std::vector<std::string> class_names;  // names of label values, if known
  // Pixel statistics of image fields, by field name (DatasetWriter computes them); a dataset
  // written by an older stoker has none.
  std::map<std::string, FieldStatistics> statistics;
  // Set when the converter wrote the records in a permutation of the source's order drawn from
  // this seed (`convert imagefolder --record-order shuffled`); unset: the source's order.
  std::optional<uint64_t> record_shuffle_seed;
  // "max_lengths": for each variable-length field of the schema (and no other), by name, the
  // most rows any record has (0 without records); what a batch sizes its slots from.
  std::map<std::string, uint64_t> max_lengths;

  // How a source read in place makes several samples of each record, in one line, where it
  // does (its records are then those samples: ShardReader::in_memory's parts): a video folder's
  // clips, "video_clips(frames_per_clip=16, step_between_clips=1, frame_rate=none)"
  // (video/video_clips.h). Empty: a sample per record. Not saved: no dataset directory has it.
  std::string sample_parts;
  // Reads DIR/manifest.json, checking every key docs/FORMAT.md specifies (type, range, plain
  // and unique shard names, record counts that add up, statistics of a field of the schema that
  // has them, with one finite value per channel of the field, mean in [0, 1], std in (0, 0.5],
  // at least one pixel; a max_lengths entry for every variable-length field and none else; a
  // format version no older than the schema needs). kNotFound if the directory holds none;
  // kInvalidArgument if it is not a regular file or is larger than kMaxManifestBytes; kCorrupt
  // if it is not valid (too many values or too deep included); kUnsupported if its format
  // version is newer than this build reads.
  static Result<Manifest> load(const std::string& dir);
  // The manifest's JSON text, as save() writes it.
  std::string to_json() const;
  // The manifest `text` holds, with load()'s checks; errors name `path` (a file or a URL).
  static Result<Manifest> parse(const std::string& text, const std::string& path);
  // Writes DIR/manifest.json crash-safely.
  Status save(const std::string& dir) const;
};

}  // namespace stoker
