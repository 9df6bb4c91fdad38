// `stoker verify DIR`: everything a reader relies on (store/dataset_check.h): Dataset::open's
// checks of manifest, schema, shard headers, index bounds and footers, then every record's
// checksum, layout and label. DIR is a dataset or a folder of them (each is verified). Lists
// every bad record and exits 1 if any. DIR may be a URL (access/data_source.h). A dataset of
// videos (a field "video": a video folder) has each video opened, indexed from every packet and
// its keyframes decoded (--decode: every frame, or none), its frames no larger than DecodeClip
// reads by default (max_pixels), nothing written but the folder's listing in the cache folder;
// a bad one is a line naming its file and frame. A token file (--source tokens,
// cli/source_options.h) has every token id read and checked (below vocab_size when given), its
// Megatron-LM index against its .bin at the opening; the first bad one is the error.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/data_access_options.h"
#include "cli/source_options.h"
#include "cli/usage.h"
#include "stoker/access/data_source.h"
#include "stoker/store/dataset_check.h"
#include "stoker/store/import/examined_videos.h"
#include "stoker/store/import/token_source.h"
#include "stoker/store/import/video_record.h"

namespace stoker::cli {
namespace {

// What verifying a video checks, for the line that says all is well.
std::string video_checks(video::VideoDecode decode) {
  switch (decode) {
    case video::VideoDecode::kNone:
      return "each video indexed";
    case video::VideoDecode::kKeyframes:
      return "each video indexed and its keyframes decoded";
    case video::VideoDecode::kAllFrames:
      return "each video indexed and every frame decoded";
  }
  return "";
}

// The line that says a token file is well: every token read and checked.
std::string tokens_verified(const Dataset& dataset, const TokenSummary& s) {
  return fmt::format("{}: all {} {} tokens verified (ids 0 to {}{}), {} {} of seq_len {}",
                     dataset.dir(), s.tokens, s.dtype, s.largest_id,
                     s.vocab_size > 0 ? fmt::format(", below vocab_size {}", s.vocab_size) : "",
                     s.samples, s.packed ? "packed rows" : "samples", s.seq_len);
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a dataset's format and every record's checksum; list the bad records");
  auto access = std::make_shared<DataAccessOptions>();
  auto decode = std::make_shared<video::VideoDecode>(video::VideoDecode::kKeyframes);
  auto source = std::make_shared<SourceChoice>();
  cmd->add_option("DIR", *dir,
                  "Dataset directory, or a folder of datasets (train/, test/, ...); or its s3:// "
                  "or http(s):// URL")
      ->required()
      ->check(path_value("DIR"));
  cmd->add_option_function<std::string>(
         "--decode",
         [decode](const std::string& text) { *decode = *video::kVideoDecodeNames.find(text); },
         "A dataset of videos: decode each video's keyframes (one frame per group of pictures), "
         "every frame (all: finds a damaged frame anywhere, at a full decode's cost) or none "
         "(its index alone: every packet read)")
      ->check(one_of("--decode", video::kVideoDecodeNames.names()))
      ->default_str(video::kVideoDecodeNames.name(*decode));
  add_data_access_options(*cmd, *access);
  add_source_options(*cmd, *source);
  cmd->callback([dir, access, decode, source] {
    const DataLocation where = locate_source(*dir, *source);
    std::vector<std::string> failed;
    for (const std::string& location : where.datasets) {
      auto dataset = open_source(location, *access, remote::kShardByShard, *source);
      if (const auto* tokens = dynamic_cast<const TokenSource*>(&dataset->source())) {
        fmt::print("{}\n", tokens_verified(*dataset, tokens->summarize().value_or_throw()));
        continue;
      }
      const std::string& path = dataset->dir();
      const bool videos = video_field(dataset->schema()) >= 0;
      const auto print = [](const Status& s) { std::fprintf(stderr, "%s\n", s.message().c_str()); };
      const uint64_t bad = check_records(*dataset, print) +
                           (videos ? check_videos(*dataset, *decode, print).value_or_throw() : 0);
      const std::string note = new_notes_line(dataset->source().stats(), 0);
      if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
      if (bad > 0) {
        failed.push_back(fmt::format("{}: {} of {} records", path, bad, dataset->size()));
        continue;
      }
      fmt::print("{}: all {} records in {} shard{} verified{}\n", path, dataset->size(),
                 dataset->num_shards(), dataset->num_shards() == 1 ? "" : "s",
                 videos ? " (" + video_checks(*decode) + ")" : "");
    }
    if (!failed.empty())
      throw Error(corrupt(fmt::format("{} failed verification", fmt::join(failed, "; "))));
  });
}

}  // namespace stoker::cli
