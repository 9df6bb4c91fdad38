#include "stoker/store/import/image_folder.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "stoker/image/decode.h"
#include "stoker/image/jpeg_encode.h"
#include "stoker/image/resample.h"
#include "stoker/store/channel_statistics.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/split_writer.h"
#include "stoker/store/import/stored_image.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/machine.h"
#include "stoker/util/ordered_map.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Results a worker may produce ahead of the writer, per worker.
constexpr size_t kWindowPerWorker = 4;
// A worker's scratch that has grown past this (a huge image) is released after use.
constexpr size_t kScratchKeepBytes = size_t{64} << 20;
// The JPEG quality of images downsized to max_side (FFCV's default, and PIL's usual choice).
constexpr int kDownsizedJpegQuality = 90;

struct Split {
  std::string src;  // its ImageFolder
  std::string out;  // its dataset
  ImageFolderListing listing;
};

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The splits of SRC: train/ and val/ or test/, or SRC itself.
Result<std::vector<Split>> find_splits(const ImageFolderImportOptions& options) {
  const auto in_src = [&](const char* name) { return (fs::path(options.src) / name).string(); };
  const auto in_out = [&](const char* name) { return (fs::path(options.out) / name).string(); };
  const bool val = is_directory(in_src("val")), test = is_directory(in_src("test"));
  if (!is_directory(in_src("train")) || !(val || test))
    return std::vector<Split>{{options.src, options.out, {}}};
  if (val && test)
    return invalid_argument(printable(options.src) +
                            " holds train/, val/ and test/: which is the test split? Import a "
                            "folder holding train/ and one of the others");
  return std::vector<Split>{{in_src("train"), in_out("train"), {}},
                            {in_src(val ? "val" : "test"), in_out("test"), {}}};
}

// Class names an error message lists before "and N more".
constexpr size_t kNamesInMessage = 5;

// The classes only in `a` (both sorted: class names are UTF-8, so the order torchvision sorts
// them in is std::string's), for a message.
std::string only_in(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> names;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(names));
  return names.empty() ? "none" : printable_list(names, kNamesInMessage);
}

// One file, read, checked and encoded by a worker: the record and the statistics of its stored
// image's pixels, or why the file is bad.
struct Imported {
  std::vector<uint8_t> record;
  ChannelStatistics pixels{3};
  std::string bad;  // the reason, if bad
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

// The size of a `width` x `height` image whose longer side exceeds `max_side` once downsized:
// the longer side max_side, the other in proportion, rounded half up, at least 1.
std::pair<int, int> downsized_size(int width, int height, int max_side) {
  const int64_t longer = std::max(width, height), shorter = std::min(width, height);
  const int other =
      std::max<int>(1, static_cast<int>((2 * shorter * max_side + longer) / (2 * longer)));
  return width >= height ? std::pair{max_side, other} : std::pair{other, max_side};
}

// A worker's memory, reused from file to file.
struct WorkerScratch {
  image::DecodeBuffer decode;
  image::Resampler resampler;
  std::vector<uint8_t> planes;  // the resampler's output: CHW
  std::vector<uint8_t> rows;    // the same pixels as the encoder reads them: HWC

  size_t bytes() const { return decode.capacity() + planes.capacity() + rows.capacity(); }
};

// What is stored of an image: its bytes (empty: the file's own) and size.
struct StoredImage {
  std::vector<uint8_t> bytes;
  int width = 0;
  int height = 0;
};

class FileImporter {
 public:
  FileImporter(const ImageFolderImportOptions& options, int workers)
      : options_(options), schema_(image_record_schema()), scratch_(workers) {
    fields_ = ImageRecordFields::find(schema_).value();
    for (auto& scratch : scratch_) scratch = std::make_unique<WorkerScratch>();
  }
  const Schema& schema() const { return schema_; }
  int image_field() const { return fields_.image; }

  // Reads, checks and encodes `sample` on worker `worker`.
  Imported import(const ImageFolderSample& sample, int worker) {
    Imported out;
    Result<std::string> file = read_file(sample.path, kMaxImageFileBytes);
    if (!file.is_ok()) {
      out.bad = image_file_read_error(file.status(), sample.path);
      return out;
    }
    const Status status = encode(sample, file.value(), worker, out);
    if (!status.is_ok()) out.bad = status.message();
    if (scratch_[worker]->bytes() > kScratchKeepBytes)
      scratch_[worker] = std::make_unique<WorkerScratch>();
    return out;
  }

