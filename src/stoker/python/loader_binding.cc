#include "stoker/python/loader_binding.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stoker/access/data_source.h"
#include "stoker/cache/data_access.h"
#include "stoker/pipeline/field_pipeline.h"
#include "stoker/pipeline/frame_counts_memo.h"
#include "stoker/pipeline/joint_pipeline.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/pipeline/normalization.h"
#include "stoker/pipeline/order_registry.h"
#include "stoker/pipeline/part_index.h"
#include "stoker/python/busy_scope.h"
#include "stoker/python/data_access_arguments.h"
#include "stoker/python/dlpack_export.h"
#include "stoker/python/interruptible.h"
#include "stoker/python/op_binding.h"
#include "stoker/python/pinned_allocator.h"
#include "stoker/python/released_gil.h"
#include "stoker/python/sigint_cancelled.h"
#include "stoker/python/sigint_watch.h"
#include "stoker/store/data_identity.h"
#include "stoker/store/dataset.h"
#include "stoker/store/import/class_folder_source.h"
#include "stoker/store/mixed_shard_source.h"
#include "stoker/util/mapped_read_guard.h"
#include "stoker/util/process_id.h"
#include "stoker/video/clips_per_video.h"

namespace stoker::python {
namespace py = pybind11;
using namespace py::literals;

namespace {

// How long a thread waiting for a batch sleeps before it lets Python handle signals.
constexpr std::chrono::milliseconds kSignalCheckInterval{50};

// What a bound loader shares with its epochs. Used with the GIL held only.
struct Shared {
  std::shared_ptr<const Dataset> dataset;
  // Where the source operations keep what they learn between runs (videos' indexes): the cache
  // folder, "" where there is none (SourceContext::cache_dir).
  std::string cache_dir;
  // The order of a mixture's dataset (order_registry.h's "mixture", its parameters, and their
  // text, order_text), or of records giving several samples ("per_record"); "" else.
  std::string order;
  SourceParams order_params;
  std::string order_text;
  std::unique_ptr<LoaderCore> core;  // set by configure()
  py::object to_tensor;              // DLPack capsule -> tensor
  std::vector<py::str> names;        // the batch fields', made once
  std::vector<py::str> sizes_names;  // a padded field's NAME_sizes; empty for the others
  // A thread waits for a batch with the GIL released: calls from other threads must not touch
  // the loader meanwhile.
  std::atomic<bool> busy{false};
  // The process that made the loader, the only one its threads run in: os.fork() copies none.
  const pid_t pid = process_id();

