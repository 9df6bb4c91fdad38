#include "stoker/python/tools_binding.h"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/access/data_source.h"
#include "stoker/access/dataset_push.h"
#include "stoker/net/remote_url.h"
#include "stoker/python/data_access_arguments.h"
#include "stoker/python/op_binding.h"
#include "stoker/python/py_text.h"
#include "stoker/python/released_gil.h"
#include "stoker/store/data_location.h"
#include "stoker/store/dataset_check.h"
#include "stoker/store/dataset_summary.h"
#include "stoker/store/import/cifar10.h"
#include "stoker/store/import/coco.h"
#include "stoker/store/import/examined_videos.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/import/idx.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/mask_folder.h"
#include "stoker/store/import/video_record.h"
#include "stoker/store/import/voc.h"
#include "stoker/util/mapped_read_guard.h"
#include "stoker/util/utf8.h"

namespace stoker::python {
namespace py = pybind11;

namespace {

using Clock = std::chrono::steady_clock;

// How often a long operation without the GIL takes it back to run signal handlers and report
// progress.
constexpr auto kPollInterval = std::chrono::milliseconds(100);
// Records verify checks between two looks at the clock.
constexpr uint64_t kRecordsPerPoll = 1024;
// Messages of bad records verify keeps per dataset (it counts them all).
constexpr size_t kMaxErrorsKept = 1000;

// Python's side of a long operation run without the GIL: polled from the operation's thread,
// it takes the GIL at most every kPollInterval, reports progress to an optional Python callable
// progress(done, total) and runs the signal handlers. An exception either raises is kept to be
// rethrown once the operation has stopped. Not thread-safe: one operation's calling thread.
class PythonPoll {
 public:
  explicit PythonPoll(py::object progress) : progress_(std::move(progress)) {}

  // True once Python wants the operation to stop (a signal handler or the progress callable
  // raised). `force` polls now, whatever the time.
  bool stop_requested(uint64_t done, uint64_t total, bool force = false) {
    if (error_) return true;
    const Clock::time_point now = Clock::now();
    if (!force && now - last_ < kPollInterval) return false;
    last_ = now;
    HeldGil gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (!progress_.is_none()) progress_(done, total);
    } catch (py::error_already_set& e) {
      error_ = std::make_unique<py::error_already_set>(std::move(e));
    }
    return error_ != nullptr;
  }
  // Runs `call()` with the GIL, keeping an exception it raises; not after one was kept.
  template <typename Call>
  void with_gil(Call&& call) {
    HeldGil gil;
    if (error_) return;
    try {
      call();
    } catch (py::error_already_set& e) {
      error_ = std::make_unique<py::error_already_set>(std::move(e));
    }
  }
  // Raises what Python raised during the operation, if anything; needs the GIL.
  void rethrow() {
    if (error_) throw std::move(*error_);
  }

