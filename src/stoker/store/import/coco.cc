#include "stoker/store/import/coco.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <vector>

#include "stoker/image/png_encode.h"
#include "stoker/store/channel_statistics.h"
#include "stoker/store/dataset_writer.h"
#include "stoker/store/import/coco_annotations.h"
#include "stoker/store/import/stored_image.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/machine.h"
#include "stoker/util/ordered_map.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// Results a worker may produce ahead of the writer, per worker.
constexpr size_t kCocoWindowPerWorker = 4;
// The most bytes an image's masks may take, N x H x W (COCO's largest is under 40 MB): it bounds
// a worker's memory on a file with absurdly many objects.
constexpr uint64_t kMaxCocoMaskBytes = uint64_t{1} << 30;

enum CocoField {
  kCocoImage,
  kCocoImageId,
  kCocoHeight,
  kCocoWidth,
  kCocoBoxes,
  kCocoLabels,
  kCocoArea,
  kCocoIsCrowd,
  kCocoMasks
};

// One image's record, made by a worker, or why it failed.
struct CocoEncoded {
  std::vector<uint8_t> record;
  ChannelStatistics pixels{3};
  Status status;
  uint64_t bytes_in = 0;
  uint64_t objects = 0;
};

// An object as stored: its index in the image's objects and its XYXY box.
struct StoredObject {
  size_t index;
  std::array<float, 4> box;
};

// The objects of `image` to store, in the file's order: all, their boxes torchvision's (COCO's
// [x, y, w, h] as float32, then x + w and y + h in float32), or with `v1_targets` the v1
// reference's (CocoImportOptions::v1_targets).
std::vector<StoredObject> stored_objects(const CocoImage& image, bool v1_targets) {
  std::vector<StoredObject> stored;
  const auto width = static_cast<float>(image.width), height = static_cast<float>(image.height);
  for (size_t k = 0; k < image.objects.size(); ++k) {
    const CocoObject& object = image.objects[k];
    if (v1_targets && object.crowd) continue;
    const float x = static_cast<float>(object.bbox[0]), y = static_cast<float>(object.bbox[1]);
    std::array<float, 4> box = {x, y, x + static_cast<float>(object.bbox[2]),
                                y + static_cast<float>(object.bbox[3])};
    if (v1_targets) {
      for (size_t i = 0; i < 4; ++i) box[i] = std::clamp(box[i], 0.0f, i % 2 ? height : width);
      if (!(box[2] > box[0] && box[3] > box[1])) continue;
    }
    stored.push_back({k, box});
  }
  return stored;
}

// Class names indexed by category id, as torchvision's COCO category list.
std::vector<std::string> class_names_by_id(const std::vector<CocoCategory>& categories) {
  int64_t largest = 0;
  for (const CocoCategory& c : categories) largest = std::max(largest, c.id);
  std::vector<std::string> names(static_cast<size_t>(largest) + 1, "N/A");
  names[0] = "__background__";
  for (const CocoCategory& c : categories) names[static_cast<size_t>(c.id)] = c.name;
  return names;
}

class CocoEncoder {
 public:
  CocoEncoder(const CocoImportOptions& options, const Schema& schema)
      : options_(options), schema_(schema) {}

  CocoEncoded encode(const CocoImage& image, image::DecodeBuffer& buffer) const {
    CocoEncoded out;
    out.status = encode_into(image, buffer, out);
    return out;
  }

 private:
  Status encode_into(const CocoImage& image, image::DecodeBuffer& buffer, CocoEncoded& out) const {
    const std::string path = (std::filesystem::path(options_.images) / image.file_name).string();
    const auto bad = [&](const std::string& why) {
      return corrupt(fmt::format("{} (image {}): {}", printable(path), image.id, why));
    };
    Result<ImageToStore> read =
        read_image_to_store(path, fmt::format("{} (image {})", printable(path), image.id),
                            options_.keep_original, options_.max_pixels, buffer, out.pixels);
    if (!read.is_ok()) return read.status();
    const image::ImageHeader& header = read.value().header;
    if (header.width != image.width || header.height != image.height)
      return bad(fmt::format("the image is {}x{}, but {} says {}x{}", header.width, header.height,
                             printable(options_.annotations), image.width, image.height));
    const ByteSpan stored = read.value().stored();

    const std::vector<StoredObject> objects = stored_objects(image, options_.v1_targets);
    const size_t n = objects.size();
    std::vector<float> boxes(4 * n), area(n);
    std::vector<int64_t> labels(n), crowd(n);
    const size_t plane = static_cast<size_t>(image.height) * static_cast<size_t>(image.width);
    if (n > 0 && plane > kMaxCocoMaskBytes / n)
      return bad(fmt::format("{} objects' {}x{} masks are over {} GiB", n, image.width,
                             image.height, kMaxCocoMaskBytes >> 30));
    std::vector<uint8_t> masks(n * plane, 0);
    for (size_t k = 0; k < n; ++k) {
      const CocoObject& object = image.objects[objects[k].index];
      std::copy(objects[k].box.begin(), objects[k].box.end(), boxes.begin() + 4 * k);
      labels[k] = object.category_id;
      area[k] = static_cast<float>(object.area);
      crowd[k] = object.crowd ? 1 : 0;
      if (Status s = paint_coco_object(object, image, masks.data() + k * plane); !s.is_ok())
        return invalid_argument(
            fmt::format("{}: {}", printable(options_.annotations), s.message()));
    }
    std::vector<uint8_t> png;
    if (n > 0) {
      Result<std::vector<uint8_t>> encoded =
          image::encode_gray_png(masks.data(), image.width, image.height * static_cast<int64_t>(n));
      if (!encoded.is_ok()) return bad("masks: " + encoded.status().message());
      png = std::move(encoded).value();
    }

    RecordEncoder encoder(schema_);
    const int64_t scalars[][2] = {
        {kCocoImageId, image.id}, {kCocoHeight, image.height}, {kCocoWidth, image.width}};
    for (const auto& [field, value] : scalars)
      STOKER_RETURN_IF_ERROR(encoder.set_fixed(static_cast<int>(field), &value, sizeof value));
    STOKER_RETURN_IF_ERROR(encoder.set_bytes(kCocoImage, stored.data, stored.size));
    STOKER_RETURN_IF_ERROR(encoder.set_rows(kCocoBoxes, boxes.data(), n));
    STOKER_RETURN_IF_ERROR(encoder.set_rows(kCocoLabels, labels.data(), n));
    STOKER_RETURN_IF_ERROR(encoder.set_rows(kCocoArea, area.data(), n));
    STOKER_RETURN_IF_ERROR(encoder.set_rows(kCocoIsCrowd, crowd.data(), n));
    STOKER_RETURN_IF_ERROR(encoder.set_bytes(kCocoMasks, png.data(), png.size()));
    out.record = encoder.encode();
    out.bytes_in = read.value().file.size();
    out.objects = n;
    return Status::ok();
  }

