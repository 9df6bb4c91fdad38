#pragma once
// --workers N|auto, shared by the commands that run the loader (train, doctor, bench loader,
// bench train): a number of loader workers, or `auto` to tune them (and an auto prefetch
// depth) while the run goes (LoaderOptions kAutoTuneWorkers, worker_tuner.h). Stateless
// functions.

#include <CLI/CLI.hpp>
#include <string>

namespace stoker::cli {

// Registers --workers on `command`, its value into `workers`: a whole number in
// [min, kMaxWorkers], or `auto`, stored as kAutoTuneWorkers. Anything else is a UsageError in
// usage.h's style ("--workers: 'x' is not a whole number or auto", "--workers must be at least
// 0").
CLI::Option* add_workers_option(CLI::App& command, int& workers, const std::string& help, int min);

// "auto" for kAutoTuneWorkers, else the number: how a run's configuration shows --workers.
std::string workers_text(int workers);

}  // namespace stoker::cli
