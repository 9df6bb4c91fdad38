#include "stoker/store/import/image_folder.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <thread>

#include "stoker/image/decode.h"
#include "stoker/image/jpeg_transcode.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/split_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/ordered_map.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Results a worker may produce ahead of the writer, per worker.
constexpr size_t kWindowPerWorker = 4;
// A worker's decode buffer that has grown past this (a huge image) is released after use.
constexpr size_t kDecodeBufferKeepBytes = size_t{64} << 20;

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

// One file, read, checked and encoded by a worker: the record, or why the file is bad.
struct Imported {
  std::vector<uint8_t> record;
  std::string bad;  // the reason, if bad
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

// Why `path` could not be read: the error of `status` without the path it starts with, or
// what a missing file is.
std::string read_error(const Status& status, const std::string& path) {
  struct stat st {};
  if (status.code() == StatusCode::kNotFound && ::lstat(path.c_str(), &st) == 0 &&
      S_ISLNK(st.st_mode))
    return "a dangling symbolic link";
  const std::string& message = status.message();
  const std::string prefix = path + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

class FileImporter {
 public:
  FileImporter(const ImageFolderImportOptions& options, int workers)
      : options_(options), schema_(image_record_schema()), buffers_(workers) {
    fields_ = ImageRecordFields::find(schema_).value();
  }
  const Schema& schema() const { return schema_; }

  // Reads, checks and encodes `sample` on worker `worker`.
  Imported import(const ImageFolderSample& sample, int worker) {
    Imported out;
    Result<std::string> file = read_file(sample.path, kMaxImageFileBytes);
    if (!file.is_ok()) {
      out.bad = read_error(file.status(), sample.path);
      return out;
    }
    const Status status = encode(sample, file.value(), worker, out);
    if (!status.is_ok()) out.bad = status.message();
    return out;
  }

 private:
  // Fills `out` with the record of `sample`, whose file holds `file`, or says why it is bad.
  Status encode(const ImageFolderSample& sample, const std::string& file, int worker,
                Imported& out) {
    const ByteSpan bytes{reinterpret_cast<const uint8_t*>(file.data()), file.size()};
    STOKER_ASSIGN_OR_RETURN(const image::ImageHeader header,
                            image::read_image_header(bytes, options_.max_pixels));
    std::vector<uint8_t> transcoded;
    if (header.format == image::ImageFormat::kJpeg && !options_.keep_original) {
      Result<std::vector<uint8_t>> result =
          image::transcode_jpeg_for_crops(bytes, options_.max_pixels);
      // kUnsupported here, after the header passed, is a JPEG the transcode cannot copy with
      // the same pixels (a progressive scan script leaving bits unsent): stored as it is.
      if (result.is_ok()) {
        transcoded = std::move(result).value();
      } else if (result.status().code() != StatusCode::kUnsupported) {
        return result.status();
      }
    }
    if (transcoded.empty()) STOKER_RETURN_IF_ERROR(check_decodes(bytes, worker));
    const ByteSpan stored =
        transcoded.empty() ? bytes : ByteSpan{transcoded.data(), transcoded.size()};
    // The transcode is lossless: the stored image has the original's size.
    const int64_t scalars[][2] = {
        {fields_.label, sample.label},
        {fields_.height, header.height},
        {fields_.width, header.width},
        {fields_.original_size, static_cast<int64_t>(bytes.size)},
        {fields_.original_checksum, static_cast<int64_t>(xxh3_64(bytes.data, bytes.size))}};
    RecordEncoder encoder(schema_);
    for (const auto& [field, value] : scalars)
      STOKER_RETURN_IF_ERROR(encoder.set_fixed(static_cast<int>(field), &value, sizeof value));
    STOKER_RETURN_IF_ERROR(encoder.set_bytes(fields_.image, stored.data, stored.size));
    out.record = encoder.encode();
    out.bytes_in = bytes.size;
    out.bytes_out = stored.size;
    return Status::ok();
  }

  // Decodes the whole image, which reads all of its data.
  Status check_decodes(ByteSpan bytes, int worker) {
    image::DecodeRequest request;
    request.max_pixels = options_.max_pixels;
    image::DecodeBuffer& buffer = buffers_[worker];
    const Status status = image::decode_rgb(bytes, request, buffer).status();
    if (buffer.capacity() > kDecodeBufferKeepBytes) buffer = image::DecodeBuffer();
    return status;
  }

  const ImageFolderImportOptions& options_;
  Schema schema_;
  ImageRecordFields fields_;
  std::vector<image::DecodeBuffer> buffers_;  // one per worker
};

}  // namespace

Result<ImageFolderImportSummary> import_image_folder(const ImageFolderImportOptions& options) {
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

  const int workers = options.workers > 0
                          ? options.workers
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  FileImporter importer(options, workers);
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.class_names = classes;
  std::vector<std::string> dirs, sources;
  for (const Split& split : splits) {
    dirs.push_back(split.out);
    sources.push_back(split.src + " (ImageFolder)");
  }
  STOKER_ASSIGN_OR_RETURN(auto writer, SplitWriter::create(options.out, dirs, sources,
                                                           importer.schema(), writer_options));
  ImageFolderProgress progress;
  progress.total = total;
  for (size_t s = 0; s < splits.size(); ++s) {
    const std::vector<ImageFolderSample>& samples = splits[s].listing.samples;
    STOKER_RETURN_IF_ERROR(ordered_map<Imported>(
        samples.size(), workers, kWindowPerWorker * static_cast<size_t>(workers),
        [&](size_t i, int worker) { return importer.import(samples[i], worker); },
        [&](size_t i, Imported& imported) -> Status {
          ++progress.done;
          if (!imported.bad.empty()) {
            bad.push_back({samples[i].path, std::move(imported.bad)});
            if (options.on_bad) options.on_bad(bad.back());
          } else if (bad.empty() || options.skip_bad) {
            // Once a file is bad and bad files are not skipped, nothing will be kept: the rest
            // is only checked.
            STOKER_RETURN_IF_ERROR(
                writer->split(s).append(imported.record.data(), imported.record.size()));
            ++summary.images;
            summary.bytes_in += imported.bytes_in;
            summary.bytes_out += imported.bytes_out;
            progress.bytes_in += imported.bytes_in;
            progress.bytes_out += imported.bytes_out;
          }
          if (options.on_progress) options.on_progress(progress);
          return Status::ok();
        }));
  }
  if (!bad.empty() && !options.skip_bad)
    return corrupt(
        fmt::format("{} bad file{} of {} in {}; nothing written (--skip-bad imports the "
                    "rest)",
                    bad.size(), bad.size() == 1 ? "" : "s", total, printable(options.src)));
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
