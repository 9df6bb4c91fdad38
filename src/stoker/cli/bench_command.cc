// `stoker bench loader`: loader throughput on a dataset, beside the bare single-thread loop
// that does the same shuffled gather + normalise into one reused buffer (what one core does
// with no queue, ordering or pool). On a dataset of JPEG/PNG images the work per sample is
// torchvision's training transform: RandomResizedCrop + flip + normalise.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>

#include "cli/augment_option.h"
#include "cli/commands.h"
#include "cli/data_access_options.h"
#include "cli/loader_settings_options.h"
#include "cli/output_checks.h"
#include "cli/run_output_options.h"
#include "cli/source_options.h"
#include "cli/train_options.h"
#include "cli/usage.h"
#include "stoker/access/data_source.h"
#include "stoker/cache/data_access.h"
#include "stoker/doctor/run_report.h"
#include "stoker/doctor/throughput_recorder.h"
#include "stoker/image/decode.h"
#include "stoker/pipeline/batch_buffer.h"
#include "stoker/pipeline/field_pipeline.h"
#include "stoker/pipeline/frame_counts_memo.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/pipeline/sample_cost.h"
#include "stoker/pipeline/schedule_from_order.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/normalization_choice.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/stopwatch.h"

namespace stoker::cli {
namespace {

// --field's "FIELD=CALL;CALL...": the field and its checked calls (UsageError naming the call).
std::pair<std::string, std::vector<OpCall>> field_calls(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == 0 || equals == std::string::npos || equals + 1 == text.size())
    throw UsageError("--field: '" + text + "' is not FIELD=NAME[:key=value,...];NAME...");
  std::vector<OpCall> calls;
  int depth = 0;
  size_t start = equals + 1;
  for (size_t i = start; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '[') ++depth;
    if (i < text.size() && text[i] == ']') --depth;
    if (i < text.size() && (text[i] != ';' || depth > 0)) continue;
    Result<OpCall> call = parse_op_call(text.substr(start, i - start));
    if (!call.is_ok()) throw UsageError("--field: " + call.status().message());
    calls.push_back(std::move(call).value());
    start = i + 1;
  }
  return {text.substr(0, equals), std::move(calls)};
}

// A normalisation's floats as an operation's parameter takes them.
std::vector<double> doubles(const std::vector<float>& values) {
  return {values.begin(), values.end()};
}

struct LoaderBenchOptions {
  std::string data;
  DataAccessOptions access;
  SourceChoice source;  // --source, --param
  int64_t batch = 256;
  LoaderSettings loader;  // one worker per core by default
  int epochs = 2;
  bool uint8 = false;
  int sample_cost_us = 0;
  double min_seconds = 1.0;  // a shorter timed run is repeated with more epochs
  // Encoded-image datasets: the training transform's output side, and switches that turn
  // single techniques off to measure what each contributes.
  int image_size = 224;
  bool dct_scaling = false;
  bool full_decode = false;
  bool scalar_resize = false;
  bool decode_only = false;
  std::vector<std::string> augment;    // --augment: on the image after the crop
  std::vector<std::string> field_ops;  // --field: FIELD=CALL;CALL..., in place of the image's
  bool json = false;
  std::string trace;   // --trace
  std::string report;  // --report
};

// The raw decode rate: decodes the whole image and writes the sum of its first row's bytes
// (so the decode cannot be skipped). For `--decode-only`.
class DecodeOnly : public Transform {
 public:
  explicit DecodeOnly(int field) : field_(field) {}
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    Result<ByteSpan> bytes = variable_field(*input.schema, input.record, field_);
    if (!bytes.is_ok()) return bytes.status();
    thread_local image::DecodeBuffer buffer;
    Result<image::DecodedCrop> decoded = image::decode_rgb(bytes.value(), {}, buffer);
    if (!decoded.is_ok()) return decoded.status();
    const image::RgbView& view = decoded.value().pixels;
    int64_t sum = 0;
    for (int x = 0; x < 3 * view.width; ++x) sum += view.data[x];
    std::memcpy(slot, &sum, sizeof(sum));
    return Status::ok();
  }

 private:
  const int field_;
};

// Resident anonymous memory of this process in bytes (heap, buffers; not the mapped shards).
double rss_anon_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  double kb = 0;
  while (status >> key) {
    if (key == "RssAnon:") {
      status >> kb;
      break;
    }
  }
  return kb * 1024;
}

