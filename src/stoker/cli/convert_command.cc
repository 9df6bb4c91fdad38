// `stoker convert idx|fashion-mnist|cifar10|imagefolder|coco|voc|masks`: build datasets from source
// files.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "cli/dataset_upload.h"
#include "cli/output_checks.h"
#include "cli/usage.h"
#include "stoker/image/jpeg_encode.h"
#include "stoker/pipeline/loader_settings.h"
#include "stoker/store/import/cifar10.h"
#include "stoker/store/import/coco.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/import/idx.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/mask_folder.h"
#include "stoker/store/import/voc.h"
#include "stoker/train/progress.h"
#include "stoker/util/stopwatch.h"
#include "stoker/util/utf8.h"

namespace stoker::cli {
namespace {

// What every convert's --out help ends with.
constexpr const char* kOutUrlHelp =
    "; or an s3://bucket/prefix to convert into a temporary directory, push there (as `stoker "
    "push` does) and remove";

// --shard-mb, the shard size of every convert command.
void add_shard_mb_option(CLI::App* command, uint64_t& shard_mb) {
  add_whole_number(*command, "--shard-mb", shard_mb, "Shard size in MiB", 1, 1 << 20, "1 TiB")
      ->capture_default_str();
}

// A required path option or argument `name` into `value`, checked by path_value (`shown`: the
// name its errors give; default `name`).
CLI::Option* add_required_path(CLI::App* command, const std::string& name, std::string& value,
                               const std::string& help, const std::string& shown = "") {
  return command->add_option(name, value, help)
      ->required()
      ->check(path_value(shown.empty() ? name : shown));
}

using Clock = std::chrono::steady_clock;

// SIGINT, SIGTERM, SIGHUP (the terminal closed) or SIGPIPE (stdout's reader gone) during a
// conversion: the import stops before its next record, its writers remove what they staged
// (and `--out s3://`'s temporary copy goes), and the command says so and exits 130. A second
// SIGINT, SIGTERM or SIGHUP ends the process at once (SA_RESETHAND); the staging directory it
// leaves is no dataset and is removed by the next convert to the same --out. SIGPIPE recurs at
// every write to the closed pipe: it only asks again. The handler only stores an atomic.
std::atomic<int> stop_signal{0};

void on_stop_signal(int number) { stop_signal.store(number); }

bool stop_requested() { return stop_signal.load(std::memory_order_relaxed) != 0; }

// Runs `convert` (which writes `outputs`, each absent before) with the stop handlers installed.
// An import stopped by a signal is an Error (kCancelled) saying so; any of `outputs` that it
// had already completed is removed too, so an interrupted convert leaves nothing.
void run_stoppable(const std::vector<std::string>& outputs, const std::function<void()>& convert) {
  std::vector<std::string> absent;
  for (const std::string& out : outputs) {
    if (!std::filesystem::exists(out)) absent.push_back(out);
  }
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
  action.sa_flags = 0;
  sigaction(SIGPIPE, &action, nullptr);
  try {
    convert();
  } catch (const Error&) {
    const int signal = stop_signal.load();
    if (signal == 0) throw;
    std::error_code ec;
    for (const std::string& out : absent) std::filesystem::remove_all(out, ec);
    throw Error(Status(StatusCode::kCancelled,
                       fmt::format("interrupted ({}): the conversion stopped and its partial "
                                   "output was removed; nothing was written to {}",
                                   signal == SIGINT    ? "SIGINT"
                                   : signal == SIGTERM ? "SIGTERM"
                                   : signal == SIGHUP  ? "SIGHUP"
                                                       : "SIGPIPE",
                                   printable(fmt::to_string(fmt::join(outputs, " and "))))));
  }
}

// The frame of an import into `options.out` (--out: a URL is converted into a local folder
// first, ConvertOutput): --shard-mb taken, --out refused where it lies in one of `inputs`, then
// `import` (which imports and says what it wrote) run stoppable, writing OUT itself or, with
// `parts`, OUT/part for each; then the output finished (pushed where --out is a URL).
template <typename Options>
void run_import(Options& options, uint64_t shard_mb, InputSet inputs,
                const std::vector<std::string>& parts, const std::function<void()>& import) {
  options.shard_bytes = shard_mb << 20;
  const ConvertOutput output(options.out);
  options.out = output.dir();
  check_output_dir(inputs, "--out", options.out);
  options.stop_requested = stop_requested;
  std::vector<std::string> outputs;
  for (const std::string& part : parts) outputs.push_back(options.out + "/" + part);
  if (parts.empty()) outputs.push_back(options.out);
  run_stoppable(outputs, import);
  output.finish(stop_requested);
}

// The inputs of an import from one folder (or file) `src`.
InputSet source_tree(const std::string& src) {
  InputSet inputs;
  inputs.add_tree(src, "the source");
  return inputs;
}

// The live line of an import on a terminal: bar, files, rate, ETA; redrawn at most 10 times a
// second, cleared before other output. Draws nothing when stderr is not a terminal.
class ImportProgressLine {
 public:
  ImportProgressLine() : live_(::isatty(::fileno(stderr)) != 0) {}

