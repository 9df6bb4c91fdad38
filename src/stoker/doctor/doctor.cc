#include "stoker/doctor/doctor.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "stoker/access/data_source.h"
#include "stoker/doctor/throughput_recorder.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/store/dataset.h"
#include "stoker/store/shard_source.h"
#include "stoker/train/step_runner.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

// Each thread's trace buffer in a measured run's own Tracer (48 bytes an event, 12 MiB,
// allocated when the thread first records); a run's batches are capped so that they fit.
constexpr size_t kEventsPerThread = size_t{1} << 18;
// Epochs of a measured run: more than any measurement needs (it is stopped when long enough).
constexpr int64_t kEnoughEpochs = 1'000'000;
// With --workers auto the warm-up of the runs that take batches from the loader lasts as long
// as the tuner takes to settle (about 100 batches, worker_tuner.h).
constexpr int64_t kTuningBatches = 150;
constexpr double kTuningSeconds = 10;

// The measured part of a run: [from_ns, to_ns) on the Tracer's clock, and its batches; and the
// loader's tuning (--workers auto) as the run ended.
struct Window {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  int64_t batches = 0;
  std::optional<TuningReport> tuning;
  std::vector<ReportPoint> throughput;  // samples/s over the run's time, warm-up included
  c10::Device device{c10::kCPU};        // the run's, resolved by the Trainer
  std::string note;                     // what the train data's source noted (new_notes_line)
  int64_t frames_decoded = 0;           // clips' frames (decode_clip) over the whole run
  int64_t frames_delivered = 0;
};

// The step a measured run repeats: data_step, resident_step or train_step (step_runner.h).
using Step = void (StepRunner::*)();

// Sets `run` up traced on `tracer` and repeats `step` until its window past the warm-up is long
// enough. `samples_per_batch`: for the throughput over time.
Window measure(TrainerOptions run, Step step, DoctorOptions o, Tracer& tracer,
               int64_t samples_per_batch) {
  if (run.loader.workers.is_tuned() && step != &StepRunner::resident_step) {
    o.warmup_batches = std::max<int64_t>(o.warmup_batches, kTuningBatches);
    o.warmup_seconds = std::max(o.warmup_seconds, kTuningSeconds);
  }
  run.tracer = &tracer;
  const std::unique_ptr<TrainingSetup> setup = set_up_training(std::move(run));
  StepRunner steps(*setup);
  // What a thread records per batch: at most 3 spans a piece (4 with a fetch, for a dataset
  // that needs pins) and a finalize on one worker (the pieces are as many as the pool's
  // workers), about 8 events on the training thread.
  const int64_t pieces = std::max(setup->loader->options().workers.threads(), 1);
  const int64_t piece_spans = setup->train_data->needs_pins() ? 4 : 3;
  const int64_t max_batches = std::min<int64_t>(
      o.max_batches, static_cast<int64_t>(kEventsPerThread) / (piece_spans * pieces + 8));
  Window w;
  w.device = setup->device;
  int64_t seen = 0;
  bool measuring = false;
  const int64_t start_ns = Tracer::now_ns();
  ThroughputRecorder throughput;
  throughput.restart(0);
  int64_t samples = 0;
  while (true) {
    (steps.*step)();
    samples += samples_per_batch;
    throughput.record(samples);
    const int64_t now = Tracer::now_ns();
    if (!measuring) {
      ++seen;
      measuring = seen >= o.warmup_batches || (now - start_ns) * 1e-9 >= o.warmup_seconds;
      w.from_ns = w.to_ns = now;
      continue;
    }
    ++w.batches;
    w.to_ns = now;
    const double seconds = (now - w.from_ns) * 1e-9;
    if ((w.batches >= o.min_batches && seconds >= o.min_seconds) || seconds >= o.max_seconds ||
        w.batches >= max_batches)
      break;
  }
  w.tuning = setup->loader->tuning();
  w.throughput = throughput.points();
  w.note = new_notes_line(setup->train_data->source().stats(), 0);
  w.frames_decoded = setup->loader->stats().video_frames_decoded.load();
  w.frames_delivered = setup->loader->stats().video_frames_delivered.load();
  return w;
}