// The bare loop: one thread, the loader's shuffled order (its --shuffle-window: a remote
// dataset's cache holds the shards that order reads at once, not a global shuffle's), checksums
// as the policy says, each batch's records resolved and written by BatchLayout::write_samples
// into one reused batch buffer: the loader's work without its queue, ordering and pool. Returns
// samples/s.
double bare_loop(const Dataset& dataset, const BatchLayout& layout, int64_t batch, int epochs,
                 VerifyPolicy verify, int64_t shuffle_window) {
  const int64_t n = static_cast<int64_t>(dataset.size());
  const auto buffer = BufferPool::create(layout, batch, 1, default_host_allocator())->acquire();
  std::vector<uint8_t*> dst;
  for (const auto& block : buffer->fields) dst.push_back(block.get());
  std::vector<ByteSpan> records(batch);
  std::vector<int64_t> shard_records;
  for (const ShardInfo& shard : dataset.manifest().shards)
    shard_records.push_back(static_cast<int64_t>(shard.records));
  Sampler sampler(std::move(shard_records),
                  SamplerOptions{7, true, 0, 1, batch, LastBatch::kShort, shuffle_window});
  // The last batch's pins are let go after the next batch's are taken: the shards the two share
  // stay mapped (a remote dataset maps a shard only while pinned).
  ShardPins held;
  const Stopwatch since_start;
  const std::vector<int64_t> starts(dataset.shard_starts().begin(), dataset.shard_starts().end());
  for (int e = 0; e < epochs; ++e) {
    // A remote dataset's cache keeps what this loop reads next (not the timed loader's plan),
    // read off the epoch's order that the plan then deals (each order computed once).
    std::vector<int64_t> samples = sampler.samples(e);
    if (dataset.follows_plan())
      dataset.advise(schedule_from_order(e, samples, sampler.samples(e + 1), starts), 2 * batch);
    EpochPlan plan = sampler.plan(e, 0, std::move(samples));
    const bool check = verify == VerifyPolicy::kAlways || (verify == VerifyPolicy::kOnce && e == 0);
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      IndexSpan idx = plan.batch(b);
      dataset.advance(b * batch);
      ShardPins pins = dataset.pin(idx.data, idx.size, nullptr).value_or_throw();
      for (size_t k = 0; check && k < idx.size; ++k) {
        dataset.prefetch_ahead(idx.data, idx.size, k);
        throw_if_error(dataset.verify_record(idx[k]));
      }
      dataset.resolve(idx.data, idx.size, records.data());
      size_t failed_at = 0;
      throw_if_error(layout.write_samples(records.data(), idx, 0, idx.size, e, 7, dst.data(),
                                          nullptr, &failed_at));
      held = std::move(pins);
    }
  }
  return static_cast<double>(n) * epochs / since_start.seconds();
}

// Timed runs shorter than a second of the loader are repeated with more epochs, up to this many.
constexpr int kMaxTimedEpochs = 100000;

// A loader timed over some epochs, with what was read at the end of the timed loop.
struct TimedRun {
  std::unique_ptr<LoaderCore> loader;
  int64_t samples = 0;
  int64_t batches = 0;  // delivered
  double checksum = 0;
  double seconds = 0;
  double busy_seconds = 0;        // the workers' time building batches
  double rss_anon_bytes = 0;      // after the loop
  ThroughputRecorder throughput;  // samples/s over the loop
};

TimedRun time_loader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options,
                     int epochs) {
  TimedRun run;
  run.loader = std::make_unique<LoaderCore>(std::move(dataset), options);
  const Stopwatch since_start;
  run.throughput.restart(0);
  HostBatch b;
  for (int e = 0; e < epochs; ++e) {
    LoaderCore::Epoch epoch = run.loader->epoch(e);
    while (epoch.next(b)) {
      run.samples += b.size;
      ++run.batches;
      run.checksum += static_cast<const uint8_t*>(b.fields[0].data)[0];
      run.throughput.record(run.samples);
    }
  }
  run.seconds = since_start.seconds();
  // Now, not later: the workers go on building the next epoch's first batches.
  run.busy_seconds = run.loader->stats().busy_ns.load() / 1e9;
  run.rss_anon_bytes = rss_anon_bytes();
  return run;
}