  Shared() = default;
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  // In a fork's child the loader and its dataset are left as they are (a copy of the parent's
  // memory): destroying them would join threads the child does not have, and wait for ever.
  ~Shared() {
    if (process_id() == pid) return;
    static_cast<void>(core.release());
    static_cast<void>(new std::shared_ptr<const Dataset>(std::move(dataset)));
  }
};

constexpr const char* kLoaderBusy =
    "stoker.Loader is in use by another thread (waiting for a batch): use a loader from one "
    "thread at a time";

LoaderCore& configured(Shared& shared) {
  if (!shared.core) throw std::logic_error("LoaderCore.configure() was not called");
  return *shared.core;
}

// The loader, to run it: RuntimeError, one line, in a fork's child.
LoaderCore& working(Shared& shared) {
  if (process_id() != shared.pid) {
    throw std::runtime_error(fmt::format(
        "this stoker.Loader was made in process {} and cannot run in process {}, a fork of it "
        "(os.fork, multiprocessing's fork): its threads stayed in the parent; make the Loader "
        "after forking, in the process that iterates it",
        shared.pid, process_id()));
  }
  return configured(shared);
}

// `values` as int64s: a 1-D int64 buffer (a numpy array: one copy, no list) or a sequence of
// ints. ValueError naming `name` for anything else.
std::vector<int64_t> int64_values(const py::object& values, const char* name) {
  if (PyObject_CheckBuffer(values.ptr())) {
    const py::buffer_info info = values.cast<py::buffer>().request();
    if (info.ndim != 1)
      throw Error(
          invalid_argument(fmt::format("{} must be 1-D, not of {} dimensions", name, info.ndim)));
    const std::string& f = info.format;  // int64 in native (little-endian) order
    if (info.itemsize == 8 &&
        (f == "q" || f == "l" || f == "<q" || f == "<l" || f == "=q" || f == "=l")) {
      std::vector<int64_t> out(static_cast<size_t>(info.shape[0]));
      const auto* at = static_cast<const char*>(info.ptr);
      for (int64_t& v : out) {
        std::memcpy(&v, at, sizeof v);
        at += info.strides[0];
      }
      return out;
    }
  }
  try {
    return values.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    throw Error(
        invalid_argument(fmt::format("{} must be a sequence of ints or a 1-D int64 buffer, not {}",
                                     name, Py_TYPE(values.ptr())->tp_name)));
  }
}

// A batch field from its spec {"name", "ops": [{"op": NAME, PARAM: value, ...}]}, as
// python/stoker/transforms.py makes them: the registry's operations (field_pipeline.h).
FieldRequest field_request(const Dataset& dataset, const py::dict& spec,
                           const std::string& sample_parts, const std::string& cache_dir,
                           FrameCountsMemo& frame_counts) {
  std::vector<OpCall> calls;
  for (const py::handle op : spec["ops"]) calls.push_back(op_call_from(op.cast<py::dict>()));
  FieldRequest request =
      make_field_request(dataset.schema(), spec["name"].cast<std::string>(), calls, {},
                         sample_parts, cache_dir, &dataset, &frame_counts)
          .value_or_throw();
  request.padded = spec.contains("padded") && spec["padded"].cast<bool>();
  return request;
}

// The batch fields of a joint spec {"name": image field, "ops": [joint calls], "joint": {"boxes",
// "labels", "masks", "class_map" (each a field's name or None), "max_size", "masks_max_size",
// "float", "unit_scale", "mean", "std", "class_map_int64"}} (joint_pipeline.h), by name.
std::map<std::string, FieldRequest> joint_requests(const Dataset& dataset, const py::dict& spec) {
  std::vector<OpCall> calls;
  for (const py::handle op : spec["ops"]) calls.push_back(op_call_from(op.cast<py::dict>()));
  const py::dict joint = spec["joint"].cast<py::dict>();
  const auto name = [&](const char* key) {
    return joint[key].is_none() ? std::string() : joint[key].cast<std::string>();
  };
  JointFields fields;
  fields.image = spec["name"].cast<std::string>();
  fields.boxes = name("boxes");
  fields.labels = name("labels");
  fields.masks = name("masks");
  fields.class_map = name("class_map");
  fields.max_size = joint["max_size"].cast<int64_t>();
  fields.masks_max_size = joint["masks_max_size"].cast<int64_t>();
  fields.float_image = joint["float"].cast<bool>();
  fields.float_unit = image::unit_scale_named(joint["unit_scale"].cast<std::string>());
  fields.mean = joint["mean"].cast<std::vector<float>>();
  fields.std = joint["std"].cast<std::vector<float>>();
  fields.class_map_int64 = joint["class_map_int64"].cast<bool>();
  std::map<std::string, FieldRequest> requests;
  for (FieldRequest& request :
       make_joint_requests(dataset.schema(), fields, calls, dataset.manifest().max_lengths)
           .value_or_throw())
    requests.emplace(request.name, std::move(request));
  return requests;
}

// The batch's fields from their specs, in their order: field_request's, or a joint spec's
// fields, each where its spec ({"name", "joint": the image field's name} for the others) stands.
// Where each part of a mixture's dataset starts (its records' first index), or nothing for a
// dataset of one part or one that stores a field named as the part field (kPartField).
std::vector<uint64_t> part_starts(const Dataset& dataset) {
  const std::vector<int> parts = dataset.source().part_shards();
  if (parts.size() < 2 || dataset.schema().find(kPartField) >= 0) return {};
  std::vector<uint64_t> starts;
  int shard = 0;
  for (const int shards : parts) {
    starts.push_back(dataset.shard_starts()[shard]);
    shard += shards;
  }
  return starts;
}

// `sample_parts`: what a record's samples are (SourceContext::sample_parts).
std::vector<FieldRequest> field_requests(const Dataset& dataset, const py::list& specs,
                                         const std::string& sample_parts,
                                         const std::string& cache_dir) {
  std::map<std::string, FieldRequest> joint;
  for (const py::handle handle : specs) {
    const py::dict spec = handle.cast<py::dict>();
    if (spec.contains("joint") && py::isinstance<py::dict>(spec["joint"]))
      joint = joint_requests(dataset, spec);
  }
  std::vector<FieldRequest> requests;
  FrameCountsMemo frame_counts;  // the videos' frame counts read once for all the fields
  for (const py::handle handle : specs) {
    const py::dict spec = handle.cast<py::dict>();
    if (spec["name"].cast<std::string>() == kPartField && py::len(spec["ops"]) == 0) {
      if (std::vector<uint64_t> starts = part_starts(dataset); !starts.empty()) {
        requests.emplace_back(kPartField, part_index_transform(std::move(starts)));
        continue;
      }
    }
    if (!spec.contains("joint")) {
      requests.push_back(field_request(dataset, spec, sample_parts, cache_dir, frame_counts));
      continue;
    }
    const auto made = joint.find(spec["name"].cast<std::string>());
    if (made == joint.end())
      throw py::value_error("field '" + spec["name"].cast<std::string>() +
                            "': no joint transform makes it");
    requests.push_back(made->second);
    requests.back().padded = spec.contains("padded") && spec["padded"].cast<bool>();
  }
  return requests;
}

// Sample k of a variable field laid out as a list (HostField::sizes) as its own array.
HostField sample_of(const HostField& field, int64_t k) {
  HostField sample;
  sample.dtype = field.dtype;
  const size_t rank = field.shape.size() - 1;
  sample.shape.assign(field.sizes + k * rank, field.sizes + (k + 1) * rank);
  sample.strides.assign(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) sample.strides[d - 1] = sample.strides[d] * sample.shape[d];
  sample.data = static_cast<uint8_t*>(field.data) + k * field.strides[0] * dtype_size(field.dtype);
  return sample;
}

// A padded field's sample shapes, int64 [size, rank].
HostField sizes_of(const HostField& field) {
  HostField sizes;
  sizes.dtype = DType::kInt64;
  const auto rank = static_cast<int64_t>(field.shape.size() - 1);
  sizes.shape = {field.shape[0], rank};
  sizes.strides = {rank, 1};
  sizes.data = const_cast<int64_t*>(field.sizes);
  return sizes;
}

// The loader's batch transform from its call {"op": NAME, PARAM: value, ...}
// (python/stoker/_batch_transforms.py), or null for None.
std::shared_ptr<const BatchTransform> batch_transform(const py::object& call) {
  if (call.is_none()) return nullptr;
  const OpCall op = op_call_from(call.cast<py::dict>());
  if (op.op->role != OpRole::kBatch)
    throw Error(invalid_argument(op.op->name + " is not a batch operation"));
  return op.op->make_batch(op.params).value_or_throw();
}

LastBatch parse_last_batch(const std::string& name) {
  if (std::optional<LastBatch> last = kLastBatchNames.find(name)) return *last;
  throw Error(
      invalid_argument("last_batch '" + name + "' is not one of " + kLastBatchNames.joined()));
}

// Sets the loader settings `given` in `settings` through the table (loader_settings.h): each
// keyword a setting's name, each value None (the default), a str (the setting's text) or an int.
void apply_settings(const py::kwargs& given, LoaderSettings& settings) {
  for (const auto& [keyword, value] : given) {
    const std::string name = keyword.cast<std::string>();
    const LoaderSettingDescription* setting = find_loader_setting(name);
    if (setting == nullptr)
      throw py::type_error("configure() got an unexpected keyword argument '" + name + "'");
    if (value.is_none()) continue;
    const std::string text = py::isinstance<py::str>(value) ? value.cast<std::string>()
                                                            : std::to_string(value.cast<int64_t>());
    throw_if_error(parse_loader_setting(*setting, text, settings));
  }
}

// A setting's text as Python shows it: a whole number as an int ("all" stays a str).
py::object setting_object(const std::string& text) {
  int64_t number = 0;
  const char* end = text.data() + text.size();
  const auto parsed = std::from_chars(text.data(), end, number);
  if (parsed.ec == std::errc() && parsed.ptr == end) return py::int_(number);
  return py::str(text);
}

// _stoker.LoaderCore: opened on a dataset directory, then configured once.
class BoundLoader {
 public:
  // A dataset directory or URL (access/data_source.h), its shards cached as `access` says and
  // checked against the cache's floor for `shuffle_window`.
  // `source` names what the path is (source_registry.h, "auto"), `params` its parameters.
  BoundLoader(const std::string& path, const DataAccessOptions& access, int64_t shuffle_window,
              const std::string& source, const SourceParams& params)
      : shared_(std::make_shared<Shared>()) {
    install_mapped_read_fault_handler();  // again, if faulthandler (say) replaced it since import
    set_cache_dir(access);
    // A URL's manifest is fetched, a remote image folder listed: Ctrl-C stops it.
    shared_->dataset =
        interruptible<Result<std::shared_ptr<const Dataset>>>(
            [&](const std::function<bool()>& cancelled) {
              return remote::open_dataset(path, access, shuffle_window, source, params, cancelled);
            })
            .value_or_throw();
  }

