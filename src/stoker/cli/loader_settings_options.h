#pragma once
// The loader's settings (loader_settings.h) on the command line, bound once for every command
// that runs a loader (train, doctor, bench loader, bench train) by one loop over the settings'
// table (loader_setting_descriptions(): a flag for each setting with a help text): --workers
// N|auto (auto: tune the workers, and an auto prefetch depth, while the run goes:
// worker_tuner.h), --shuffle-window N|all, --verify, and --prefetch where the command offers it.
// Checks and messages are usage.h's ("--workers: 'x' is not a whole number or auto", "--workers
// must be at least 0"). Stateless functions.

#include <CLI/CLI.hpp>
#include <string>

#include "stoker/pipeline/loader_settings.h"

namespace stoker::cli {

// What a command offers of the loader's settings.
struct LoaderSettingsFlags {
  std::string workers_help;  // what the command's workers do; empty: the loader's (the table's)
  // --workers -1 (the default where settings.workers is per core) means one per core.
  bool per_core = false;
  bool verify = true;     // --verify always|once|off
  bool prefetch = false;  // --prefetch N (-1: auto)
};

// Registers the options of `flags` on `command`, their values into `settings` (which holds the
// defaults shown in --help and must outlive the parse).
void add_loader_settings_options(CLI::App& command, LoaderSettings& settings,
                                 const LoaderSettingsFlags& flags);

// How a run's configuration shows --workers: "auto", or the number (-1 for one per core).
std::string workers_text(const WorkerCount& workers);

}  // namespace stoker::cli