 private:
  py::object progress_;
  Clock::time_point last_;  // the first poll is at once
  std::unique_ptr<py::error_already_set> error_;
};

// Throws Error naming the file if a shard shrank under reads made within `guard`
// (mapped_read_guard.h): they read zeros.
void throw_if_changed(const MappedReadGuard& guard) {
  const std::string changed = guard.changed_file();
  if (!changed.empty()) throw Error(io_error(printable(changed) + ": " + kChangedSizeText));
}

uint64_t import_idx_files(std::string images, std::string labels, std::string out,
                          uint64_t shard_bytes, std::vector<std::string> class_names) {
  IdxImportOptions options;
  options.images = std::move(images);
  options.labels = std::move(labels);
  options.out = std::move(out);
  options.shard_bytes = shard_bytes;
  options.class_names = std::move(class_names);
  ReleasedGil no_gil;
  return import_idx(options).value_or_throw();
}

void convert_fashion_mnist_files(const std::string& src, const std::string& out) {
  ReleasedGil no_gil;
  throw_if_error(convert_fashion_mnist(src, out, /*skip_existing=*/false));
}

std::pair<uint64_t, uint64_t> import_cifar10_files(std::string src, std::string out,
                                                   uint64_t shard_bytes) {
  Cifar10ImportOptions options;
  options.src = std::move(src);
  options.out = std::move(out);
  options.shard_bytes = shard_bytes;
  ReleasedGil no_gil;
  const Cifar10ImportCounts counts = import_cifar10(options).value_or_throw();
  return {counts.train, counts.test};
}

py::dict import_image_folder_files(std::string src, std::string out, bool keep_original,
                                   int max_side, bool skip_bad, std::optional<int> workers,
                                   uint64_t shard_bytes, bool shuffled, uint64_t seed,
                                   py::object progress, py::object on_bad) {
  ImageFolderImportOptions options;
  options.src = std::move(src);
  options.out = std::move(out);
  options.keep_original = keep_original;
  options.max_side = max_side;
  options.skip_bad = skip_bad;
  options.workers = workers;
  options.shard_bytes = shard_bytes;
  options.record_order = shuffled ? RecordOrder::kShuffled : RecordOrder::kFolder;
  options.seed = seed;
  PythonPoll poll(std::move(progress));
  ImageFolderProgress latest;
  options.on_progress = [&latest](const ImageFolderProgress& p) { latest = p; };
  options.stop_requested = [&] {
    return poll.stop_requested(latest.done, latest.total, latest.done == latest.total);
  };
  options.on_bad = [&](const BadEntry& bad) {
    if (!on_bad.is_none())
      poll.with_gil([&] { on_bad(fs_str(bad.path), message_str(bad.reason)); });
  };
  std::optional<Result<ImageFolderImportSummary>> result;
  {
    ReleasedGil no_gil;
    result.emplace(import_image_folder(options));
  }
  poll.rethrow();  // Ctrl-C, or a callable that raised, stopped the import
  const ImageFolderImportSummary summary = std::move(*result).value_or_throw();
  py::dict out_summary;
  py::list datasets;
  for (const std::string& dataset : summary.datasets) datasets.append(fs_str(dataset));
  out_summary["datasets"] = datasets;
  out_summary["images"] = summary.images;
  out_summary["classes"] = summary.classes;
  out_summary["bytes_in"] = summary.bytes_in;
  out_summary["bytes_out"] = summary.bytes_out;
  out_summary["ignored_files"] = summary.ignored_files;
  out_summary["skipped"] = summary.skipped;
  out_summary["skipped_list"] = fs_str(summary.skipped_list);
  return out_summary;
}

// `import(options)` without the GIL, stopped by Ctrl-C (or a progress callable that raised)
// through `poll`, which options.stop_requested asks: its summary, or its error raised.
template <typename Import, typename Options>
auto run_import(Import import, const Options& options, PythonPoll& poll) {
  std::optional<decltype(import(options))> result;
  {
    ReleasedGil no_gil;
    result.emplace(import(options));
  }
  poll.rethrow();
  return std::move(*result).value_or_throw();
}

py::dict import_coco_files(std::string images, std::string annotations, std::string out,
                           bool keep_original, bool drop_empty, bool v1_targets,
                           std::optional<int> workers, uint64_t shard_bytes, py::object progress) {
  CocoImportOptions options;
  options.images = std::move(images);
  options.annotations = std::move(annotations);
  options.out = std::move(out);
  options.keep_original = keep_original;
  options.drop_empty = drop_empty;
  options.v1_targets = v1_targets;
  options.workers = workers;
  options.shard_bytes = shard_bytes;
  PythonPoll poll(std::move(progress));
  uint64_t done = 0, total = 0;
  options.on_progress = [&](uint64_t d, uint64_t t) { done = d, total = t; };
  options.stop_requested = [&] { return poll.stop_requested(done, total, done == total); };
  const CocoImportSummary summary = run_import(import_coco, options, poll);
  py::dict out_summary;
  out_summary["datasets"] = py::make_tuple(fs_str(options.out));
  out_summary["images"] = summary.images;
  out_summary["objects"] = summary.objects;
  out_summary["dropped"] = summary.dropped;
  out_summary["categories"] = summary.categories;
  out_summary["bytes_in"] = summary.bytes_in;
  out_summary["bytes_out"] = summary.bytes_out;
  return out_summary;
}

py::dict import_mask_folder_files(std::string images, std::string masks, std::string out,
                                  bool keep_original, std::optional<int> workers,
                                  uint64_t shard_bytes) {
  MaskFolderImportOptions options;
  options.images = std::move(images);
  options.masks = std::move(masks);
  options.out = std::move(out);
  options.keep_original = keep_original;
  options.workers = workers;
  options.shard_bytes = shard_bytes;
  PythonPoll poll{py::none()};
  options.stop_requested = [&] { return poll.stop_requested(0, 0); };
  const MaskFolderImportSummary summary = run_import(import_mask_folder, options, poll);
  py::dict out_summary;
  out_summary["datasets"] = py::make_tuple(fs_str(options.out));
  out_summary["images"] = summary.pairs;
  out_summary["bytes_in"] = summary.bytes_in;
  out_summary["bytes_out"] = summary.bytes_out;
  return out_summary;
}

py::dict import_voc_files(std::string src, std::string split, std::string out, bool keep_original,
                          std::optional<int> workers, uint64_t shard_bytes) {
  VocImportOptions options;
  options.src = std::move(src);
  options.split = std::move(split);
  options.out = std::move(out);
  options.keep_original = keep_original;
  options.workers = workers;
  options.shard_bytes = shard_bytes;
  PythonPoll poll{py::none()};
  options.stop_requested = [&] { return poll.stop_requested(0, 0); };
  const VocImportSummary summary = run_import(import_voc, options, poll);
  py::dict out_summary;
  out_summary["datasets"] = py::make_tuple(fs_str(options.out));
  out_summary["images"] = summary.images;
  out_summary["objects"] = summary.objects;
  return out_summary;
}

// Where the datasets at `path` are: as remote::locate finds them for the source "auto" with no
// parameters, else `path` itself, the one dataset `source` names.
DataLocation locate_source(const std::string& path, const std::string& source,
                           const SourceParams& params) {
  if (source == "auto" && params.empty()) return remote::locate(path).value_or_throw();
  DataLocation where;
  where.path = remote::shown_location(path);
  where.datasets = {path};
  where.train = path;
  return where;
}

// `stoker inspect --json`: one dataset's summary, or for a folder of datasets
// {"dir", "datasets": [summaries]}; and the datasets' directories as os.fsdecode gives them (the
// JSON's "dir" values are printable(), as JSON holds only UTF-8), for the package to put back; a
// URL in remote::shown_location's form, as everywhere.
py::tuple inspect_json(const std::string& path, const DataAccessOptions& access,
                       const std::string& source, const SourceParams& params) {
  install_mapped_read_fault_handler();  // again, if another handler replaced it since import
  DataLocation where;
  nlohmann::json out;
  {
    ReleasedGil no_gil;
    where = locate_source(path, source, params);
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& dir : where.datasets) {
      const auto dataset =
          remote::open_dataset(dir, access, remote::kShardByShard, source, params).value_or_throw();
      MappedReadGuard guard;
      DatasetSummary summary = summarize(*dataset, /*read_labels=*/!dataset->needs_pins());
      throw_if_changed(guard);
      summary.dir = printable(summary.dir);
      all.push_back(nlohmann::json::parse(summary.to_json(dataset->schema())));
    }
    out = where.folder ? nlohmann::json{{"dir", printable(where.path)}, {"datasets", all}} : all[0];
  }
  py::list dirs;
  for (const std::string& dir : where.datasets) dirs.append(fs_str(remote::shown_location(dir)));
  return py::make_tuple(out.dump(), dirs);
}