 private:
  // Fills `out` with the record of `sample`, whose file holds `file`, or says why it is bad.
  Status encode(const ImageFolderSample& sample, const std::string& file, int worker,
                Imported& out) {
    const ByteSpan bytes{reinterpret_cast<const uint8_t*>(file.data()), file.size()};
    STOKER_ASSIGN_OR_RETURN(const image::ImageHeader header,
                            image::read_image_header(bytes, options_.max_pixels));
    StoredImage image;
    if (options_.max_side > 0 && std::max(header.width, header.height) > options_.max_side) {
      STOKER_ASSIGN_OR_RETURN(image, downsize(bytes, header, worker));
    } else {
      STOKER_ASSIGN_OR_RETURN(
          image.bytes,
          transcode_for_storage(bytes, header, options_.keep_original, options_.max_pixels));
      // The transcode is lossless: the stored image has the original's size.
      image.width = header.width;
      image.height = header.height;
    }
    const ByteSpan stored =
        image.bytes.empty() ? bytes : ByteSpan{image.bytes.data(), image.bytes.size()};
    STOKER_RETURN_IF_ERROR(
        add_stored_pixels(stored, options_.max_pixels, scratch_[worker]->decode, out.pixels));
    STOKER_ASSIGN_OR_RETURN(
        out.record, encode_image_record(schema_, fields_,
                                        {stored, sample.label, image.height, image.width, bytes}));
    out.bytes_in = bytes.size;
    out.bytes_out = stored.size;
    return Status::ok();
  }

  // The image decoded whole, resized so that its longer side is max_side (PIL's antialiased
  // bilinear filter) and encoded as a JPEG.
  Result<StoredImage> downsize(ByteSpan bytes, const image::ImageHeader& header, int worker) {
    WorkerScratch& scratch = *scratch_[worker];
    image::DecodeRequest request;
    request.max_pixels = options_.max_pixels;
    STOKER_ASSIGN_OR_RETURN(const image::DecodedCrop decoded,
                            image::decode_rgb(bytes, request, scratch.decode));
    StoredImage image;
    std::tie(image.width, image.height) =
        downsized_size(header.width, header.height, options_.max_side);
    image::ResampleOutput out;
    out.width = image.width;
    out.height = image.height;
    out.type = image::ResampleOutput::Type::kUint8;
    const size_t plane = static_cast<size_t>(image.width) * image.height;
    scratch.planes.resize(3 * plane);
    const image::PixelBox whole{0, 0, static_cast<double>(header.width),
                                static_cast<double>(header.height)};
    const Status resized =
        scratch.resampler.resample(decoded.pixels, whole, out, scratch.planes.data());
    if (!resized.is_ok())
      return Status(resized.code(), fmt::format("downsizing to {}x{}: {}", image.width,
                                                image.height, resized.message()));
    scratch.rows.resize(3 * plane);
    for (size_t i = 0; i < plane; ++i) {
      for (size_t c = 0; c < 3; ++c) scratch.rows[3 * i + c] = scratch.planes[c * plane + i];
    }
    const image::RgbView rows{scratch.rows.data(), image.width, image.height,
                              3 * static_cast<ptrdiff_t>(image.width)};
    STOKER_ASSIGN_OR_RETURN(image.bytes, image::encode_jpeg(rows, kDownsizedJpegQuality));
    return image;
  }

  const ImageFolderImportOptions& options_;
  Schema schema_;
  ImageRecordFields fields_;
  std::vector<std::unique_ptr<WorkerScratch>> scratch_;  // one per worker
};

}  // namespace