  // A mixture of datasets, each `parts`' (path, source, its parameters), read as one
  // (store/mixed_shard_source.h) in the "mixture" order with `mixture`'s parameters (weights,
  // samples_per_epoch, until), checked here.
  BoundLoader(const std::vector<std::tuple<std::string, std::string, SourceParams>>& parts,
              const DataAccessOptions& access, int64_t shuffle_window, SourceParams mixture)
      : shared_(std::make_shared<Shared>()) {
    install_mapped_read_fault_handler();
    set_cache_dir(access);
    // Manifests are fetched, remote folders listed: Ctrl-C stops it.
    shared_->dataset =
        interruptible<Result<std::shared_ptr<const Dataset>>>(
            [&](const std::function<bool()>& cancelled) -> Result<std::shared_ptr<const Dataset>> {
              std::vector<std::shared_ptr<const Dataset>> datasets;
              for (const auto& [path, source, params] : parts) {
                STOKER_ASSIGN_OR_RETURN(
                    std::shared_ptr<const Dataset> dataset,
                    remote::open_dataset(path, access, shuffle_window, source, params, cancelled));
                datasets.push_back(std::move(dataset));
              }
              STOKER_ASSIGN_OR_RETURN(std::shared_ptr<MixedShardSource> mixed,
                                      MixedShardSource::create(std::move(datasets)));
              return Dataset::open(std::move(mixed));
            })
            .value_or_throw();
    shared_->order = "mixture";
    shared_->order_params = std::move(mixture);
    shared_->order_text = order_text(shared_->order, shared_->order_params).value_or_throw();
    OrderInput input;  // checked against the parts now, not at configure()
    input.parts.assign(parts.size(), {1});
    input.part_tokens = shared_->dataset->source().part_tokens();
    make_order(shared_->order, input, shared_->order_params).value_or_throw();
  }

  // The order's text for a mixture ("mixture:weights=[...],...") or samples_per_record > 1
  // ("per_record:samples=2,window=0"); "" else.
  const std::string& order() const { return shared_->order_text; }

  // Each record `k` samples an epoch, before configure(): the "per_record" order (over
  // `window` shards at a time where shuffled, 0: all), its record r's sample k being a video's
  // clip k of the k its sampler takes (decode_clip's clips_per_video(k)). ValueError for a
  // mixture (configure(), for a dataset whose records are several samples already).
  void set_samples_per_record(int64_t k, int64_t window) {
    if (shared_->core) throw std::logic_error("set_samples_per_record() after configure()");
    if (k == 1) return;
    if (!shared_->order.empty())
      throw Error(invalid_argument("Order(samples_per_record=) deals one dataset, not a " +
                                   shared_->order));
    SourceParams params = {{"samples", k}, {"window", window}};
    shared_->order_text = order_text("per_record", params).value_or_throw();
    shared_->order = "per_record";
    shared_->order_params = std::move(params);
  }

