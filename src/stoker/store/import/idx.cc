#include "stoker/store/import/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <memory>

#include "stoker/store/dataset_writer.h"
#include "stoker/store/record_encoder.h"

namespace stoker {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes; returns how many were read, or -1 on a zlib error.
int64_t read_fully(gzFile f, uint8_t* out, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(size - done, 1u << 30));
    int n = gzread(f, out + done, chunk);
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

std::string gz_error(gzFile f) {
  int code = 0;
  const char* msg = gzerror(f, &code);
  return msg ? msg : "read error";
}

}  // namespace

Result<IdxArray> read_idx(const std::string& path) {
  if (!std::filesystem::exists(path)) return not_found(path + ": no such file");
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) return io_error(path + ": cannot open");
  uint8_t magic[4];
  int64_t n = read_fully(file.get(), magic, 4);
  if (n < 0) return corrupt(path + ": " + gz_error(file.get()));
  if (n < 4 || magic[0] != 0 || magic[1] != 0 || magic[3] == 0)
    return corrupt(path + ": not an IDX file (bad magic)");
  if (magic[2] != kTypeUnsignedByte)
    return unsupported(
        fmt::format("{}: IDX data type 0x{:02x} is not supported (only unsigned "
                    "bytes, 0x08)",
                    path, magic[2]));
  IdxArray array;
  uint64_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t be[4];
    if (read_fully(file.get(), be, 4) != 4) return corrupt(path + ": truncated IDX header");
    uint32_t dim =
        (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) | (uint32_t{be[2]} << 8) | be[3];
    array.dims.push_back(dim);
    total *= dim;
    if (total > (uint64_t{1} << 40))
      return corrupt(path + ": IDX dimensions are implausibly large");
  }
  array.data.resize(total);
  n = read_fully(file.get(), array.data.data(), total);
  if (n < 0) return corrupt(path + ": " + gz_error(file.get()));
  if (static_cast<uint64_t>(n) < total)
    return corrupt(
        fmt::format("{}: truncated: header promises {} data bytes, file has {}", path, total, n));
  uint8_t extra;
  n = read_fully(file.get(), &extra, 1);
  if (n < 0) return corrupt(path + ": " + gz_error(file.get()));
  if (n > 0) return corrupt(path + ": trailing bytes after the IDX data");
  return array;
}

Result<uint64_t> import_idx(const IdxImportOptions& options) {
  STOKER_ASSIGN_OR_RETURN(IdxArray images, read_idx(options.images));
  STOKER_ASSIGN_OR_RETURN(IdxArray labels, read_idx(options.labels));
  if (images.dims.size() != 3)
    return invalid_argument(
        fmt::format("{}: expected images of 3 dimensions (N, rows, cols), got {}", options.images,
                    images.dims.size()));
  if (labels.dims.size() != 1)
    return invalid_argument(fmt::format("{}: expected labels of 1 dimension, got {}",
                                        options.labels, labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    return invalid_argument(fmt::format("{} has {} images but {} has {} labels", options.images,
                                        images.dims[0], options.labels, labels.dims[0]));
  const int64_t rows = images.dims[1], cols = images.dims[2];
  STOKER_ASSIGN_OR_RETURN(Schema schema, Schema::create({{"image", DType::kUint8, {1, rows, cols}},
                                                         {"label", DType::kInt64, {}}}));
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.source = options.images + " + " + options.labels;
  writer_options.class_names = options.class_names;
  STOKER_ASSIGN_OR_RETURN(auto writer, DatasetWriter::create(options.out, schema, writer_options));
  RecordEncoder encoder(schema);
  const size_t image_bytes = static_cast<size_t>(rows * cols);
  for (uint32_t i = 0; i < images.dims[0]; ++i) {
    int64_t label = labels.data[i];
    STOKER_RETURN_IF_ERROR(encoder.set_fixed(0, images.data.data() + i * image_bytes, image_bytes));
    STOKER_RETURN_IF_ERROR(encoder.set_fixed(1, &label, sizeof label));
    const std::vector<uint8_t>& record = encoder.encode();
    STOKER_RETURN_IF_ERROR(writer->append(record.data(), record.size()));
  }
  STOKER_RETURN_IF_ERROR(writer->finish());
  return uint64_t{images.dims[0]};
}

}  // namespace stoker