// The report: the run's facts, the pipeline's stage times per batch (the workers' time reading,
// transforming and assembling it, and the consumer's wait), samples/s over the timed loop.
RunReport loader_report(const TimedRun& run, const nlohmann::json& j) {
  const PipelineStats& s = run.loader->stats();
  RunReport r;
  r.title = "stoker bench loader";
  r.command = command_line();
  const std::pair<const char*, const char*> facts[] = {
      {"data", "data"},
      {"batch", "batch"},
      {"workers", "workers"},
      {"prefetch", "prefetch"},
      {"epochs", "epochs timed"},
      {"verify", "verify"},
      {"sample_cost_us", "sample cost (us)"},
      {"output", "output"},
      {"samples_per_s", "samples/s"},
      {"bare_loop_samples_per_s", "bare loop samples/s"}};
  for (const auto& [key, label] : facts) {
    const nlohmann::json& v = j.at(key);
    r.facts.emplace_back(label, v.is_string()           ? v.get<std::string>()
                                : v.is_number_integer() ? v.dump()
                                                        : fmt::format("{:.0f}", v.get<double>()));
  }
  const double built = std::max<int64_t>(1, s.batches.load());
  const double read = s.read_ns.load() / 1e9, transform = s.transform_ns.load() / 1e9;
  const double rest = std::max(0.0, s.busy_ns.load() / 1e9 - read - transform);
  r.split = {{"read + verify (worker time)", read / built},
             {"transform (worker time)", transform / built},
             {"assembly, finalize (worker time)", rest / built},
             {"consumer wait", s.wait_ns.load() / 1e9 / std::max<int64_t>(1, run.batches)}};
  r.charts.push_back({"Throughput over time",
                      "seconds since the timed loop started",
                      "samples/s",
                      {{"loader", run.throughput.points()}}});
  return r;
}