// `stoker verify`: per dataset {"path", "records", "shards", "bad", "errors"}, "errors" the
// first kMaxErrorsKept one-line messages of its bad records; a dataset of videos has each
// examined as `decode` says (store/import/examined_videos.h), as the command does.
py::list verify_datasets(const std::string& path, const DataAccessOptions& access,
                         const std::string& source, const SourceParams& params,
                         video::VideoDecode decode, py::object progress) {
  install_mapped_read_fault_handler();  // again, if another handler replaced it since import
  DataLocation where;
  {
    ReleasedGil no_gil;
    where = locate_source(path, source, params);
  }
  py::list reports;
  PythonPoll poll(std::move(progress));
  for (const std::string& dir : where.datasets) {
    std::shared_ptr<const Dataset> dataset;
    std::vector<std::string> errors;
    uint64_t bad = 0;
    {
      ReleasedGil no_gil;
      dataset =
          remote::open_dataset(dir, access, remote::kShardByShard, source, params).value_or_throw();
      MappedReadGuard guard;
      RecordCheck check(*dataset);
      const Status walked = dataset->for_each_record([&](uint64_t i) {
        const Status status = check.check(i);
        if (!status.is_ok() && bad++ < kMaxErrorsKept) errors.push_back(status.message());
        if ((i + 1) % kRecordsPerPoll == 0 && poll.stop_requested(i + 1, dataset->size()))
          return Status(StatusCode::kCancelled, "");  // stops the walk
        return Status::ok();
      });
      if (walked.code() != StatusCode::kCancelled) {
        throw_if_error(walked);
        if (const Status status = check.finish(); !status.is_ok() && bad++ < kMaxErrorsKept)
          errors.push_back(status.message());
        if (video_field(dataset->schema()) >= 0) {
          check_videos(*dataset, decode, [&](const Status& status) {
            if (bad++ < kMaxErrorsKept) errors.push_back(status.message());
          }).value_or_throw();
        }
      }
      throw_if_changed(guard);
    }
    poll.rethrow();
    py::dict report;
    report["path"] = fs_str(remote::shown_location(dir));
    report["records"] = dataset->size();
    report["shards"] = dataset->num_shards();
    report["bad"] = bad;
    py::list messages;
    for (const std::string& message : errors) messages.append(message_str(message));
    report["errors"] = messages;
    reports.append(report);
  }
  return reports;
}