// The run as the doctor measures it: long enough, without evaluation or a checkpoint to resume
// (the doctor's runs print and write nothing: it only sets them up and steps them).
TrainerOptions measured_run(const TrainerOptions& run) {
  TrainerOptions m = run;
  m.epochs = kEnoughEpochs;
  m.eval = false;
  m.checkpoint_dir.clear();
  m.resume = false;
  return m;
}

std::string workers_fact(int workers) {
  return workers == 0 ? "0 (batches built on the training thread)" : std::to_string(workers);
}

}  // namespace

DoctorResult run_doctor(const TrainerOptions& run, const DoctorOptions& options) {
  if (run.process_group != nullptr) {
    throw Error(invalid_argument(
        "stoker doctor measures one process: run it without torchrun, srun or --nproc"));
  }
  const TrainerOptions base = measured_run(run);
  const std::shared_ptr<const Dataset> data =
      remote::open_dataset(remote::locate(run.data_dir).value_or_throw().train, run.data_access,
                           run.loader.shuffle_window)
          .value_or_throw();
  // The samples a batch really holds (a batch larger than the data holds all of it).
  const int64_t records = static_cast<int64_t>(data->size());
  DoctorResult result;
  DoctorMeasurements& m = result.measurements;
  std::optional<TuningReport> tuning;  // of the last run
  int64_t frames_decoded = 0;          // clips' frames over the loader alone's run
  int64_t frames_delivered = 0;
  c10::Device device(c10::kCPU);  // of the last run
  // Each run on a Tracer of its own, the training loop on the caller's if given.
  auto phase = [&](const std::string& name, const TrainerOptions& r, Step step,
                   Tracer* given = nullptr) {
    Tracer own(TracerOptions{kEventsPerThread});
    Tracer& tracer = given != nullptr ? *given : own;
    const uint64_t dropped = tracer.dropped();
    const Window w = measure(r, step, options, tracer, std::min(r.batch_size, records));
    if (tracer.dropped() != dropped) {  // a bug of the budget above, or a too small --trace
      throw Error(Status(StatusCode::kInternal,
                         fmt::format("stoker doctor: the trace of the {} run overflowed its "
                                     "buffers, so its split would be wrong",
                                     name)));
    }
    tuning = w.tuning;
    device = w.device;
    if (result.phases.empty()) {
      frames_decoded = w.frames_decoded;
      frames_delivered = w.frames_delivered;
    }
    // Each run opens the data anew: a note (a cached file rebuilt) is the first run's.
    if (!w.note.empty() &&
        std::find(result.notes.begin(), result.notes.end(), w.note) == result.notes.end())
      result.notes.push_back(w.note);
    result.throughput.push_back({name, w.throughput});
    const std::vector<ThreadTrace> trace = tracer.snapshot();
    result.phases.push_back({name, w.batches, (w.to_ns - w.from_ns) * 1e-9});
    return std::make_pair(split_steps(trace, w.from_ns, w.to_ns),
                          sum_spans(trace, "pipeline", "piece", w.from_ns, w.to_ns));
  };

  const auto [alone, worker_seconds] = phase("loader alone", base, &StepRunner::data_step);
  m.loader_rate = alone.per_second(alone.wall - alone.h2d);
  m.worker_seconds_per_batch = alone.per_batch(worker_seconds);
  // With --workers auto: the workers the loader alone settled on, which its rate is of.
  const std::optional<TuningReport> alone_tuning = tuning;
  const StepSplit compute = phase("compute alone", base, &StepRunner::resident_step).first;
  m.compute_rate = compute.per_second(compute.compute());
  m.loop = phase("training loop", base, &StepRunner::train_step, options.tracer).first;
  const std::optional<TuningReport> loop_tuning = tuning;

  m.workers = alone_tuning ? alone_tuning->workers : run.loader.workers.threads();
  m.tuned = loop_tuning.has_value();
  m.cores = machine_cores();
  m.compute_threads = at::get_num_threads();
  m.cuda = device.is_cuda();
  m.encoded_images = is_encoded_image_field(data->schema(), "image");
  m.dct_scaling = run.dct_scaling;
  m.verify_always = run.loader.verify == VerifyPolicy::kAlways;
  m.batch_size = std::min(run.batch_size, records);  // the samples a batch holds
  m.sample_cost_us = run.sample_cost.count();

  const Verdict verdict = classify(m);
  if (options.probes && (verdict == Verdict::kComputeBound || verdict == Verdict::kBalanced)) {
    // Compute alone with one change each; a change the run cannot make (too large a batch for
    // the memory) is left out.
    auto probe = [&](const std::string& change, const std::string& what, TrainerOptions r,
                     double samples_factor) {
      try {
        const StepSplit s = phase(change, r, &StepRunner::resident_step).first;
        m.probes.push_back(
            {change, what, samples_factor * s.per_second(s.compute()) / m.compute_rate});
      } catch (const std::exception&) {  // Error, or LibTorch's out of memory
      }
    };
    if (2 * run.batch_size <= records) {  // else the doubled batch holds no more samples
      TrainerOptions twice = base;
      twice.batch_size = 2 * run.batch_size;
      probe(fmt::format("--batch {}", twice.batch_size),
            "twice the batch (scale --lr with it; fewer steps per epoch)", twice, 2.0);
    }
    if (run.amp == AmpMode::kOff && (m.cuda || has_native_bf16(machine_cpu_flags()))) {
      TrainerOptions amp = base;
      amp.amp = m.cuda ? AmpMode::kFp16 : AmpMode::kBf16;
      probe(fmt::format("--amp {}", to_string(amp.amp)), "mixed precision", amp, 1.0);
    }
  }
  result.diagnosis = diagnose(m);

  result.facts = {
      {"data", data->dir()},
      {"model", run.model},
      {"batch", std::to_string(run.batch_size)},
      {"workers", loop_tuning ? "auto: " + loop_tuning->summary()
                              : workers_fact(run.loader.workers.threads())},
      {"compute threads", std::to_string(m.compute_threads)},
      {"cores", std::to_string(m.cores)},
      {"device", device.str()},
      {"amp", to_string(run.amp)},
      {"accum", std::to_string(run.accum)},
      {"verify", to_string(run.loader.verify)},
  };
  if (m.sample_cost_us > 0)
    result.facts.emplace_back("synthetic sample cost", fmt::format("{} us", m.sample_cost_us));
  // What decoding clips from keyframes costs (issue 63): frames out of the decoder per frame a
  // clip holds, over the loader alone's run.
  if (frames_delivered > 0)
    result.facts.emplace_back(
        "frames decoded", fmt::format("{:.2f} per frame delivered ({} for {}, the loader alone)",
                                      static_cast<double>(frames_decoded) / frames_delivered,
                                      frames_decoded, frames_delivered));
  return result;
}