  // What a record's samples are to the source operations: the dataset's, or a per_record
  // order's clips.
  std::string sample_parts() const {
    if (shared_->order != "per_record") return shared_->dataset->manifest().sample_parts;
    return video::ClipsPerVideo{std::get<int64_t>(shared_->order_params.front().second)}.text();
  }

  // The manifest's class names (an image folder's classes), [] where it has none.
  std::vector<std::string> class_names() const { return shared_->dataset->manifest().class_names; }

  // A class folder's samples (an image or video folder's) [(path, class index)] in torchvision's
  // order; None for a dataset, whose records do not name their files.
  py::object samples() const {
    const auto* folder = dynamic_cast<const ClassFolderSource*>(&shared_->dataset->source());
    if (folder == nullptr) return py::none();
    py::list out;
    for (const ImageFolderSample& sample : folder->listing().samples)
      out.append(py::make_tuple(sample.path, sample.label));
    return out;
  }

  // Each shard's [file, records, index checksum in hex], in manifest order: the dataset's
  // identity for a state_dict.
  py::list shards() const {
    py::list out;
    for (const ShardInfo& s : shared_->dataset->manifest().shards)
      out.append(py::make_tuple(s.file, s.records, fmt::format("{:016x}", s.index_checksum)));
    return out;
  }

  // Its files' blocks [[first, last, digest]] as they are now (store/data_identity.h); [] for a
  // stoker dataset: the rest of its identity for a state_dict.
  py::list file_blocks() const {
    std::vector<FileBlock> blocks;
    {
      ReleasedGil release;  // an image folder's files are stat'ed
      blocks = stoker::file_blocks(shared_->dataset->source()).value_or_throw();
    }
    py::list out;
    for (const FileBlock& b : blocks) out.append(py::make_tuple(b.first, b.last, b.digest));
    return out;
  }

  std::string describe() const { return shared_->dataset->describe(); }

  // `message` about dataset record `index` as the loader names a bad record: where it lies (a
  // tar and member, a file and row), then `message`. IndexError outside the dataset.
  std::string record_error(int64_t index, const std::string& message) const {
    if (index < 0 || static_cast<uint64_t>(index) >= shared_->dataset->size())
      throw py::index_error(fmt::format("record {} outside the dataset", index));
    return shared_->dataset->record_error(static_cast<uint64_t>(index), corrupt(message)).message();
  }

  // What the dataset's source noted after its first `said` notes (ShardSourceStats::notes):
  // (how many it has noted, the line that tells the new ones, "" if none).
  py::tuple source_notes(int64_t said) const {
    const ShardSourceStats stats = shared_->dataset->source().stats();
    return py::make_tuple(stats.notes, new_notes_line(stats, said));
  }

  // The dataset's fields: [{"name", "dtype", "shape"}], shape None for bytes fields and, for a
  // variable-length field, its dimension's name first (["N", 4]); a mixture's "source" last.
  py::list schema() const {
    py::list out;
    for (const Field& f : shared_->dataset->schema().fields()) {
      py::object shape = py::none();
      if (f.is_fixed()) shape = py::cast(f.shape);
      if (f.is_variable_length()) {
        py::list dims;
        dims.append(f.length_dim);
        for (const int64_t d : f.shape) dims.append(d);
        shape = dims;
      }
      out.append(py::dict("name"_a = f.name, "dtype"_a = dtype_name(f.dtype), "shape"_a = shape));
    }
    if (!part_starts(*shared_->dataset).empty())  // a mixture's: the source of each sample
      out.append(py::dict("name"_a = kPartField, "dtype"_a = "int64", "shape"_a = py::list()));
    return out;
  }

  uint64_t size() const { return shared_->dataset->size(); }
  // The tokens its records hold in all, a token source's (ShardSource::part_tokens); else 0.
  int64_t tokens() const {
    const std::vector<int64_t> tokens = shared_->dataset->source().part_tokens();
    return tokens.size() == 1 ? tokens[0] : 0;
  }

  // `settings`: the loader settings by name (apply_settings), the rest their defaults.
  void configure(int64_t batch_size, bool shuffle, uint64_t seed, const std::string& last_batch,
                 int rank, int world_size, const py::list& fields, py::object to_tensor,
                 std::optional<std::pair<uintptr_t, uintptr_t>> pinned_memory,
                 const py::object& batch, const py::kwargs& settings) {
    BusyScope busy(shared_->busy, kLoaderBusy);
    if (shared_->core) throw std::logic_error("LoaderCore.configure() was called already");
    LoaderOptions o;
    o.batch_size = batch_size;
    o.shuffle = shuffle;
    o.seed = seed;
    o.last_batch = parse_last_batch(last_batch);
    o.rank = rank;
    o.world_size = world_size;
    apply_settings(settings, o);
    o.order = shared_->order;
    o.order_params = shared_->order_params;
    o.fields = field_requests(*shared_->dataset, fields, sample_parts(), shared_->cache_dir);
    o.batch_transform = batch_transform(batch);
    shared_->core = std::make_unique<LoaderCore>(
        shared_->dataset, std::move(o),
        pinned_memory ? pinned_host_allocator(pinned_memory->first, pinned_memory->second)
                      : default_host_allocator());
    for (const BatchField& f : shared_->core->layout().fields()) {
      shared_->names.emplace_back(f.name);
      shared_->sizes_names.emplace_back(f.padded ? f.name + "_sizes" : "");
    }
    shared_->to_tensor = std::move(to_tensor);
  }

