#pragma once
// How a command reads remote data (cache/data_access.h) on the command line, bound once for
// every command that reads a dataset (train, doctor, bench loader, inspect, verify):
// --cache-dir DIR, --cache-gb GB (> 0), --cache-policy next-use|lru, --transcode-cache. Checks and
// messages are usage.h's. Stateless functions.

#include <CLI/CLI.hpp>

#include "stoker/cache/data_access.h"

namespace stoker::cli {

// Registers the options on `command`, their values into `access` (which must outlive the
// parse).
void add_data_access_options(CLI::App& command, DataAccessOptions& access);

}  // namespace stoker::cli