// The store of an s3:// URL from the process's AWS settings, checked as a push target.
std::unique_ptr<remote::ObjectStore> push_store(const remote::RemoteUrl& url) {
  std::unique_ptr<remote::ObjectStore> store =
      remote::open_object_store(url, remote::HttpClient::create().value_or_throw(),
                                remote::process_environment())
          .value_or_throw();
  throw_if_error(remote::check_push_target(url, *store));
  return store;
}

// Checks before a conversion that ends in a push that the push can start.
void check_push_target(const std::string& url) {
  ReleasedGil no_gil;
  push_store(remote::parse_remote_url(url).value_or_throw());
}

// `stoker push`: {"datasets": [URLs], "records", "shards", "uploaded", "uploaded_bytes",
// "present", "pruned"}.
py::dict push_dataset(const std::string& path, const std::string& url_text, bool prune) {
  remote::PushSummary summary;
  {
    ReleasedGil no_gil;
    const remote::RemoteUrl url = remote::parse_remote_url(url_text).value_or_throw();
    remote::PushOptions options;
    options.prune = prune;
    summary = remote::push_dataset(path, url, *push_store(url), options).value_or_throw();
  }
  py::dict out;
  out["datasets"] = summary.datasets;
  out["records"] = summary.records;
  out["shards"] = summary.shards;
  out["uploaded"] = summary.uploaded;
  out["uploaded_bytes"] = summary.uploaded_bytes;
  out["present"] = summary.present;
  out["pruned"] = summary.pruned;
  return out;
}

}  // namespace

