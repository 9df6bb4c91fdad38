// `stoker inspect [DIR] [--json] [--videos N]`: what a dataset holds. DIR may also be a folder
// of datasets (such as the converted Fashion-MNIST, holding train/ and test/): each is shown
// (store/data_location.h). A dataset of videos (a field "video": a video folder) shows its
// first N videos too: class, frames, rate, size, codec, duration, keyframes and file, each read
// from the video's packets (nothing decoded); a video that cannot be read, its one-line error.
// A token file (--source tokens, cli/source_options.h) shows its format, dtype, tokens,
// documents, samples and largest id, every token read (store/import/token_source.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/data_access_options.h"
#include "cli/source_options.h"
#include "cli/usage.h"
#include "stoker/access/data_source.h"
#include "stoker/store/dataset_summary.h"
#include "stoker/store/import/examined_videos.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/import/token_source.h"
#include "stoker/store/import/video_record.h"
#include "stoker/util/utf8.h"

namespace stoker::cli {
namespace {

// Class names and label rows shown in text before the rest is summed up (--json has them all).
constexpr size_t kClassNamesShown = 10;
constexpr size_t kLabelRowsShown = 20;

// "N: a, b, c" or "N: a, b, ..., j and 990 more (--json lists all)".
std::string class_list(const std::vector<std::string>& names) {
  return std::to_string(names.size()) + ": " + printable_list(names, kClassNamesShown) +
         (names.size() > kClassNamesShown ? " (--json lists all)" : "");
}

void print_text(const DatasetSummary& s) {
  fmt::print("dataset   {}\n", s.dir);
  if (!s.source.empty()) fmt::print("source    {}\n", s.source);
  fmt::print("format    version {}\n", s.format_version);
  // An image folder read in place has no byte counts: its size is left out, not 0.0 MB.
  const std::string size = s.bytes > 0 ? fmt::format(" ({:.1f} MB)", s.bytes / 1e6) : "";
  fmt::print("records   {} in {} shard{}{}\n", s.records, s.shards, s.shards == 1 ? "" : "s", size);
  fmt::print("schema    {}\n", s.schema_text);
  if (!s.max_lengths.empty()) {
    std::vector<std::string> rows;
    for (const auto& [field, most] : s.max_lengths)
      rows.push_back(fmt::format("{} {}", field, most));
    fmt::print("rows      at most: {}\n", fmt::join(rows, ", "));
  }
  if (!s.class_names.empty()) fmt::print("classes   {}\n", class_list(s.class_names));
  if (s.record_shuffle_seed)
    fmt::print("order     records shuffled when converted (seed {}), not class by class\n",
               *s.record_shuffle_seed);
  for (const auto& [field, stats] : s.statistics)
    fmt::print("pixels    {}: mean {:.4f} std {:.4f} per channel, over {} pixels each\n", field,
               fmt::join(stats.mean, ","), fmt::join(stats.std, ","), stats.pixels);
  if (s.statistics_missing)
    fmt::print(
        "pixels    no statistics (converted by an older stoker, read in place, or constant "
        "images: training uses default mean/std)\n");
  if (s.has_labels && !s.labels_read) {
    fmt::print(
        "labels    not read: inspect fetches no shard of a remote dataset and reads no data read "
        "in place (an image folder, Parquet files)\n");
  } else if (s.has_labels && !s.label_histogram_complete) {
    fmt::print("labels    more than {} distinct values, from {} to {} (no histogram)\n",
               kMaxClasses, s.label_min, s.label_max);
  } else if (s.has_labels) {
    fmt::print("labels\n");
    size_t row = 0;
    uint64_t rest_records = 0, rest_min = UINT64_MAX, rest_max = 0;
    for (const auto& [value, count] : s.label_histogram) {
      if (row++ >= kLabelRowsShown) {
        rest_records += count;
        rest_min = std::min(rest_min, count);
        rest_max = std::max(rest_max, count);
        continue;
      }
      std::string name;
      if (value >= 0 && value < static_cast<int64_t>(s.class_names.size()))
        name = printable(s.class_names[value]);
      fmt::print("  {:>4}  {:>8}  {}\n", value, count, name);
    }
    if (row > kLabelRowsShown)
      fmt::print("  ... {} more labels: {} records, {} to {} each (--json lists all)\n",
                 row - kLabelRowsShown, rest_records, rest_min, rest_max);
  }
}

nlohmann::json token_json(const Dataset& dataset, const TokenSummary& s) {
  nlohmann::json j = {
      {"dir", dataset.dir()},  {"source", "tokens"},
      {"format", s.format},    {"dtype", s.dtype},
      {"tokens", s.tokens},    {"documents", nullptr},
      {"samples", s.samples},  {"seq_len", s.seq_len},
      {"packed", s.packed},    {"largest_id", s.largest_id},
      {"vocab_size", nullptr}, {"schema", nlohmann::json::parse(dataset.schema().to_json())}};
  if (s.documents) j["documents"] = *s.documents;
  if (s.vocab_size > 0) j["vocab_size"] = s.vocab_size;
  return j;
}

void print_tokens(const Dataset& dataset, const TokenSummary& s) {
  fmt::print("tokens    {}\n", dataset.dir());
  fmt::print("format    {}, {}\n", s.format, s.dtype);
  fmt::print("tokens    {} (largest id {}{})\n", s.tokens, s.largest_id,
             s.vocab_size > 0 ? fmt::format(", below vocab_size {}", s.vocab_size) : "");
  fmt::print("documents {}\n", s.documents ? std::to_string(*s.documents)
                                           : "not known (no eos_id, no Megatron-LM index)");
  fmt::print("samples   {} {} of seq_len {}\n", s.samples, s.packed ? "packed rows" : "samples",
             s.seq_len);
  fmt::print("schema    {}\n", summarize(dataset, /*read_labels=*/false).schema_text);
}

// The first `count` videos of `dataset` (store/import/examined_videos.h), as JSON.
nlohmann::json video_rows(const Dataset& dataset, uint64_t count) {
  nlohmann::json rows = nlohmann::json::array();
  const std::vector<std::string>& classes = dataset.manifest().class_names;
  throw_if_error(for_each_video(
      dataset, count, video::VideoDecode::kNone, /*max_pixels=*/0, [&](const ExaminedVideo& v) {
        nlohmann::json row = {{"record", v.record}, {"name", v.name}};
        if (v.label >= 0) row["label"] = v.label;
        if (v.label >= 0 && v.label < static_cast<int64_t>(classes.size()))
          row["class"] = classes[v.label];
        if (!v.status.is_ok()) {
          row["error"] = v.status.message();
        } else {
          const video::VideoFacts& f = v.facts;
          row.update({{"frames", f.frames},
                      {"fps", f.fps},
                      {"width", f.width},
                      {"height", f.height},
                      {"codec", f.codec},
                      {"seconds", f.seconds},
                      {"keyframes", f.keyframes}});
        }
        rows.push_back(std::move(row));
      }));
  return rows;
}

// The rows of video_rows, one a line.
void print_videos(const nlohmann::json& rows, uint64_t records) {
  fmt::print("videos    {} of {}{}\n", rows.size(), records,
             rows.size() < records ? " (--videos N shows more, 0 all)" : "");
  for (const nlohmann::json& row : rows) {
    // The file's path names its class; a record's number does not.
    std::string name = printable(row.at("name").get<std::string>());
    if (row.contains("class") && name.rfind(row.at("class").get<std::string>() + "/", 0) != 0)
      name += " (" + printable(row.at("class").get<std::string>()) + ")";
    if (row.contains("error")) {
      fmt::print("  {}: {}\n", name, printable(row.at("error").get<std::string>()));
      continue;
    }
    fmt::print("  {:>5} frames {:>6.2f} fps {:>9} {:<6} {:>7.2f} s {:>4} keyframes  {}\n",
               row.at("frames").get<int64_t>(), row.at("fps").get<double>(),
               fmt::format("{}x{}", row.at("width").get<int>(), row.at("height").get<int>()),
               row.at("codec").get<std::string>(), row.at("seconds").get<double>(),
               row.at("keyframes").get<int64_t>(), name);
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>(default_fashion_mnist_dir());
  auto json = std::make_shared<bool>(false);
  auto videos = std::make_shared<int64_t>(10);
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show a dataset's schema, records, shards, bytes and label histogram");
  auto access = std::make_shared<DataAccessOptions>();
  auto source = std::make_shared<SourceChoice>();
  cmd->add_option("DIR", *dir,
                  "Dataset directory, or a folder of datasets; or its s3:// or http(s):// URL "
                  "(sizes from the manifest, no shard downloaded); or a token file")
      ->check(path_value("DIR"))
      ->capture_default_str();
  cmd->add_flag("--json", *json, "Print JSON");
  add_whole_number(*cmd, "--videos", *videos,
                   "A dataset of videos (a video folder): show its first N videos, each read "
                   "(0: all)",
                   0)
      ->capture_default_str();
  add_data_access_options(*cmd, *access);
  add_source_options(*cmd, *source);
  cmd->callback([dir, json, videos, access, source] {
    const DataLocation where = locate_source(*dir, *source);
    const std::vector<std::string>& dirs = where.datasets;
    nlohmann::json all = nlohmann::json::array();
    for (size_t i = 0; i < dirs.size(); ++i) {
      auto dataset = open_source(dirs[i], *access, remote::kShardByShard, *source);
      if (const auto* tokens = dynamic_cast<const TokenSource*>(&dataset->source())) {
        const TokenSummary summary = tokens->summarize().value_or_throw();
        if (*json) all.push_back(token_json(*dataset, summary));
        if (!*json) print_tokens(*dataset, summary);
        continue;
      }
      DatasetSummary summary = summarize(*dataset, /*read_labels=*/!dataset->needs_pins());
      const uint64_t shown = *videos == 0 ? dataset->size() : static_cast<uint64_t>(*videos);
      const nlohmann::json rows = video_field(dataset->schema()) >= 0 ? video_rows(*dataset, shown)
                                                                      : nlohmann::json(nullptr);
      if (*json) {
        all.push_back(nlohmann::json::parse(summary.to_json(dataset->schema())));
        if (!rows.is_null()) all.back()["videos"] = rows;
      } else {
        if (i > 0) fmt::print("\n");
        print_text(summary);
        if (!rows.is_null()) print_videos(rows, dataset->size());
      }
    }
    if (*json) {
      nlohmann::json out =
          !where.folder ? all[0] : nlohmann::json{{"dir", where.path}, {"datasets", all}};
      fmt::print("{}\n", out.dump(2));
    }
  });
}

}  // namespace stoker::cli