  // The options in force, auto values resolved: the loader settings after the rest.
  py::dict options() const {
    const LoaderOptions& o = configured(*shared_).options();
    py::dict out("batch_size"_a = o.batch_size, "shuffle"_a = o.shuffle, "seed"_a = o.seed,
                 "last_batch"_a = kLastBatchNames.name(o.last_batch), "rank"_a = o.rank,
                 "world_size"_a = o.world_size);
    for (const LoaderSettingDescription& setting : loader_setting_descriptions())
      out[py::str(setting.spec.name)] = setting_object(setting.text(o));
    return out;
  }

  // workers="auto": what the tuning chose so far (TuningReport::to_json as a dict); else None.
  // Busy while another thread waits for a batch: the tuner moves on in that wait.
  py::object tuning() const {
    BusyScope busy(shared_->busy, kLoaderBusy);
    const std::optional<TuningReport> report = configured(*shared_).tuning();
    if (!report) return py::none();
    return py::module_::import("json").attr("loads")(report->to_json());
  }

  // The batch fields in order: [(name, dtype, sample shape)]; a variable field's shape is its
  // capacity.
  py::list fields() const {
    py::list out;
    for (const BatchField& f : configured(*shared_).layout().fields())
      out.append(py::make_tuple(f.name, dtype_name(f.dtype), f.sample_shape));
    return out;
  }

  // The variable fields: {name: "padded" or "list"}.
  py::dict variable_fields() const {
    py::dict out;
    for (const BatchField& f : configured(*shared_).layout().fields()) {
      if (f.variable) out[py::str(f.name)] = f.padded ? "padded" : "list";
    }
    return out;
  }

  int64_t batches_per_epoch() const { return configured(*shared_).batches_per_epoch(); }
  int64_t epoch_samples() const { return configured(*shared_).epoch_samples(); }

  // This rank's indices of epoch `epoch`, in the loader's order (int64 [samples]).
  py::array_t<int64_t> indices(int64_t epoch) const {
    const EpochPlan plan = cancelled_by_sigint([&] { return configured(*shared_).plan(epoch); });
    const IndexSpan all = plan.sequence();
    py::array_t<int64_t> out(static_cast<py::ssize_t>(all.size));
    std::copy(all.begin(), all.end(), out.mutable_data());
    return out;
  }

  py::tuple state() const {
    BusyScope busy(shared_->busy, kLoaderBusy);
    const LoaderState s = configured(*shared_).state();
    return py::make_tuple(s.seed, s.epoch, s.position);
  }

  void restore(uint64_t seed, int64_t epoch, int64_t position, int64_t shuffle_window,
               int64_t ra_reps) {
    BusyScope busy(shared_->busy, kLoaderBusy);
    working(*shared_).restore({seed, epoch, position, shuffle_window, ra_reps});
  }

  size_t buffer_bytes() const { return configured(*shared_).buffer_bytes(); }

  // Per-stage totals since construction, in seconds and counts; a mixture's also each source's
  // samples delivered and their tokens (source_tokens).
  py::dict stats() const {
    const PipelineStats& s = configured(*shared_).stats();
    py::dict out = stage_stats(s);
    if (s.part_samples.empty()) return out;
    const Dataset& dataset = *shared_->dataset;
    const std::vector<int64_t> tokens = dataset.source().part_tokens();
    py::list samples, part_tokens;
    int shard = 0;
    for (size_t p = 0; p < s.part_samples.size(); ++p) {
      const int64_t n = s.part_samples[p].load();
      const uint64_t first = dataset.shard_starts()[static_cast<size_t>(shard)];
      shard += dataset.source().part_shards()[p];
      const uint64_t records = dataset.shard_starts()[static_cast<size_t>(shard)] - first;
      samples.append(n);
      if (p < tokens.size() && tokens[p] > 0)
        part_tokens.append(static_cast<int64_t>(static_cast<__int128>(n) * tokens[p] /
                                                static_cast<__int128>(records)));
      else
        part_tokens.append(py::none());
    }
    out["source_samples"] = samples;
    out["source_tokens"] = part_tokens;
    return out;
  }

  const std::shared_ptr<Shared>& shared() const { return shared_; }

 private:
  // The cache folder `access` names, where it names one, bounded by its cache_gb.
  void set_cache_dir(const DataAccessOptions& access) {
    shared_->cache_dir = loader_cache_dir(access);
  }

  static py::dict stage_stats(const PipelineStats& s) {
    return py::dict(
        "read_s"_a = s.read_ns.load() * 1e-9, "transform_s"_a = s.transform_ns.load() * 1e-9,
        "busy_s"_a = s.busy_ns.load() * 1e-9, "wait_s"_a = s.wait_ns.load() * 1e-9,
        "batches"_a = s.batches.load(), "samples"_a = s.samples.load(),
        "skipped"_a = s.skipped.load(), "video_frames_decoded"_a = s.video_frames_decoded.load(),
        "video_frames_delivered"_a = s.video_frames_delivered.load());
  }