  void update(const ImageFolderProgress& p) {
    const Clock::time_point now = Clock::now();
    if (!live_ || (p.done < p.total && now - last_ < std::chrono::milliseconds(100))) return;
    last_ = now;
    const double elapsed = since_start_.seconds();
    const double rate = elapsed > 0 ? static_cast<double>(p.done) / elapsed : 0.0;
    const double eta = rate > 0 ? static_cast<double>(p.total - p.done) / rate : 0.0;
    fmt::print(stderr, "\r\033[K{} {}/{}  {} images/s  {:.0f} MB in  ETA {}",
               progress_bar(static_cast<int64_t>(p.done), static_cast<int64_t>(p.total)), p.done,
               p.total, human_rate(rate), p.bytes_in / 1e6, human_duration(eta));
    std::fflush(stderr);
    shown_ = true;
  }
  // Clears the line so that other output starts at the left margin.
  void clear() {
    if (shown_) fmt::print(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool live_;
  bool shown_ = false;
  Stopwatch since_start_;
  Clock::time_point last_;
};

void add_imagefolder_command(CLI::App* convert) {
  auto options = std::make_shared<ImageFolderImportOptions>();
  auto shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* cmd = convert->add_subcommand(
      "imagefolder",
      "Convert a torchvision ImageFolder of JPEGs and PNGs (or its train/ and val/ or test/ "
      "splits) into an image dataset, record i being ImageFolder's sample i");
  add_required_path(cmd, "src", options->src,
                    "Folder of class folders, or of train/ and val/ (or test/)", "SRC");
  add_required_path(cmd, "--out", options->out,
                    std::string("Dataset directory to create (must not exist); with splits it "
                                "holds train/ and test/") +
                        kOutUrlHelp);
  auto order = std::make_shared<std::string>("folder");
  add_choice(*cmd, "--record-order", *order,
             "Record order: folder (ImageFolder's, class by class) or shuffled (a permutation "
             "drawn from --seed, so that every shard mixes the classes, as a shard-window "
             "shuffle needs); {}",
             {"folder", "shuffled"})
      ->capture_default_str();
  add_whole_number(*cmd, "--seed", options->seed, "Seed of --record-order shuffled", 0)
      ->capture_default_str();
  cmd->add_flag("--keep-original", options->keep_original,
                "Store JPEGs as they are instead of transcoding them for fast crops (with "
                "--max-side, only those within the limit: larger images are re-encoded)");
  cmd->add_option("--max-side", options->max_side,
                  "Downsize images (JPEG or PNG) whose longer side exceeds N: that side becomes "
                  "N, the other in proportion (PIL's antialiased bilinear), stored as a quality "
                  "90 JPEG, as FFCV's max_resolution does; smaller images are stored as without "
                  "it. Default: off")
      ->type_name("N")
      ->check(whole_number("--max-side", 1, image::kMaxJpegSide, "the largest JPEG"));
  cmd->add_flag("--skip-bad", options->skip_bad,
                "Import the good files and list the bad ones in OUT/skipped.txt instead of "
                "failing");
  cmd->add_option("--workers", options->workers,
                  "Threads reading and checking files (0: one at a time; default: one per core)")
      ->check(whole_number("--workers", 0, kMaxWorkers));
  add_shard_mb_option(cmd, *shard_mb);
  cmd->callback([options, shard_mb, order] {
    options->record_order = *order == "shuffled" ? RecordOrder::kShuffled : RecordOrder::kFolder;
    ImportProgressLine line;
    options->on_progress = [&line](const ImageFolderProgress& p) { line.update(p); };
    if (!options->skip_bad) {
      options->on_bad = [&line](const BadEntry& bad) {
        line.clear();
        fmt::print(stderr, "{}: {}\n", printable(bad.path), bad.reason);
      };
    }
    const Stopwatch since_start;
    run_import(*options, *shard_mb, source_tree(options->src), {}, [&] {
      Result<ImageFolderImportSummary> result = import_image_folder(*options);
      line.clear();
      const ImageFolderImportSummary summary = std::move(result).value_or_throw();
      std::string where = printable(summary.datasets[0]);
      if (summary.datasets.size() == 2) where += " and " + printable(summary.datasets[1]);
      fmt::print(
          "wrote {} images of {} classes to {}: {:.1f} MB in, {:.1f} MB stored, {} file{} "
          "ignored (no image extension), {:.1f} s\n",
          summary.images, summary.classes, where, summary.bytes_in / 1e6, summary.bytes_out / 1e6,
          summary.ignored_files, summary.ignored_files == 1 ? "" : "s", since_start.seconds());
      if (summary.skipped > 0)
        fmt::print("skipped {} bad file{}, listed with their reasons in {}\n", summary.skipped,
                   summary.skipped == 1 ? "" : "s", printable(summary.skipped_list));
    });
  });
}

// --out (a directory or an s3:// URL), --keep-original, --workers (threads doing `work`) and
// --shard-mb: the options the detection and segmentation importers share.
template <typename Options>
void add_importer_options(CLI::App* cmd, Options& options, uint64_t& shard_mb,
                          const std::string& work) {
  add_required_path(cmd, "--out", options.out,
                    std::string("Dataset directory to create (must not exist)") + kOutUrlHelp);
  cmd->add_flag("--keep-original", options.keep_original,
                "Store JPEGs as they are instead of transcoding them for fast crops");
  cmd->add_option("--workers", options.workers,
                  "Threads " + work + " (0: one at a time; default: one per core)")
      ->check(whole_number("--workers", 0, kMaxWorkers));
  add_shard_mb_option(cmd, shard_mb);
}

void add_coco_command(CLI::App* convert) {
  auto options = std::make_shared<CocoImportOptions>();
  auto shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* cmd = convert->add_subcommand(
      "coco",
      "Convert COCO instances annotations and their images into a detection dataset: one record "
      "per image (CocoDetection's order) with boxes (XYXY), labels, area, iscrowd and masks");
  add_required_path(cmd, "--images", options->images, "Directory of the images (train2017/)");
  add_required_path(cmd, "--annotations", options->annotations,
                    "Instances annotations file (annotations/instances_train2017.json)");
  cmd->add_flag("--drop-empty", options->drop_empty,
                "Leave out images without an object wider and taller than 1 pixel, as "
                "torchvision's detection reference does for training");
  cmd->add_flag("--v1-targets", options->v1_targets,
                "Store the targets of torchvision's v1 detection reference "
                "(ConvertCocoPolysToMask): crowds left out, boxes clamped to the image, objects "
                "whose clamped box is empty left out");
  add_importer_options(cmd, *options, *shard_mb, "reading and encoding images");
  cmd->callback([options, shard_mb] {
    InputSet inputs;
    inputs.add_tree(options->images, "the images");
    inputs.add_file(options->annotations, "the annotations");
    const Stopwatch since_start;
    run_import(*options, *shard_mb, inputs, {}, [&] {
      const CocoImportSummary summary = import_coco(*options).value_or_throw();
      fmt::print(
          "wrote {} images with {} objects of {} categories to {}{}: {:.1f} MB in, {:.1f} MB "
          "stored, {:.1f} s\n",
          summary.images, summary.objects, summary.categories, printable(options->out),
          options->drop_empty ? fmt::format(" ({} without objects left out)", summary.dropped) : "",
          summary.bytes_in / 1e6, summary.bytes_out / 1e6, since_start.seconds());
    });
  });
}

void add_masks_command(CLI::App* convert) {
  auto options = std::make_shared<MaskFolderImportOptions>();
  auto shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* cmd = convert->add_subcommand(
      "masks",
      "Convert a folder of images and a folder of PNG class masks, paired by file stem, into a "
      "segmentation dataset (image, mask, height, width), in stem order");
  add_required_path(cmd, "--images", options->images, "Folder of the images (JPEG or PNG)");
  add_required_path(cmd, "--masks", options->masks,
                    "Folder of the masks: PNGs of class indices (gray or palette), one per image");
  add_importer_options(cmd, *options, *shard_mb, "reading and checking files");
  cmd->callback([options, shard_mb] {
    InputSet inputs;
    inputs.add_tree(options->images, "the images");
    inputs.add_tree(options->masks, "the masks");
    const Stopwatch since_start;
    run_import(*options, *shard_mb, inputs, {}, [&] {
      const MaskFolderImportSummary summary = import_mask_folder(*options).value_or_throw();
      fmt::print(
          "wrote {} images with their masks to {}: {:.1f} MB in, {:.1f} MB stored, {:.1f} s\n",
          summary.pairs, printable(options->out), summary.bytes_in / 1e6, summary.bytes_out / 1e6,
          since_start.seconds());
    });
  });
}

void add_voc_command(CLI::App* convert) {
  auto options = std::make_shared<VocImportOptions>();
  auto shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* cmd = convert->add_subcommand(
      "voc",
      "Convert a Pascal VOC split (its XML boxes) into a detection dataset: one record per "
      "image of ImageSets/Main/SPLIT.txt, in its order, with boxes, labels and difficult");
  add_required_path(cmd, "src", options->src, "The year's folder: VOCdevkit/VOC2012", "SRC");
  cmd->add_option("--split", options->split, "The image set: ImageSets/Main/SPLIT.txt")
      ->capture_default_str();
  add_importer_options(cmd, *options, *shard_mb, "reading images");
  cmd->callback([options, shard_mb] {
    const Stopwatch since_start;
    run_import(*options, *shard_mb, source_tree(options->src), {}, [&] {
      const VocImportSummary summary = import_voc(*options).value_or_throw();
      fmt::print("wrote {} images with {} objects to {}, {:.1f} s\n", summary.images,
                 summary.objects, printable(options->out), since_start.seconds());
    });
  });
}

}  // namespace

void add_convert_command(CLI::App& app) {
  CLI::App* convert = app.add_subcommand("convert", "Convert source data into a stoker dataset");
  convert->require_subcommand(1);

  auto idx = std::make_shared<IdxImportOptions>();
  auto shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* idx_cmd = convert->add_subcommand(
      "idx", "Convert an IDX images/labels pair (MNIST family, gzip or raw)");
  add_required_path(idx_cmd, "--images", idx->images, "IDX file of images (N, rows, cols)");
  add_required_path(idx_cmd, "--labels", idx->labels, "IDX file of labels (N)");
  add_required_path(idx_cmd, "--out", idx->out,
                    std::string("Dataset directory to create (must not exist)") + kOutUrlHelp);
  add_shard_mb_option(idx_cmd, *shard_mb);
  idx_cmd->callback([idx, shard_mb] {
    InputSet inputs;
    inputs.add_file(idx->images, "the images");
    inputs.add_file(idx->labels, "the labels");
    run_import(*idx, *shard_mb, inputs, {}, [&] {
      fmt::print("wrote {} records to {}\n", import_idx(*idx).value_or_throw(), idx->out);
    });
  });

  auto src = std::make_shared<std::string>(kFashionMnistDebianDir);
  auto out = std::make_shared<std::string>(default_fashion_mnist_dir());
  CLI::App* fm =
      convert->add_subcommand("fashion-mnist", "Convert Fashion-MNIST into OUT/train and OUT/test");
  fm->add_option("--src", *src, "Directory with the four IDX .gz files")
      ->check(path_value("--src"))
      ->capture_default_str();
  fm->add_option("--out", *out,
                 std::string("Output directory ($STOKER_DATA or ~/.cache/stoker + "
                             "/fashion-mnist)") +
                     kOutUrlHelp)
      ->check(path_value("--out"))
      ->capture_default_str();
  fm->callback([src, out] {
    const Stopwatch since_start;
    const ConvertOutput output(*out);
    const std::string& dir = output.dir();
    check_output_dir(source_tree(*src), "--out", dir);
    run_stoppable({dir + "/train", dir + "/test"}, [&] {
      throw_if_error(convert_fashion_mnist(*src, dir, /*skip_existing=*/false, stop_requested));
    });
    fmt::print("wrote {0}/train and {0}/test in {1:.2f} s\n", dir, since_start.seconds());
    output.finish(stop_requested);
  });

  auto cifar = std::make_shared<Cifar10ImportOptions>();
  auto cifar_shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* cifar_cmd = convert->add_subcommand(
      "cifar10", "Convert CIFAR-10's binary version into OUT/train and OUT/test");
  add_required_path(cifar_cmd, "--src", cifar->src,
                    "Directory with data_batch_1..5.bin, test_batch.bin and batches.meta.txt");
  add_required_path(
      cifar_cmd, "--out", cifar->out,
      std::string("Output directory (train/ and test/ must not exist)") + kOutUrlHelp);
  add_shard_mb_option(cifar_cmd, *cifar_shard_mb);
  cifar_cmd->callback([cifar, cifar_shard_mb] {
    run_import(*cifar, *cifar_shard_mb, source_tree(cifar->src), {"train", "test"}, [&] {
      const Cifar10ImportCounts counts = import_cifar10(*cifar).value_or_throw();
      fmt::print("wrote {1} records to {0}/train and {2} to {0}/test\n", cifar->out, counts.train,
                 counts.test);
    });
  });

  add_imagefolder_command(convert);
  add_coco_command(convert);
  add_voc_command(convert);
  add_masks_command(convert);
}

}  // namespace stoker::cli