void register_tools(py::module_& module) {
  module.attr("fashion_mnist_debian_dir") = kFashionMnistDebianDir;
  module.def("default_fashion_mnist_dir", &default_fashion_mnist_dir);
  module.def("import_idx", &import_idx_files, py::arg("images"), py::arg("labels"), py::arg("out"),
             py::kw_only(), py::arg("shard_bytes"), py::arg("class_names"));
  module.def("convert_fashion_mnist", &convert_fashion_mnist_files, py::arg("src"), py::arg("out"));
  module.def("import_cifar10", &import_cifar10_files, py::arg("src"), py::arg("out"), py::kw_only(),
             py::arg("shard_bytes"));
  module.def("import_image_folder", &import_image_folder_files, py::arg("src"), py::arg("out"),
             py::kw_only(), py::arg("keep_original"), py::arg("max_side"), py::arg("skip_bad"),
             py::arg("workers"), py::arg("shard_bytes"), py::arg("shuffled"), py::arg("seed"),
             py::arg("progress"), py::arg("on_bad"));
  module.def("import_coco", &import_coco_files, py::arg("images"), py::arg("annotations"),
             py::arg("out"), py::kw_only(), py::arg("keep_original"), py::arg("drop_empty"),
             py::arg("v1_targets"), py::arg("workers"), py::arg("shard_bytes"),
             py::arg("progress"));
  module.def("import_mask_folder", &import_mask_folder_files, py::arg("images"), py::arg("masks"),
             py::arg("out"), py::kw_only(), py::arg("keep_original"), py::arg("workers"),
             py::arg("shard_bytes"));
  module.def("import_voc", &import_voc_files, py::arg("src"), py::arg("split"), py::arg("out"),
             py::kw_only(), py::arg("keep_original"), py::arg("workers"), py::arg("shard_bytes"));
  module.def(
      "shown_location",
      [](const std::string& path) { return fs_str(remote::shown_location(path)); },
      py::arg("path"));
  module.def("check_push_target", &check_push_target, py::arg("url"));
  module.def("push_dataset", &push_dataset, py::arg("path"), py::arg("url"), py::kw_only(),
             py::arg("prune"));
  module.def(
      "inspect_json",
      [](const std::string& path, const std::string& cache_dir, double cache_gb,
         const std::string& cache_policy, const std::string& source, const py::dict& params) {
        return inspect_json(path, data_access_arguments(cache_dir, cache_gb, cache_policy), source,
                            params_from(params));
      },
      py::arg("path"), py::kw_only(), py::arg("cache_dir") = "", py::arg("cache_gb") = 0.0,
      py::arg("cache_policy") = "next-use", py::arg("source") = "auto",
      py::arg("source_params") = py::dict());
  module.def(
      "verify_datasets",
      [](const std::string& path, const std::string& cache_dir, double cache_gb,
         const std::string& cache_policy, const std::string& source, const py::dict& params,
         const std::string& decode, py::object progress) {
        const std::optional<video::VideoDecode> decoding = video::kVideoDecodeNames.find(decode);
        if (!decoding)
          throw Error(invalid_argument("decode must be one of " +
                                       video::kVideoDecodeNames.joined() + ", not '" + decode +
                                       "'"));
        return verify_datasets(path, data_access_arguments(cache_dir, cache_gb, cache_policy),
                               source, params_from(params), *decoding, std::move(progress));
      },
      py::arg("path"), py::kw_only(), py::arg("cache_dir") = "", py::arg("cache_gb") = 0.0,
      py::arg("cache_policy") = "next-use", py::arg("source") = "auto",
      py::arg("source_params") = py::dict(), py::arg("decode") = "keyframes", py::arg("progress"));
}

}  // namespace stoker::python
