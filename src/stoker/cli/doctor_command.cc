// `stoker doctor [train's options] [--steps N] [--seconds S] [--json] [--trace FILE]
// [--report DIR]`: measures
// the run `stoker train` would make with the same options — the loader alone, the compute alone,
// the real loop — and says what limits it and what to change (doctor/doctor.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/output_checks.h"
#include "cli/run_output_options.h"
#include "cli/train_options.h"
#include "cli/usage.h"
#include "stoker/distributed/launch_env.h"
#include "stoker/doctor/doctor.h"
#include "stoker/doctor/run_report.h"
#include "stoker/util/machine.h"

namespace stoker::cli {
namespace {

struct DoctorFlags {
  bool json = false;
  std::string trace;
  std::string report;  // --report DIR
};

void run_doctor_command(TrainerOptions run, const TrainFlags& flags, DoctorOptions options,
                        const DoctorFlags& doctor) {
  if (read_launch_env().value_or_throw().distributed()) {
    throw UsageError(
        "stoker doctor measures one process: run it without torchrun or srun (the per-rank "
        "step is the same)");
  }
  apply_run_flags(flags, run);
  // With --json, stdout holds the JSON alone.
  std::FILE* say = doctor.json ? stderr : stdout;
  // Outputs checked before any work; the trace holds the training loop's run (its budget of
  // batches, doctor.h).
  CommandOutputs outputs(training_inputs(run));
  outputs.dir("--report", doctor.report, report_file_names());
  outputs.file("--trace", doctor.trace);
  const std::unique_ptr<Tracer> tracer = make_tracer(doctor.trace, {size_t{1} << 18});
  check_report_option(doctor.report);
  use_default_data(run, say);
  apply_process_settings(flags, run, machine_cores());
  options.tracer = tracer.get();
  fmt::print(say, "measuring the loader alone, the compute alone and the training loop...\n");
  std::fflush(say);
  const DoctorResult result = run_doctor(run, options);
  // The verdict first: a failure to write the files after it loses nothing measured.
  fmt::print("{}\n", doctor.json ? result.to_json() : result.to_text());
  std::fflush(stdout);
  write_trace(tracer.get(), doctor.trace);
  write_report_option(result.to_report(command_line()), doctor.report);
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto run = std::make_shared<TrainerOptions>();
  auto flags = std::make_shared<TrainFlags>();
  auto options = std::make_shared<DoctorOptions>();
  auto doctor = std::make_shared<DoctorFlags>();
  CLI::App* command = app.add_subcommand(
      "doctor",
      "Measure where a training step's time goes (loader alone, compute alone, the real loop), "
      "name the bottleneck and what to change; takes train's options");
  add_run_options(*command, *run, *flags);
  add_whole_number(*command, "--steps", options->min_batches,
                   "Measure at least this many training batches in each run (a run also ends "
                   "at the batches its trace has room for, thousands)",
                   1, options->max_batches)
      ->capture_default_str();
  command
      ->add_option("--seconds", options->min_seconds,
                   "Measure each run for at least this long (at most 15x as long)")
      ->check(real_number("--seconds", 0, false, 600))
      ->capture_default_str();
  command->add_flag("--json", doctor->json,
                    "Print one JSON object: verdict, reason, split, rates, actions");
  add_trace_option(*command, doctor->trace);
  add_report_option(*command, doctor->report);
  command->callback([run, flags, options, doctor] {
    DoctorOptions o = *options;
    o.max_seconds = 15 * o.min_seconds;
    run_doctor_command(*run, *flags, o, *doctor);
  });
}

}  // namespace stoker::cli
