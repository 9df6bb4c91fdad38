#include "stoker/store/data_identity.h"

#include <fmt/format.h>

#include <algorithm>

#include "stoker/util/checksum.h"

namespace stoker {

Result<std::vector<FileBlock>> file_blocks(const ShardSource& source) {
  STOKER_ASSIGN_OR_RETURN(std::vector<FileStamp> stamps, source.file_stamps());
  std::vector<FileBlock> blocks;
  const size_t per_block = (stamps.size() + kFileBlocks - 1) / kFileBlocks;
  for (size_t first = 0; first < stamps.size(); first += per_block) {
    const size_t end = std::min(stamps.size(), first + per_block);
    std::string text;
    for (size_t i = first; i < end; ++i)
      text += fmt::format("{} {}\n", stamps[i].size, stamps[i].stamp);
    blocks.push_back({stamps[first].name, stamps[end - 1].name,
                      fmt::format("{:016x}", xxh3_64(text.data(), text.size()))});
  }
  return blocks;
}

std::string file_blocks_digest(const std::vector<FileBlock>& blocks) {
  if (blocks.empty()) return "";
  std::string text;
  for (const FileBlock& block : blocks) text += block.digest + "\n";
  return fmt::format("{:016x}", xxh3_64(text.data(), text.size()));
}

std::string file_blocks_difference(const std::vector<FileBlock>& saved,
                                   const std::vector<FileBlock>& current) {
  for (size_t i = 0; i < std::min(saved.size(), current.size()); ++i) {
    const FileBlock& a = saved[i];
    const FileBlock& b = current[i];
    if (a == b) continue;
    if (a.first != b.first)
      return fmt::format("{} is not this data's (its file there: {})", a.first, b.first);
    if (a.last != b.last)
      return fmt::format("{} is not this data's (its file there: {})", a.last, b.last);
    if (a.first == a.last)
      return fmt::format("{} changed (its size or modification time differs)", a.first);
    return fmt::format("a file of {} to {} changed (its size or modification time differs)",
                       a.first, a.last);
  }
  if (saved.size() == current.size()) return "";
  if (saved.empty()) return "the state is of a stoker dataset, not of files read in place";
  if (current.empty()) return "the state is of files read in place, not of a stoker dataset";
  return fmt::format("other files ({} blocks of them, this data's {})", saved.size(),
                     current.size());
}

}  // namespace stoker