  std::shared_ptr<Shared> shared_;
};

// _stoker.LoaderEpoch: the batches of one epoch, for the thread that started it.
class BoundEpoch {
 public:
  // Epoch `e` of the loader's own order, or an explicit one over `batches` (LoaderCore::epoch).
  BoundEpoch(const BoundLoader& loader, int64_t e,
             std::optional<ExplicitBatches> batches = std::nullopt)
      : shared_(loader.shared()), owner_thread_(PyThread_get_thread_ident()) {
    BusyScope busy(shared_->busy, kLoaderBusy);
    install_mapped_read_fault_handler();
    LoaderCore& core = working(*shared_);
    cancelled_by_sigint(
        [&] { epoch_.emplace(batches ? core.epoch(e, std::move(*batches)) : core.epoch(e)); });
    size_ = epoch_->size();
  }

  // From now on each batch is the tuple of the entries `names` of its dict, in that order
  // (stoker.Loader's batch_format as names, without a dict and a Python call between): false,
  // and no change, unless each is a field of the batch or a padded field's NAME_sizes.
  bool as_tuple(const std::vector<std::string>& names) {
    std::vector<size_t> picks;  // 2 f: field f; 2 f + 1: its sizes
    for (const std::string& name : names) {
      size_t pick = SIZE_MAX;
      for (size_t f = 0; f < shared_->names.size() && pick == SIZE_MAX; ++f) {
        if (name == shared_->names[f].cast<std::string>()) pick = 2 * f;
        const auto sizes = shared_->sizes_names[f].cast<std::string>();  // "" unless padded
        if (!sizes.empty() && name == sizes) pick = 2 * f + 1;
      }
      if (pick == SIZE_MAX) return false;
      picks.push_back(pick);
    }
    tuple_picks_ = std::move(picks);
    return true;
  }

  // The next batch: {name: tensor}, or the tuple as_tuple asked for. StopIteration after the
  // last.
  py::object next() {
    if (PyThread_get_thread_ident() != owner_thread_)
      throw std::runtime_error(
          "an epoch's batches are taken by the thread that started it; start an iteration in "
          "this thread instead (one at a time per loader)");
    BusyScope busy(shared_->busy, kLoaderBusy);
    const bool built_inline = working(*shared_).options().workers.threads() == 0;
    if (!epoch_) throw py::stop_iteration();
    // Ctrl-C ends a batch built inline, in a fetch too: the watch lives until the epoch ends.
    if (built_inline) {
      if (!watch_) watch_ = std::make_unique<SigintWatch>();
      SigintWatch::arm();
    }
    LoaderCore::Epoch::Next got;
    do {
      {
        ReleasedGil release;
        got = epoch_->next_for(batch_, kSignalCheckInterval, SigintWatch::tripped);
      }
      if (got == LoaderCore::Epoch::Next::kTimedOut && PyErr_CheckSignals() != 0)
        throw py::error_already_set();
    } while (got == LoaderCore::Epoch::Next::kTimedOut);
    if (got == LoaderCore::Epoch::Next::kEnd) {
      end_epoch();
      throw py::stop_iteration();
    }
    py::object out;
    if (tuple_picks_) {
      py::tuple picked(tuple_picks_->size());  // stoker.Loader refuses a name given twice
      for (size_t i = 0; i < tuple_picks_->size(); ++i) {
        const size_t pick = (*tuple_picks_)[i];
        picked[i] = entry(pick / 2, pick % 2 == 1);
      }
      out = std::move(picked);
    } else {
      py::dict entries;
      for (size_t f = 0; f < batch_.fields.size(); ++f) {
        entries[shared_->names[f]] = entry(f, false);
        if (batch_.fields[f].padded) entries[shared_->sizes_names[f]] = entry(f, true);
      }
      out = std::move(entries);
    }
    batch_.owner.reset();  // the tensors alone keep the buffer from the pool
    last_padding_ = batch_.padding;
    last_index_ = batch_.index;
    last_records_.swap(batch_.records);
    return out;
  }

  // Batches of the epoch from where it started.
  int64_t size() const { return size_; }

  // Ends the epoch early: the loader may start another one.
  void close() {
    BusyScope busy(shared_->busy, kLoaderBusy);
    end_epoch();
  }

  bool live() const { return epoch_.has_value(); }

  // Samples at the end of the last batch returned that are padding (HostBatch::padding).
  int64_t last_padding() const { return last_padding_; }
  // The last batch's number within its epoch on this rank (HostBatch::index).
  int64_t last_index() const { return last_index_; }
  // The last batch's samples' dataset records (HostBatch::records), int64 [batch].
  py::array_t<int64_t> last_records() const {
    py::array_t<int64_t> out(static_cast<py::ssize_t>(last_records_.size()));
    std::copy(last_records_.begin(), last_records_.end(), out.mutable_data());
    return out;
  }

  BoundEpoch(BoundEpoch&&) = default;
  ~BoundEpoch() { end_epoch(); }

  // Where the last batch's fields lie (their data pointers), for tests of zero-copy.
  std::vector<uintptr_t> field_addresses() const {
    std::vector<uintptr_t> out;
    for (const HostField& f : batch_.fields) out.push_back(reinterpret_cast<uintptr_t>(f.data));
    return out;
  }