std::string DoctorResult::to_text() const {
  const DoctorMeasurements& m = measurements;
  const Diagnosis& d = diagnosis;
  std::string out = "stoker doctor\n";
  for (const auto& [label, value] : facts) out += fmt::format("  {:<22} {}\n", label, value);
  out += "\nmeasured, each after a warm-up:\n";
  const double rates[] = {m.loader_rate, m.compute_rate, d.loop_rate};
  for (size_t i = 0; i < phases.size(); ++i) {
    const PhaseTiming& p = phases[i];
    const std::string rate =
        i < 3 ? fmt::format("{:>10.1f} batches/s", rates[i])
              : fmt::format("{:>10.2f}x compute alone, per sample",
                            m.probes.size() > i - 3 ? m.probes[i - 3].speedup : 0.0);
    out +=
        fmt::format("  {:<22} {}   ({} batches in {:.2f} s)\n", p.name, rate, p.batches, p.seconds);
  }
  out += "\nwhere a training batch's time goes (the training loop):\n";
  for (const auto& [part, seconds] : m.loop.parts()) {
    if (part == "allreduce_wait" && seconds == 0) continue;
    out += fmt::format("  {:<22} {:>9.3f} ms  {:>5.1f}%\n", part == "data" ? "data wait" : part,
                       1e3 * m.loop.per_batch(seconds),
                       m.loop.wall > 0 ? 100 * seconds / m.loop.wall : 0.0);
  }
  if (m.loop.fetch > 0) {
    out += fmt::format("  the loader's workers waited {:.3f} ms a batch for shards (network)\n",
                       1e3 * m.loop.per_batch(m.loop.fetch));
  }
  out += fmt::format("\nverdict: {}\n  {}\n", to_string(d.verdict), d.reason);
  if (d.actions.empty()) {
    out += "\nactions: none the measurements support\n";
  } else {
    out += "\nactions, best expected gain first:\n";
    for (size_t i = 0; i < d.actions.size(); ++i) {
      const DoctorAction& a = d.actions[i];
      out += fmt::format("  {}. {}  (expected: {})\n     {}\n", i + 1, a.action, a.expected_gain(),
                         a.why);
    }
  }
  if (!notes.empty()) out += "\n";
  for (const std::string& note : notes) out += "note: " + note + "\n";
  return out;
}

