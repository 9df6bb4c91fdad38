#include "stoker/store/import/voc.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "stoker/store/channel_statistics.h"
#include "stoker/store/dataset_writer.h"
#include "stoker/store/import/stored_image.h"
#include "stoker/store/import/voc_annotation.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/machine.h"
#include "stoker/util/ordered_map.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Results a worker may produce ahead of the writer, per worker.
constexpr size_t kVocWindowPerWorker = 4;
// Largest split list read.
constexpr uint64_t kMaxSplitListBytes = uint64_t{64} << 20;

enum VocField { kVocImage, kVocHeight, kVocWidth, kVocBoxes, kVocLabels, kVocDifficult };

struct VocEncoded {
  std::vector<uint8_t> record;
  ChannelStatistics pixels{3};
  Status status;
  uint64_t objects = 0;
};

// The split's names, one a line, blank lines skipped (torchvision strips each line).
Result<std::vector<std::string>> read_voc_split(const VocImportOptions& options) {
  const std::string path = (fs::path(options.src) / "ImageSets/Main" / (options.split + ".txt"));
  STOKER_ASSIGN_OR_RETURN(const std::string text, read_file(path, kMaxSplitListBytes));
  std::vector<std::string> names;
  size_t line = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string name = text.substr(start, end - start);
    start = end + 1;
    const size_t first = name.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    name = name.substr(first, name.find_last_not_of(" \t\r") - first + 1);
    if (name.find('/') != std::string::npos || name == "." || name == ".." ||
        name.find('\0') != std::string::npos)
      return invalid_argument(fmt::format("{}: line {}: '{}' is not a file stem", printable(path),
                                          line, printable(name).substr(0, 60)));
    names.push_back(std::move(name));
  }
  if (names.empty()) return invalid_argument(fmt::format("{}: no images listed", printable(path)));
  return names;
}

Status encode_voc_image(const VocImportOptions& options, const Schema& schema,
                        const std::string& name, image::DecodeBuffer& buffer, VocEncoded& out) {
  const std::string xml_path = (fs::path(options.src) / "Annotations" / (name + ".xml"));
  const std::string image_path = (fs::path(options.src) / "JPEGImages" / (name + ".jpg"));
  Result<std::string> xml = read_file(xml_path, kMaxVocXmlBytes);
  if (!xml.is_ok()) return xml.status();
  STOKER_ASSIGN_OR_RETURN(const VocAnnotation annotation,
                          parse_voc_annotation(xml.value(), printable(xml_path)));
  STOKER_ASSIGN_OR_RETURN(
      const ImageToStore image,
      read_image_to_store(image_path, printable(image_path), options.keep_original,
                          options.max_pixels, buffer, out.pixels));
  if (image.header.width != annotation.width || image.header.height != annotation.height)
    return invalid_argument(fmt::format(
        "{}: the image is {}x{}, but {} says {}x{}", printable(image_path), image.header.width,
        image.header.height, printable(xml_path), annotation.width, annotation.height));
  const size_t n = annotation.objects.size();
  std::vector<float> boxes(4 * n);
  std::vector<int64_t> labels(n), difficult(n);
  for (size_t k = 0; k < n; ++k) {
    const VocObject& object = annotation.objects[k];
    for (int i = 0; i < 4; ++i) boxes[4 * k + i] = static_cast<float>(object.box[i]);
    labels[k] = object.label;
    difficult[k] = object.difficult ? 1 : 0;
  }
  RecordEncoder encoder(schema);
  const int64_t height = annotation.height, width = annotation.width;
  STOKER_RETURN_IF_ERROR(encoder.set_fixed(kVocHeight, &height, sizeof height));
  STOKER_RETURN_IF_ERROR(encoder.set_fixed(kVocWidth, &width, sizeof width));
  STOKER_RETURN_IF_ERROR(encoder.set_bytes(kVocImage, image.stored().data, image.stored().size));
  STOKER_RETURN_IF_ERROR(encoder.set_rows(kVocBoxes, boxes.data(), n));
  STOKER_RETURN_IF_ERROR(encoder.set_rows(kVocLabels, labels.data(), n));
  STOKER_RETURN_IF_ERROR(encoder.set_rows(kVocDifficult, difficult.data(), n));
  out.record = encoder.encode();
  out.objects = n;
  return Status::ok();
}

}  // namespace

Schema voc_record_schema() {
  std::vector<Field> fields = {
      {"image", DType::kBytes},           {"height", DType::kInt64},
      {"width", DType::kInt64},           {"boxes", DType::kFloat32, {4}, "N"},
      {"labels", DType::kInt64, {}, "N"}, {"difficult", DType::kInt64, {}, "N"}};
  // Valid by construction, its fields in VocField's order.
  return std::move(Schema::create(std::move(fields))).value();
}

Result<VocImportSummary> import_voc(const VocImportOptions& options) {
  STOKER_ASSIGN_OR_RETURN(const std::vector<std::string> names, read_voc_split(options));
  const Schema schema = voc_record_schema();
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.class_names = {"__background__"};
  for (const char* name : kVocClasses) writer_options.class_names.emplace_back(name);
  writer_options.source = options.src + " (Pascal VOC, " + options.split + ")";
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                          DatasetWriter::create(options.out, schema, writer_options));
  const int workers = options.workers ? std::max(1, *options.workers) : machine_cores();
  std::vector<image::DecodeBuffer> buffers(static_cast<size_t>(workers));
  VocImportSummary summary;
  STOKER_RETURN_IF_ERROR(ordered_map<VocEncoded>(
      names.size(), workers, kVocWindowPerWorker * static_cast<size_t>(workers),
      [&](size_t i, int worker) {
        VocEncoded out;
        out.status = encode_voc_image(options, schema, names[i], buffers[worker], out);
        return out;
      },
      [&](size_t, VocEncoded& encoded) -> Status {
        STOKER_RETURN_IF_ERROR(encoded.status);
        STOKER_RETURN_IF_ERROR(writer->append(encoded.record.data(), encoded.record.size()));
        STOKER_RETURN_IF_ERROR(writer->add_decoded_statistics(kVocImage, encoded.pixels));
        ++summary.images;
        summary.objects += encoded.objects;
        if (options.stop_requested && options.stop_requested())
          return Status(StatusCode::kCancelled, printable(options.src) + ": import stopped");
        return Status::ok();
      }));
  STOKER_RETURN_IF_ERROR(writer->finish());
  return summary;
}

}  // namespace stoker