 private:
  std::shared_ptr<Shared> shared_;  // keeps the loader alive while the epoch is
  const unsigned long owner_thread_;
  std::optional<LoaderCore::Epoch> epoch_;
  int64_t size_ = 0;
  HostBatch batch_;                     // reused: its vectors keep their capacity
  std::unique_ptr<SigintWatch> watch_;  // made by the first batch built inline
  int64_t last_padding_ = 0;
  int64_t last_index_ = 0;
  std::vector<int64_t> last_records_;
  std::optional<std::vector<size_t>> tuple_picks_;  // as_tuple's, by entry (2 f or 2 f + 1)

  // Field f of the batch just taken: a tensor (a list of each sample's, for a variable field
  // neither padded nor nested), or with `sizes` a padded field's sizes.
  py::object entry(size_t f, bool sizes) const {
    const HostField& field = batch_.fields[f];
    if (sizes) return tensor(to_dlpack(sizes_of(field), batch_.owner));
    if (!field.sizes || field.padded) return tensor(to_dlpack(field, batch_.owner));
    py::list samples;  // a view of each sample's slot
    for (int64_t k = 0; k < batch_.size; ++k)
      samples.append(tensor(to_dlpack(sample_of(field, k), batch_.owner)));
    return std::move(samples);
  }

