#include "stoker/store/import/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "stoker/store/dataset_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/regular_file.h"

namespace stoker {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;
// Data is read, and buffers grow, by at most this much at a time.
constexpr size_t kChunkBytes = size_t{1} << 20;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to `size` (< 2^31) bytes; returns how many were read (fewer at the end of the
// file), or -1 on a zlib error.
int64_t read_fully(gzFile f, uint8_t* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    int n = gzread(f, out + done, static_cast<unsigned>(size - done));
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

std::string gz_error(gzFile f) {
  int code = 0;
  const char* msg = gzerror(f, &code);
  return msg ? msg : "read error";
}

// An IDX file (gzip-compressed or raw) read front to back: open() reads and checks the header,
// read() streams the data. Nothing is sized by what the header promises: a header that
// promises more than the file holds is found when the data runs out, having buffered no more
// than the file held. Errors name the file. Not thread-safe.
class IdxReader {
 public:
  static Result<IdxReader> open(const std::string& path) {
    STOKER_ASSIGN_OR_RETURN(RegularFile regular, RegularFile::open(path));
    GzFile file(gzdopen(regular.fd(), "rb"));
    if (!file) return io_error(path + ": cannot open");
    regular.release();  // gzclose closes it now
    IdxReader reader(path, std::move(file));
    STOKER_RETURN_IF_ERROR(reader.read_header());
    return reader;
  }

  const std::vector<uint32_t>& dims() const { return dims_; }

  // Replaces `out` with the next `size` data bytes (the caller reads no more than the header
  // promises). `out` grows only as bytes arrive.
  Status read(std::vector<uint8_t>& out, size_t size) {
    out.clear();
    while (out.size() < size) {
      const size_t done = out.size();
      out.resize(done + std::min(size - done, kChunkBytes));
      const int64_t n = read_fully(file_.get(), out.data() + done, out.size() - done);
      if (n < 0) return corrupt(path_ + ": " + gz_error(file_.get()));
      read_ += static_cast<uint64_t>(n);
      if (done + static_cast<size_t>(n) < out.size())
        return corrupt(fmt::format("{}: truncated: header promises {} data bytes, file has {}",
                                   path_, data_bytes_, read_));
    }
    return Status::ok();
  }

  // After the last read(): nothing may follow the data.
  Status finish() {
    uint8_t extra;
    const int64_t n = read_fully(file_.get(), &extra, 1);
    if (n < 0) return corrupt(path_ + ": " + gz_error(file_.get()));
    if (n > 0) return corrupt(path_ + ": trailing bytes after the IDX data");
    return Status::ok();
  }

 private:
  IdxReader(std::string path, GzFile file) : path_(std::move(path)), file_(std::move(file)) {}

  Status read_header() {
    uint8_t magic[4];
    int64_t n = read_fully(file_.get(), magic, 4);
    if (n < 0) return corrupt(path_ + ": " + gz_error(file_.get()));
    if (n < 4 || magic[0] != 0 || magic[1] != 0 || magic[3] == 0)
      return corrupt(path_ + ": not an IDX file (bad magic)");
    if (magic[2] != kTypeUnsignedByte)
      return unsupported(
          fmt::format("{}: IDX data type 0x{:02x} is not supported (only unsigned bytes, 0x08)",
                      path_, magic[2]));
    data_bytes_ = 1;
    for (int d = 0; d < magic[3]; ++d) {
      uint8_t be[4];
      if (read_fully(file_.get(), be, 4) != 4) return corrupt(path_ + ": truncated IDX header");
      const uint32_t dim =
          (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) | (uint32_t{be[2]} << 8) | be[3];
      dims_.push_back(dim);
      if (__builtin_mul_overflow(data_bytes_, dim, &data_bytes_))
        return corrupt(path_ + ": IDX dimensions multiply to more than 2^64 bytes");
    }
    return Status::ok();
  }

  std::string path_;
  GzFile file_;
  std::vector<uint32_t> dims_;
  uint64_t data_bytes_ = 0;  // promised by the header
  uint64_t read_ = 0;        // read so far
};

}  // namespace

std::string idx_source(const IdxImportOptions& options) {
  return options.images + " + " + options.labels;
}

Result<uint64_t> import_idx(const IdxImportOptions& options) {
  STOKER_ASSIGN_OR_RETURN(IdxReader images, IdxReader::open(options.images));
  STOKER_ASSIGN_OR_RETURN(IdxReader labels, IdxReader::open(options.labels));
  if (images.dims().size() != 3)
    return invalid_argument(
        fmt::format("{}: expected images of 3 dimensions (N, rows, cols), got {}", options.images,
                    images.dims().size()));
  if (labels.dims().size() != 1)
    return invalid_argument(fmt::format("{}: expected labels of 1 dimension, got {}",
                                        options.labels, labels.dims().size()));
  const uint32_t n = images.dims()[0];
  if (n != labels.dims()[0])
    return invalid_argument(fmt::format("{} has {} images but {} has {} labels", options.images, n,
                                        options.labels, labels.dims()[0]));
  const int64_t rows = images.dims()[1], cols = images.dims()[2];
  Result<Schema> created =
      Schema::create({{"image", DType::kUint8, {1, rows, cols}}, {"label", DType::kInt64, {}}});
  if (!created.is_ok()) return invalid_argument(options.images + ": " + created.status().message());
  const Schema schema = std::move(created).value();
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.source = idx_source(options);
  writer_options.class_names = options.class_names;
  writer_options.stop_requested = options.stop_requested;
  STOKER_ASSIGN_OR_RETURN(auto writer, DatasetWriter::create(options.out, schema, writer_options));
  // One record at a time: memory holds one image, one record and the shard writer's buffers,
  // whatever the input's size. The encoder (a record's worth of memory) is made once the first
  // image has arrived, so a header alone cannot make it allocate.
  std::vector<uint8_t> image, label;
  std::optional<RecordEncoder> encoder;
  const size_t image_bytes = schema.fields()[0].fixed_bytes();
  for (uint32_t i = 0; i < n; ++i) {
    STOKER_RETURN_IF_ERROR(images.read(image, image_bytes));
    STOKER_RETURN_IF_ERROR(labels.read(label, 1));
    if (!encoder) encoder.emplace(schema);
    const int64_t value = label[0];
    STOKER_RETURN_IF_ERROR(encoder->set_fixed(0, image.data(), image.size()));
    STOKER_RETURN_IF_ERROR(encoder->set_fixed(1, &value, sizeof value));
    const std::vector<uint8_t>& record = encoder->encode();
    STOKER_RETURN_IF_ERROR(writer->append(record.data(), record.size()));
  }
  STOKER_RETURN_IF_ERROR(images.finish());
  STOKER_RETURN_IF_ERROR(labels.finish());
  STOKER_RETURN_IF_ERROR(writer->finish());
  return uint64_t{n};
}

}  // namespace stoker
