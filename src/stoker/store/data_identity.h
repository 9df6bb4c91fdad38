#pragma once
// What data read in place is, for a resumed state (a loader's state_dict, a training
// checkpoint) to be checked against: each file's stamp (ShardSource::file_stamps: its size and
// modification time, or a remote object's ETag), taken in at most kFileBlocks runs of
// consecutive files, each with a digest. A state keeps the blocks, so that a state of other or
// changed files is refused naming the first that differs (one file per block for up to
// kFileBlocks files, a run of them beyond). A stoker dataset has none: its manifest's index
// checksums cover every record. Functions.

#include <cstddef>
#include <string>
#include <vector>

#include "stoker/store/shard_source.h"
#include "stoker/util/status.h"

namespace stoker {

inline constexpr size_t kFileBlocks = 256;

// A run of consecutive files: the first's and last's names, and 16 hex digits of their stamps.
struct FileBlock {
  std::string first;
  std::string last;
  std::string digest;
  bool operator==(const FileBlock& o) const {
    return first == o.first && last == o.last && digest == o.digest;
  }
};

// The blocks of `source`'s files as they are now (empty for a stoker dataset); errors name the
// file whose stamp cannot be read.
Result<std::vector<FileBlock>> file_blocks(const ShardSource& source);

// 16 hex digits over the blocks' digests ("" for none): what a data identity adds for them.
std::string file_blocks_digest(const std::vector<FileBlock>& blocks);

// "" when `saved` and `current` are the same files, else one phrase naming the first that
// differs: "FILE changed (its size or modification time differs)", "a file of FIRST to LAST
// changed (...)", or "FILE is not this data's (its file there: OTHER)".
std::string file_blocks_difference(const std::vector<FileBlock>& saved,
                                   const std::vector<FileBlock>& current);

}  // namespace stoker