  // The tensor of a DLPack capsule: to_tensor called without an argument tuple.
  py::object tensor(const py::capsule& capsule) const {
    PyObject* out = PyObject_CallOneArg(shared_->to_tensor.ptr(), capsule.ptr());
    if (out == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(out);
  }

  // Ends the epoch with the GIL released: its workers are joined, and a worker may be inside a
  // call that takes the GIL (a pinned-memory allocator given from Python), or just slow.
  void end_epoch() {
    watch_.reset();
    if (!epoch_) return;
    if (PyGILState_Check() == 0 || interpreter_finalizing()) {
      epoch_.reset();
      return;
    }
    ReleasedGil release;
    epoch_.reset();
  }
};

}  // namespace

void register_loader(py::module_& module) {
  // The loader's limits and names (loader_settings.h), so Python copies none; the settings are
  // checked by LoaderCore, once. LOADER_SETTINGS: the keywords of LoaderCore.configure's settings.
  std::vector<std::string> settings;
  for (const LoaderSettingDescription& setting : loader_setting_descriptions())
    settings.push_back(setting.spec.name);
  module.attr("LOADER_SETTINGS") = py::tuple(py::cast(settings));
  module.attr("MAX_WORKERS") = kMaxWorkers;
  module.attr("MAX_PREFETCH") = kMaxPrefetch;
  module.attr("MAX_EPOCH") = kMaxEpoch;
  module.attr("ALL_BAD_RECORDS") = kAllBadRecords;
  module.attr("MAX_SHUFFLE_WINDOW") = kMaxShuffleWindow;
  module.attr("MAX_IMAGE_SIZE") = kMaxImageSize;
  module.attr("VERIFY_POLICIES") = py::tuple(py::cast(kVerifyPolicyNames.names()));
  module.attr("ERROR_POLICIES") = py::tuple(py::cast(kErrorPolicyNames.names()));
  module.attr("LAST_BATCH_MODES") = py::tuple(py::cast(kLastBatchNames.names()));
  module.def(
      "sources", [] { return from_json(sources_json()); },
      "The data sources LoaderCore(source=NAME, source_params={...}) opens, in the order "
      "source='auto' asks them: [{name, doc, auto_rank, params: [{name, type, default, doc, "
      "...}]}].");
  module.def(
      "orders", [] { return from_json(orders_json()); },
      "The global orders a loader deals: [{name, doc, params: [{name, type, default, doc, "
      "...}]}]; a mixture's parameters are the \"mixture\" order's.");
  module.def(
      "normalization",
      [](const std::vector<int64_t>& sample_shape, const std::vector<float>& mean,
         const std::vector<float>& std) {
        const Normalization n = Normalization::create(sample_shape, mean, std).value_or_throw();
        return py::make_tuple(n.mean(), n.stddev());
      },
      "sample_shape"_a, "mean"_a, "std"_a,
      "(mean, std): the float32 values the workers' normalisation subtracts and divides by, one "
      "pair, or one per channel (dim 0) of a [C,H,W] sample; ValueError for mean/std it refuses");
  py::class_<BoundLoader>(module, "LoaderCore",
                          "The native loader over a dataset directory (stoker.Loader wraps it).")
      .def(py::init([](const std::string& path, const std::string& cache_dir, double cache_gb,
                       const std::string& cache_policy, int64_t shuffle_window,
                       const std::string& source, const py::dict& source_params,
                       bool transcode_cache) {
             return std::make_unique<BoundLoader>(
                 path, data_access_arguments(cache_dir, cache_gb, cache_policy, transcode_cache),
                 shuffle_window, source, params_from(source_params));
           }),
           "path"_a, py::kw_only(), "cache_dir"_a = "", "cache_gb"_a = 0.0,
           "cache_policy"_a = "next-use", "shuffle_window"_a = kShuffleAll, "source"_a = "auto",
           "source_params"_a = py::dict(), "transcode_cache"_a = false)
      .def(py::init([](const py::list& parts, const py::dict& mixture, const std::string& cache_dir,
                       double cache_gb, const std::string& cache_policy, int64_t shuffle_window,
                       bool transcode_cache) {
             std::vector<std::tuple<std::string, std::string, SourceParams>> specs;
             for (const py::handle part : parts) {
               const auto spec = part.cast<py::tuple>();
               specs.emplace_back(spec[0].cast<std::string>(), spec[1].cast<std::string>(),
                                  params_from(spec[2].cast<py::dict>()));
             }
             return std::make_unique<BoundLoader>(
                 specs, data_access_arguments(cache_dir, cache_gb, cache_policy, transcode_cache),
                 shuffle_window, params_from(mixture));
           }),
           "parts"_a, py::kw_only(), "mixture"_a, "cache_dir"_a = "", "cache_gb"_a = 0.0,
           "cache_policy"_a = "next-use", "shuffle_window"_a = kShuffleAll,
           "transcode_cache"_a = false,
           "A mixture: parts [(path, source, source_params)], read as one dataset in the "
           "\"mixture\" order with `mixture`'s parameters (_stoker.orders()).")
      .def_property_readonly("class_names", &BoundLoader::class_names)
      .def_property_readonly("order", &BoundLoader::order)
      .def("set_samples_per_record", &BoundLoader::set_samples_per_record, "k"_a, "window"_a,
           "Each record k samples an epoch (the \"per_record\" order), before configure().")
      .def_property_readonly("samples", &BoundLoader::samples)
      .def_property_readonly("tokens", &BoundLoader::tokens)
      .def_property_readonly("schema", &BoundLoader::schema)
      .def_property_readonly("shards", &BoundLoader::shards)
      .def_property_readonly("describe", &BoundLoader::describe)
      .def("file_blocks", &BoundLoader::file_blocks)
      .def("record_error", &BoundLoader::record_error, "index"_a, "message"_a)
      .def_static(
          "file_blocks_difference",
          [](const std::vector<std::vector<std::string>>& saved,
             const std::vector<std::vector<std::string>>& current) {
            const auto blocks = [](const std::vector<std::vector<std::string>>& lists) {
              std::vector<FileBlock> out;
              for (const std::vector<std::string>& b : lists)
                if (b.size() == 3) out.push_back({b[0], b[1], b[2]});
              return out;
            };
            return file_blocks_difference(blocks(saved), blocks(current));
          },
          "saved"_a, "current"_a)
      .def("__len__", &BoundLoader::size)
      .def("configure", &BoundLoader::configure, py::kw_only(), "batch_size"_a, "shuffle"_a,
           "seed"_a, "last_batch"_a, "rank"_a, "world_size"_a, "fields"_a, "to_tensor"_a,
           "pinned_memory"_a = py::none(), "batch_transform"_a = py::none(),
           "The loader settings (LOADER_SETTINGS) as further keywords: None (the default), a "
           "str or an int. pinned_memory: None, or the addresses of (cudaHostAlloc, "
           "cudaFreeHost): the workers build batches in page-locked memory (pinned_allocator.h). "
           "batch_transform: None, or a batch operation's call {\"op\": NAME, ...} the workers "
           "run on each finished batch (batch_transform.h)")
      .def_property_readonly("options", &BoundLoader::options)
      .def_property_readonly("tuning", &BoundLoader::tuning)
      .def_property_readonly("fields", &BoundLoader::fields)
      .def_property_readonly("variable_fields", &BoundLoader::variable_fields)
      .def("batches_per_epoch", &BoundLoader::batches_per_epoch)
      .def("epoch_samples", &BoundLoader::epoch_samples)
      .def("indices", &BoundLoader::indices, "epoch"_a)
      .def("state", &BoundLoader::state)
      .def("restore", &BoundLoader::restore, py::kw_only(), "seed"_a, "epoch"_a, "position"_a,
           "shuffle_window"_a, "ra_reps"_a)
      .def("buffer_bytes", &BoundLoader::buffer_bytes)
      .def("stats", &BoundLoader::stats)
      .def("source_notes", &BoundLoader::source_notes, "said"_a)
      .def(
          "epoch", [](const BoundLoader& loader, int64_t e) { return BoundEpoch(loader, e); },
          "epoch"_a)
      .def(
          "explicit_epoch",
          [](const BoundLoader& loader, int64_t e, const py::object& indices,
             const py::object& batch_sizes, int64_t start, bool repeats) {
            return BoundEpoch(
                loader, e,
                ExplicitBatches{int64_values(indices, "indices"),
                                int64_values(batch_sizes, "batch_sizes"), start, repeats});
          },
          "epoch"_a, "indices"_a, "batch_sizes"_a, "start"_a = 0, "repeats"_a = true,
          "An explicit epoch (a torch Sampler's or batch_sampler's): this rank's `indices` (a list "
          "of ints or a 1-D int64 buffer), batch after batch, cut at `batch_sizes` (each in [1, "
          "batch_size]), from sample `start` (a batch boundary); `repeats`: an index's k-th "
          "occurrence draws as repeat k, else as its first. state()'s position counts the "
          "sequence's samples. ValueError, naming the batch, for an index outside the dataset");
  py::class_<BoundEpoch>(module, "LoaderEpoch", "The batches of one epoch of a LoaderCore.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &BoundEpoch::next)
      .def("as_tuple", &BoundEpoch::as_tuple, "names"_a)
      .def("__len__", &BoundEpoch::size)
      .def("close", &BoundEpoch::close)
      .def_property_readonly("live", &BoundEpoch::live)
      .def_property_readonly("last_padding", &BoundEpoch::last_padding)
      .def_property_readonly("last_index", &BoundEpoch::last_index)
      .def_property_readonly("last_records", &BoundEpoch::last_records)
      .def("_field_addresses", &BoundEpoch::field_addresses);
}

}  // namespace stoker::python