std::string image_file_read_error(const Status& status, const std::string& path) {
  struct stat st {};
  if (status.code() == StatusCode::kNotFound && ::lstat(path.c_str(), &st) == 0 &&
      S_ISLNK(st.st_mode))
    return "a dangling symbolic link";
  const std::string& message = status.message();
  const std::string prefix = path + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

Result<ImageFolderImportSummary> import_image_folder(const ImageFolderImportOptions& options) {
  if (options.max_side < 0 || options.max_side > image::kMaxJpegSide)
    return invalid_argument(
        fmt::format("max side {} is not within 0..{}", options.max_side, image::kMaxJpegSide));
  STOKER_ASSIGN_OR_RETURN(std::vector<Split> splits, find_splits(options));
  ImageFolderImportSummary summary;
  std::vector<BadEntry> bad;
  uint64_t total = 0;
  for (Split& split : splits) {
    STOKER_ASSIGN_OR_RETURN(split.listing, list_image_folder(split.src));
    summary.ignored_files += split.listing.ignored_files;
    total += split.listing.samples.size();
    bad.insert(bad.end(), split.listing.bad.begin(), split.listing.bad.end());
    summary.datasets.push_back(split.out);
  }
  const std::vector<std::string>& classes = splits[0].listing.classes;
  if (splits.size() == 2 && splits[1].listing.classes != classes)
    return invalid_argument(fmt::format(
        "{} and {} have different classes (only in the first: {}; only in the second: {})",
        printable(splits[0].src), printable(splits[1].src),
        only_in(classes, splits[1].listing.classes), only_in(splits[1].listing.classes, classes)));
  summary.classes = classes.size();
  for (const BadEntry& entry : bad) {
    if (options.on_bad) options.on_bad(entry);
  }

  const int workers = options.workers ? std::max(1, *options.workers) : machine_cores();
  FileImporter importer(options, workers);
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.class_names = classes;
  if (options.record_order == RecordOrder::kShuffled)
    writer_options.record_shuffle_seed = options.seed;
  std::vector<std::string> dirs, sources;
  for (const Split& split : splits) {
    dirs.push_back(split.out);
    sources.push_back(split.src + " (ImageFolder)");
  }
  STOKER_ASSIGN_OR_RETURN(auto writer, SplitWriter::create(options.out, dirs, sources,
                                                           importer.schema(), writer_options));
  ImageFolderProgress progress;
  progress.total = total;
  std::vector<uint64_t> written(splits.size(), 0);  // images per split
  for (size_t s = 0; s < splits.size(); ++s) {
    const std::vector<ImageFolderSample>& samples = splits[s].listing.samples;
    const std::vector<uint64_t> order =
        image_folder_order(options.record_order, options.seed, s, samples.size());
    STOKER_RETURN_IF_ERROR(ordered_map<Imported>(
        samples.size(), workers, kWindowPerWorker * static_cast<size_t>(workers),
        [&](size_t i, int worker) { return importer.import(samples[order[i]], worker); },
        [&](size_t i, Imported& imported) -> Status {
          ++progress.done;
          if (!imported.bad.empty()) {
            bad.push_back({samples[order[i]].path, std::move(imported.bad)});
            if (options.on_bad) options.on_bad(bad.back());
          } else if (bad.empty() || options.skip_bad) {
            // Once a file is bad and bad files are not skipped, nothing will be kept: the rest
            // is only checked.
            DatasetWriter& split = writer->split(s);
            STOKER_RETURN_IF_ERROR(split.append(imported.record.data(), imported.record.size()));
            STOKER_RETURN_IF_ERROR(
                split.add_decoded_statistics(importer.image_field(), imported.pixels));
            ++summary.images;
            ++written[s];
            summary.bytes_in += imported.bytes_in;
            summary.bytes_out += imported.bytes_out;
            progress.bytes_in += imported.bytes_in;
            progress.bytes_out += imported.bytes_out;
          }
          if (options.on_progress) options.on_progress(progress);
          if (options.stop_requested && options.stop_requested())
            return Status(StatusCode::kCancelled, printable(options.src) + ": import stopped");
          return Status::ok();
        }));
  }
  if (!bad.empty() && !options.skip_bad)
    return corrupt(
        fmt::format("{} bad file{} of {} in {}; nothing written (--skip-bad imports the "
                    "rest)",
                    bad.size(), bad.size() == 1 ? "" : "s", total, printable(options.src)));
  for (size_t s = 0; s < splits.size(); ++s) {
    if (written[s] == 0)  // every file skipped: a dataset of nothing is no import
      return corrupt(fmt::format(
          "{}: all {} image files are bad, so {} would hold no images; nothing written (without "
          "--skip-bad each is listed with its reason)",
          printable(splits[s].src), splits[s].listing.samples.size(), printable(splits[s].out)));
  }
  std::vector<SplitWriter::OutputFile> files;
  if (!bad.empty()) {
    std::string list;
    for (const BadEntry& entry : bad) list += printable(entry.path) + ": " + entry.reason + "\n";
    files.push_back({kSkippedListName, std::move(list)});
    summary.skipped = bad.size();
    summary.skipped_list = (fs::path(options.out) / kSkippedListName).string();
  }
  STOKER_RETURN_IF_ERROR(writer->finish(files));
  return summary;
}

}  // namespace stoker
