#include "stoker/store/import/cifar10.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "stoker/store/import/split_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/regular_file.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// Records read from a .bin file at a time.
constexpr uint64_t kRecordsPerRead = 256;
// batches.meta.txt holds ten short names; anything larger is not it.
constexpr uint64_t kMaxMetaBytes = 64 << 10;

// The class names of batches.meta.txt: one per line, trailing white space and trailing blank
// lines dropped.
Result<std::vector<std::string>> read_class_names(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(std::string text, read_file(path, kMaxMetaBytes));
  std::vector<std::string> names;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(start, end - start);
    name.erase(name.find_last_not_of(" \t\r") + 1);
    names.push_back(std::move(name));
    start = end + 1;
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  if (names.size() != kCifar10Classes)
    return corrupt(fmt::format("{}: {} class names, expected {} (one per line)", path, names.size(),
                               kCifar10Classes));
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) return corrupt(fmt::format("{}: line {} is empty", path, i + 1));
    if (!is_valid_utf8(names[i]))
      return corrupt(fmt::format("{}: line {} is not UTF-8: {}", path, i + 1, printable(names[i])));
  }
  return names;
}

// A .bin file opened and checked to hold a whole, non-zero number of records.
struct BatchFile {
  std::string path;
  RegularFile file;
  uint64_t records;
};

Result<BatchFile> open_batch(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  const uint64_t size = file.size();
  if (size == 0 || size % kCifar10RecordBytes != 0)
    return corrupt(fmt::format(
        "{}: {} bytes is not a whole number of {}-byte records (truncated or not CIFAR-10)", path,
        size, kCifar10RecordBytes));
  return BatchFile{path, std::move(file), size / kCifar10RecordBytes};
}

// Reads exactly `size` bytes, or fails naming the file (it shrank since it was opened).
Status read_exactly(const BatchFile& batch, uint8_t* out, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::read(batch.file.fd(), out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(batch.path + ": read failed: " + std::strerror(errno));
    if (n == 0) return corrupt(batch.path + ": shorter than when it was opened");
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

// Appends every record of `batch` to `writer`, checking each label.
Status copy_records(const BatchFile& batch, RecordEncoder& encoder, DatasetWriter& writer) {
  std::vector<uint8_t> buffer(kRecordsPerRead * kCifar10RecordBytes);
  for (uint64_t first = 0; first < batch.records; first += kRecordsPerRead) {
    const uint64_t count = std::min(kRecordsPerRead, batch.records - first);
    STOKER_RETURN_IF_ERROR(read_exactly(batch, buffer.data(), count * kCifar10RecordBytes));
    for (uint64_t i = 0; i < count; ++i) {
      const uint8_t* record = buffer.data() + i * kCifar10RecordBytes;
      const int64_t label = record[0];
      if (label >= kCifar10Classes)
        return corrupt(fmt::format("{}: record {}: label {} is not one of the {} classes",
                                   batch.path, first + i, label, kCifar10Classes));
      STOKER_RETURN_IF_ERROR(encoder.set_fixed(0, record + 1, kCifar10RecordBytes - 1));
      STOKER_RETURN_IF_ERROR(encoder.set_fixed(1, &label, sizeof label));
      const std::vector<uint8_t>& encoded = encoder.encode();
      STOKER_RETURN_IF_ERROR(writer.append(encoded.data(), encoded.size()));
    }
  }
  return Status::ok();
}

}  // namespace

Result<Cifar10ImportCounts> import_cifar10(const Cifar10ImportOptions& options) {
  const auto in_src = [&](const char* name) {
    return (std::filesystem::path(options.src) / name).string();
  };
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.stop_requested = options.stop_requested;
  STOKER_ASSIGN_OR_RETURN(writer_options.class_names, read_class_names(in_src(kCifar10MetaFile)));
  std::vector<std::vector<BatchFile>> splits(2);
  for (const char* name : kCifar10TrainFiles) {
    STOKER_ASSIGN_OR_RETURN(BatchFile batch, open_batch(in_src(name)));
    splits[0].push_back(std::move(batch));
  }
  STOKER_ASSIGN_OR_RETURN(BatchFile test, open_batch(in_src(kCifar10TestFile)));
  splits[1].push_back(std::move(test));

  STOKER_ASSIGN_OR_RETURN(
      const Schema schema,
      Schema::create({{"image", DType::kUint8, {3, 32, 32}}, {"label", DType::kInt64, {}}}));
  const std::string source = options.src + " (CIFAR-10 binary version)";
  STOKER_ASSIGN_OR_RETURN(
      auto writer, SplitWriter::create(options.out, {options.out + "/train", options.out + "/test"},
                                       {source, source}, schema, writer_options));
  RecordEncoder encoder(schema);
  Cifar10ImportCounts counts;
  for (size_t s = 0; s < splits.size(); ++s) {
    for (const BatchFile& batch : splits[s]) {
      STOKER_RETURN_IF_ERROR(copy_records(batch, encoder, writer->split(s)));
      (s == 0 ? counts.train : counts.test) += batch.records;
    }
  }
  STOKER_RETURN_IF_ERROR(writer->finish());
  return counts;
}

}  // namespace stoker