void run_loader_bench(const LoaderBenchOptions& o) {
  if (o.decode_only && !o.augment.empty())
    throw UsageError("--augment works on the crop, which --decode-only leaves out");
  InputSet inputs;
  inputs.add_datasets(o.data.empty() ? default_fashion_mnist_dir() : o.data, "the data");
  CommandOutputs outputs(std::move(inputs));
  outputs.dir("--report", o.report, report_file_names());
  outputs.file("--trace", o.trace);
  check_report_option(o.report);
  std::string data = o.data;
  if (data.empty()) {
    data = default_fashion_mnist_dir();
    convert_default_data(data, nullptr);
  }
  // A folder of datasets: its train/ (what a training run reads).
  const DataLocation where = locate_source(data, o.source);
  if (where.train.empty())
    throw Error(not_found(where.path + " holds no train/ dataset (it holds " +
                          describe_splits(where) + "): give one dataset, or a folder with train/"));
  auto dataset = open_source(where.train, o.access, o.loader.shuffle_window, o.source);
  data = dataset->dir();
  const double rss_before_loader = rss_anon_bytes();
  LoaderOptions options;
  options.batch_size = o.batch;
  static_cast<LoaderSettings&>(options) = o.loader;
  const int image = dataset->schema().find("image");
  const bool encoded = is_encoded_image_field(dataset->schema(), "image");
  // The image: torchvision's training transform (RandomResizedCrop + flip) of encoded images,
  // then --augment, then the normalisation (ImageNet's, Fashion-MNIST's for stored pixels).
  const auto image_request = [&](const std::vector<double>& mean, const std::vector<double>& std) {
    std::vector<OpCall> calls;
    if (encoded)
      calls.push_back(make_op_call("random_resized_crop", {{"size", int64_t{o.image_size}},
                                                           {"flip", 0.5},
                                                           {"dct_scaling", o.dct_scaling}})
                          .value_or_throw());
    for (const std::string& text : o.augment) calls.push_back(augment_op(text).value_or_throw());
    if (!o.uint8)
      calls.push_back(make_op_call("normalize", {{"mean", mean}, {"std", std}}).value_or_throw());
    ImageOutput measure;
    measure.crop_decode = !o.full_decode;
    measure.simd_resize = !o.scalar_resize;
    return make_field_request(dataset->schema(), "image", calls, measure).value_or_throw();
  };
  if (!o.field_ops.empty()) {
    // The fields named, each made by its calls; the other fixed fields as stored. Videos' indexes
    // are kept in the cache folder, where there is one; the dataset's videos' frame counts
    // (decode_clip's "uniform_clips" numbers clips over the dataset, as train does) read once.
    const std::string cache_dir = loader_cache_dir(o.access);
    FrameCountsMemo frame_counts;
    std::set<std::string> named;
    for (const std::string& text : o.field_ops) {
      const auto [field, calls] = field_calls(text);
      options.fields.push_back(make_field_request(dataset->schema(), field, calls, {},
                                                  dataset->manifest().sample_parts, cache_dir,
                                                  dataset.get(), &frame_counts)
                                   .value_or_throw());
      named.insert(field);
    }
    for (const Field& f : dataset->schema().fields())
      if (f.is_fixed() && !named.count(f.name)) options.fields.push_back(FieldRequest{f.name});
  } else if (encoded) {
    options.fields.push_back(
        o.decode_only
            ? FieldRequest{"image", std::make_shared<DecodeOnly>(dataset->schema().find("image"))}
            : image_request(doubles(kImageNetMean), doubles(kImageNetStd)));
  }
  for (const Field& f : dataset->schema().fields()) {
    if (!o.field_ops.empty() || !f.is_fixed() || (encoded && f.name != "label")) continue;
    const bool stored_image = f.dtype == DType::kUint8 && image >= 0 && f.name == "image";
    options.fields.push_back(
        stored_image ? image_request(doubles(kFashionMnistMean), doubles(kFashionMnistStd))
                     : FieldRequest{f.name});
  }
  if (o.sample_cost_us > 0)
    options.fields.push_back(FieldRequest{
        kSampleCostField, busy_wait_transform(std::chrono::microseconds(o.sample_cost_us))});
  // Every timed run is traced, the ones repeated because they were too short included.
  const std::unique_ptr<Tracer> tracer = make_tracer(o.trace);
  options.tracer = tracer.get();
  int epochs = o.epochs;
  TimedRun run = time_loader(dataset, options, epochs);
  // A run too short to mean anything (the first epochs pay for page faults and verification
  // too) is timed again with more epochs until it is long enough.
  std::string note;
  while (run.seconds < o.min_seconds && epochs < kMaxTimedEpochs) {
    const int longer = static_cast<int>(std::min<double>(
        kMaxTimedEpochs, std::ceil(epochs * 1.2 * o.min_seconds / std::max(run.seconds, 1e-6))));
    if (note.empty()) {
      note =
          fmt::format("note: {} epoch{} took {:.3f} s, too short to measure (--min-seconds {:g})",
                      epochs, epochs == 1 ? "" : "s", run.seconds, o.min_seconds);
    }
    epochs = std::max(longer, epochs + 1);
    run = TimedRun{};  // the first loader goes before the next comes
    run = time_loader(dataset, options, epochs);
  }
  if (!note.empty()) note += fmt::format("; timed {} epochs instead", epochs);
  write_trace(tracer.get(), o.trace);
  const LoaderCore& loader = *run.loader;
  const size_t sample_bytes = loader.layout().sample_bytes();
  const int64_t samples = run.samples;
  const double checksum = run.checksum;
  const double seconds = run.seconds;
  const double busy_seconds = run.busy_seconds;
  const double rss_after_loader = run.rss_anon_bytes;
  const double rate = samples / seconds;
  const double bare =
      bare_loop(*dataset, loader.layout(), o.batch, epochs, options.verify, options.shuffle_window);
  const PipelineStats& s = loader.stats();
  const std::optional<TuningReport> tuning = loader.tuning();
  // A tuned loader: the workers and prefetch it chose (it measured the rest of the run with).
  const int workers = tuning ? tuning->workers : loader.options().workers.threads();
  const int prefetch = tuning ? tuning->prefetch : loader.options().prefetch;
  const double busy = workers > 0 ? busy_seconds / (workers * seconds) : 0.0;
  // The wait for each epoch's first batch after the first: what the persistent pool removes.
  std::vector<double> epoch_start_wait_ms;
  for (size_t e = 1; e < s.epoch_start_wait_ns.size(); ++e)
    epoch_start_wait_ms.push_back(s.epoch_start_wait_ns[e] / 1e6);
  const nlohmann::json image_transform =
      encoded ? nlohmann::json{{"random_resized_crop", o.decode_only ? 0 : o.image_size},
                               {"dct_scaling", o.dct_scaling},
                               {"crop_decode", !o.full_decode},
                               {"simd_resize", !o.scalar_resize},
                               {"decode_only", o.decode_only}}
              : nlohmann::json(nullptr);
  nlohmann::json j = {{"data", data},
                      {"batch", o.batch},
                      {"workers", workers},
                      {"prefetch", prefetch},
                      {"epochs", epochs},
                      {"verify", to_string(o.loader.verify)},
                      {"shuffle_window", shuffle_window_text(o.loader.shuffle_window)},
                      {"sample_cost_us", o.sample_cost_us},
                      {"image_transform", image_transform},
                      {"output", o.uint8 ? "uint8" : "float32"},
                      {"samples", samples},
                      {"seconds", seconds},
                      {"samples_per_s", rate},
                      {"mb_per_s", rate * sample_bytes / 1e6},
                      {"bare_loop_samples_per_s", bare},
                      {"ratio_to_bare_loop", rate / bare},
                      {"consumer_wait_s", s.wait_ns.load() / 1e9},
                      {"read_s", s.read_ns.load() / 1e9},
                      {"transform_s", s.transform_ns.load() / 1e9},
                      {"workers_busy_fraction", busy},
                      {"epoch_start_wait_ms", epoch_start_wait_ms},
                      {"buffer_mb", loader.buffer_bytes() / 1e6},
                      {"rss_anon_mb", rss_anon_bytes() / 1e6},
                      {"rss_anon_growth_mb", (rss_after_loader - rss_before_loader) / 1e6},
                      {"checksum", checksum}};
  if (!note.empty()) j["note"] = note;
  if (!o.augment.empty()) j["augment"] = o.augment;
  // A token source: the tokens its samples hold (a packed row's, its padding left out).
  const std::vector<int64_t> parts = dataset->source().part_tokens();
  const double sample_tokens =
      static_cast<double>(std::accumulate(parts.begin(), parts.end(), int64_t{0})) /
      std::max<uint64_t>(1, dataset->size());
  if (sample_tokens > 0) j["tokens_per_s"] = rate * sample_tokens;
  // Clips' frames (decode_clip): what decoding from keyframes costs per frame delivered.
  const int64_t frames_delivered = s.video_frames_delivered.load();
  if (frames_delivered > 0)
    j["video"] = {{"frames_decoded", s.video_frames_decoded.load()},
                  {"frames_delivered", frames_delivered},
                  {"decoded_per_delivered",
                   static_cast<double>(s.video_frames_decoded.load()) / frames_delivered}};
  const ShardSourceStats fetched = dataset->source().stats();
  if (dataset->source().needs_pins()) {
    j["remote"] = {{"fetched_mb", fetched.fetched_bytes / 1e6},
                   {"wait_s", fetched.wait_ns / 1e9},
                   {"download_mb_per_s", fetched.download_bytes_per_s / 1e6},
                   {"download_streams", fetched.download_streams},
                   {"most_downloads", fetched.most_downloads},
                   {"prefetch_shards", fetched.prefetch_shards}};
  }
  const std::string source_note = new_notes_line(fetched, 0);
  if (!source_note.empty()) j["source_note"] = source_note;
  write_report_option(loader_report(run, j), o.report);
  if (tuning) j["tuning"] = nlohmann::json::parse(tuning->to_json());
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  if (!note.empty()) fmt::print("{}\n", note);
  if (!source_note.empty()) fmt::print("note: {}\n", source_note);
  fmt::print("dataset    {}\n", dataset->describe());
  if (!o.augment.empty()) fmt::print("augment    {}\n", fmt::join(o.augment, " "));
  fmt::print(
      "loader     {:>12.0f} samples/s  {:>8.1f} MB/s  ({} samples, {} workers{}, {:.3f} s)\n", rate,
      rate * sample_bytes / 1e6, samples, workers, tuning ? " (auto)" : "", seconds);
  if (sample_tokens > 0)
    fmt::print("tokens     {:>12.0f} tokens/s   ({:.1f} tokens a sample)\n", rate * sample_tokens,
               sample_tokens);
  fmt::print("bare loop  {:>12.0f} samples/s  (one thread, same work, no queue)\n", bare);
  fmt::print("ratio      {:>12.2f}\n", rate / bare);
  fmt::print(
      "memory     batch buffers {:.1f} MB; anonymous RSS {:.1f} MB, {:+.1f} MB since before the "
      "loader (mapped shards not counted)\n",
      loader.buffer_bytes() / 1e6, rss_anon_bytes() / 1e6,
      (rss_after_loader - rss_before_loader) / 1e6);
  fmt::print(
      "stages     resolve + verify {:.3f} s, transforms {:.3f} s (worker time), consumer "
      "wait {:.3f} s; workers busy {:.0f}% of the run\n",
      s.read_ns.load() / 1e9, s.transform_ns.load() / 1e9, s.wait_ns.load() / 1e9, 100 * busy);
  if (!epoch_start_wait_ms.empty())
    fmt::print("epochs     wait for the first batch of epochs 2..{}: {:.3f} ms at most\n", epochs,
               *std::max_element(epoch_start_wait_ms.begin(), epoch_start_wait_ms.end()));
  if (dataset->source().needs_pins()) {
    fmt::print(
        "remote     fetched {:.1f} MB, waited {:.3f} s; one download {:.1f} MB/s, {} at once "
        "now (most {}), {} shards ahead\n",
        fetched.fetched_bytes / 1e6, fetched.wait_ns / 1e9, fetched.download_bytes_per_s / 1e6,
        fetched.download_streams, fetched.most_downloads, fetched.prefetch_shards);
  }
  if (tuning) fmt::print("tuning     {}\n", tuning->summary());
  if (frames_delivered > 0)
    fmt::print("video      {} frames decoded for the {} delivered: {:.2f} decoded per frame\n",
               s.video_frames_decoded.load(), frames_delivered,
               j["video"]["decoded_per_delivered"].get<double>());
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Measure stoker's parts");
  bench->require_subcommand(1);
  auto o = std::make_shared<LoaderBenchOptions>();
  CLI::App* loader =
      bench->add_subcommand("loader", "Loader throughput (samples/s, MB/s) beside the bare loop");
  loader
      ->add_option("--data", o->data,
                   "Dataset directory, or a folder with train/ (used) and test/, or its s3:// "
                   "or http(s):// URL (default: Fashion-MNIST, converted if needed)")
      ->check(path_value("--data"));
  add_data_access_options(*loader, o->access);
  add_source_options(*loader, o->source);
  add_whole_number(*loader, "--batch", o->batch, "Batch size", 1)->capture_default_str();
  add_loader_settings_options(
      *loader, o->loader,
      {"Worker threads (-1: one per core beyond the consumer's, 0: inline, auto: tuned while it "
       "runs, with an auto --prefetch too)",
       /*per_core=*/true, /*verify=*/true, /*prefetch=*/true});
  add_whole_number(*loader, "--epochs", o->epochs, "Epochs to time (more if they are too short)", 1,
                   kMaxTimedEpochs)
      ->capture_default_str();
  loader
      ->add_option("--min-seconds", o->min_seconds,
                   "A timed run shorter than this is too short to mean anything: it is timed "
                   "again with more epochs (0: never)")
      ->check(real_number("--min-seconds", 0, true, 600))
      ->capture_default_str();
  loader->add_flag("--uint8", o->uint8, "Deliver images as uint8 (normalise on the device)");
  add_whole_number(*loader, "--sample-cost-us", o->sample_cost_us,
                   "Add a synthetic field whose transform busy-waits N us per sample (a "
                   "stand-in for decoding; benchmarks only)",
                   0, 1000000)
      ->capture_default_str();
  loader
      ->add_option("--image-size", o->image_size,
                   "JPEG/PNG datasets: RandomResizedCrop output side (flip and normalise too)")
      ->check(whole_number("--image-size", 1, kMaxImageSize))
      ->capture_default_str();
  loader->add_flag("--dct-scaling", o->dct_scaling,
                   "JPEG/PNG datasets: the fast mode, decoding large JPEG crops at a reduced DCT "
                   "scale (pixels differ from torchvision's)");
  loader->add_flag("--full-decode", o->full_decode,
                   "JPEG/PNG datasets: decode whole images, not just the crop (to measure it)");
  loader->add_flag("--scalar-resize", o->scalar_resize,
                   "JPEG/PNG datasets: resize with the scalar kernel, not SIMD (to measure it)");
  loader->add_flag("--decode-only", o->decode_only,
                   "JPEG/PNG datasets: only decode whole images (the raw decode rate)");
  add_augment_option(*loader, o->augment);
  loader
      ->add_option("--field", o->field_ops,
                   "A field made by operations, FIELD=NAME[:key=value,...];NAME..., repeatable, "
                   "in place of the image's training transform (any dataset: e.g. "
                   "video=decode_clip:num_frames_per_clip=16,resize=[128],crop=[112]); the "
                   "other fixed fields as stored")
      ->each([](const std::string& text) { field_calls(text); });
  loader->add_flag("--json", o->json, "Print JSON");
  add_trace_option(*loader, o->trace);
  add_report_option(*loader, o->report);
  loader->callback([o] { run_loader_bench(*o); });
  add_bench_train_command(*bench);
}

}  // namespace stoker::cli