  const CocoImportOptions& options_;
  const Schema& schema_;
};

}  // namespace

Schema coco_record_schema() {
  std::vector<Field> fields = {{"image", DType::kBytes},
                               {"image_id", DType::kInt64},
                               {"height", DType::kInt64},
                               {"width", DType::kInt64},
                               {"boxes", DType::kFloat32, {4}, "N"},
                               {"labels", DType::kInt64, {}, "N"},
                               {"area", DType::kFloat32, {}, "N"},
                               {"iscrowd", DType::kInt64, {}, "N"},
                               {"masks", DType::kBytes}};
  // Valid by construction, its fields in CocoField's order.
  return std::move(Schema::create(std::move(fields))).value();
}

bool has_usable_object(const CocoImage& image) {
  return std::any_of(image.objects.begin(), image.objects.end(), [](const CocoObject& object) {
    return object.bbox[2] > 1 && object.bbox[3] > 1;
  });
}

Result<CocoImportSummary> import_coco(const CocoImportOptions& options) {
  STOKER_ASSIGN_OR_RETURN(CocoAnnotations annotations, read_coco_annotations(options.annotations));
  const size_t listed = annotations.images.size();
  if (options.drop_empty)
    annotations.images.erase(
        std::remove_if(annotations.images.begin(), annotations.images.end(),
                       [](const CocoImage& image) { return !has_usable_object(image); }),
        annotations.images.end());
  if (annotations.images.empty())
    return Status(StatusCode::kInvalidArgument, printable(options.annotations) +
                                                    ": no image has an object wider and taller " +
                                                    "than 1 pixel: --drop-empty leaves none");
  const Schema schema = coco_record_schema();
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.class_names = class_names_by_id(annotations.categories);
  writer_options.source = options.annotations + " (COCO)";
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                          DatasetWriter::create(options.out, schema, writer_options));
  const int workers = options.workers ? std::max(1, *options.workers) : machine_cores();
  std::vector<image::DecodeBuffer> buffers(static_cast<size_t>(workers));
  const CocoEncoder encoder(options, schema);
  CocoImportSummary summary;
  summary.categories = annotations.categories.size();
  summary.dropped = listed - annotations.images.size();
  const std::vector<CocoImage>& images = annotations.images;
  STOKER_RETURN_IF_ERROR(ordered_map<CocoEncoded>(
      images.size(), workers, kCocoWindowPerWorker * static_cast<size_t>(workers),
      [&](size_t i, int worker) { return encoder.encode(images[i], buffers[worker]); },
      [&](size_t i, CocoEncoded& encoded) -> Status {
        STOKER_RETURN_IF_ERROR(encoded.status);
        STOKER_RETURN_IF_ERROR(writer->append(encoded.record.data(), encoded.record.size()));
        STOKER_RETURN_IF_ERROR(writer->add_decoded_statistics(kCocoImage, encoded.pixels));
        ++summary.images;
        summary.objects += encoded.objects;
        summary.bytes_in += encoded.bytes_in;
        summary.bytes_out += encoded.record.size();
        if (options.on_progress) options.on_progress(i + 1, images.size());
        if (options.stop_requested && options.stop_requested())
          return Status(StatusCode::kCancelled,
                        printable(options.annotations) + ": import stopped");
        return Status::ok();
      }));
  STOKER_RETURN_IF_ERROR(writer->finish());
  return summary;
}

}  // namespace stoker
