#pragma once
// Which source a command reads its data as (inspect, verify, bench loader), on the command line:
// --source NAME, one of the registry's (access/source_registry.h; auto: the first that
// recognises the path, stoker's datasets last) and --param KEY=VALUE, repeated, its parameters
// as Python's keywords name them (seq_len=2048; seq-len too). A named source reads one dataset
// at the path; auto, remote::locate's datasets there, or a local path a source recognises (a
// .npy of tokens, Megatron-LM's .bin, .idx or prefix) as one. Stateless functions.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "stoker/cache/data_access.h"
#include "stoker/store/data_location.h"
#include "stoker/store/dataset.h"

namespace stoker::cli {

struct SourceChoice {
  std::string name = "auto";
  std::vector<std::string> params;  // KEY=VALUE, as given
};

// Registers --source and --param on `command`, their values into `choice` (which must outlive
// the parse).
void add_source_options(CLI::App& command, SourceChoice& choice);

// The datasets at `path` as `choice` reads them. Throws Error (one line) where there are none: a
// file no source recognises says which --source reads a headerless token file.
DataLocation locate_source(const std::string& path, const SourceChoice& choice);

// The dataset at `location` (one of locate_source's), opened as `choice` says, its remote data
// through `access`'s cache for a reader of `shuffle_window`. Throws Error, or UsageError for a
// --param without '='.
std::shared_ptr<const Dataset> open_source(const std::string& location,
                                           const DataAccessOptions& access, int64_t shuffle_window,
                                           const SourceChoice& choice);

}  // namespace stoker::cli