std::string DoctorResult::to_json() const {
  const DoctorMeasurements& m = measurements;
  const Diagnosis& d = diagnosis;
  nlohmann::json split = nlohmann::json::object();
  nlohmann::json split_fraction = nlohmann::json::object();
  for (const auto& [part, seconds] : m.loop.parts()) {
    split[part] = m.loop.per_batch(seconds);
    split_fraction[part] = m.loop.wall > 0 ? seconds / m.loop.wall : 0.0;
  }
  nlohmann::json actions = nlohmann::json::array();
  for (const DoctorAction& a : d.actions) {
    actions.push_back({{"action", a.action},
                       {"why", a.why},
                       {"speedup", a.speedup},
                       {"upper_bound", a.upper_bound},
                       {"expected_gain", a.expected_gain()}});
  }
  nlohmann::json phase_list = nlohmann::json::array();
  for (const PhaseTiming& p : phases)
    phase_list.push_back({{"name", p.name}, {"batches", p.batches}, {"seconds", p.seconds}});
  nlohmann::json probes = nlohmann::json::array();
  for (const ComputeProbe& p : m.probes)
    probes.push_back({{"change", p.change}, {"what", p.what}, {"speedup", p.speedup}});
  nlohmann::json fact_object = nlohmann::json::object();
  for (const auto& [label, value] : facts) fact_object[label] = value;
  const nlohmann::json j = {{"verdict", to_string(d.verdict)},
                            {"reason", d.reason},
                            {"split", split},
                            {"split_fraction", split_fraction},
                            {"fetch_wait", m.loop.per_batch(m.loop.fetch)},
                            {"batches_measured", m.loop.batches},
                            {"loop_rate", d.loop_rate},
                            {"loader_rate", m.loader_rate},
                            {"compute_rate", m.compute_rate},
                            {"worker_seconds_per_batch", m.worker_seconds_per_batch},
                            {"wait_fraction", d.wait_fraction},
                            {"transfer_fraction", d.transfer_fraction},
                            {"headroom", d.headroom},
                            {"actions", actions},
                            {"phases", phase_list},
                            {"probes", probes},
                            {"facts", fact_object},
                            {"notes", notes}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

RunReport DoctorResult::to_report(const std::string& command) const {
  const DoctorMeasurements& m = measurements;
  RunReport report;
  report.title = "stoker doctor";
  report.command = command;
  report.facts = facts;
  report.facts.emplace_back("loader alone", fmt::format("{:.1f} batches/s", m.loader_rate));
  report.facts.emplace_back("compute alone", fmt::format("{:.1f} batches/s", m.compute_rate));
  report.facts.emplace_back("training loop", fmt::format("{:.1f} batches/s", diagnosis.loop_rate));
  if (m.loop.fetch > 0) {
    report.facts.emplace_back("shard fetch wait",
                              fmt::format("{:.3f} ms a batch, the loader's workers' (network)",
                                          1e3 * m.loop.per_batch(m.loop.fetch)));
  }
  for (const ComputeProbe& p : m.probes) {
    report.facts.emplace_back("compute alone, " + p.change,
                              fmt::format("{:.2f}x the samples per second", p.speedup));
  }
  report.verdict = to_string(diagnosis.verdict);
  report.verdict_reason = diagnosis.reason;
  for (const auto& [part, seconds] : m.loop.parts()) {
    if (part == "allreduce_wait" && seconds == 0) continue;
    report.split.push_back({part == "data" ? "data wait" : part, m.loop.per_batch(seconds)});
  }
  for (const DoctorAction& a : diagnosis.actions)
    report.actions.push_back({a.action, a.why, a.expected_gain()});
  for (const std::string& note : notes) report.facts.emplace_back("note", note);
  report.charts.push_back({"Throughput of each measured run", "seconds since the run started",
                           "samples/s", throughput});
  return report;
}

}  // namespace stoker
