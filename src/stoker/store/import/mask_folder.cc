#include "stoker/store/import/mask_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <system_error>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/store/channel_statistics.h"
#include "stoker/store/dataset_writer.h"
#include "stoker/store/import/image_folder_scan.h"
#include "stoker/store/import/stored_image.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/machine.h"
#include "stoker/util/ordered_map.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Results a worker may produce ahead of the writer, per worker.
constexpr size_t kMaskWindowPerWorker = 4;

enum MaskField { kMaskImage, kMaskClasses, kMaskHeight, kMaskWidth };

struct MaskPair {
  std::string image;
  std::string mask;
};

// The files of `dir` with an image extension, by stem; two of one stem are an error.
Result<std::map<std::string, std::string>> files_by_stem(const std::string& dir) {
  std::map<std::string, std::string> by_stem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    if (it->is_directory(ec) || !has_image_extension(path.filename().string())) continue;
    const auto [at, added] = by_stem.emplace(path.stem().string(), path.string());
    if (!added)
      return invalid_argument(fmt::format("{} and {} have one stem: which is the pair's?",
                                          printable(at->second), printable(path.string())));
  }
  if (ec) return io_error(fmt::format("{}: {}", printable(dir), ec.message()));
  return by_stem;
}

// The pairs, by stem; a file without its other half is an error.
Result<std::vector<MaskPair>> pair_files(const MaskFolderImportOptions& options) {
  STOKER_ASSIGN_OR_RETURN(const auto images, files_by_stem(options.images));
  STOKER_ASSIGN_OR_RETURN(const auto masks, files_by_stem(options.masks));
  std::vector<MaskPair> pairs;
  for (const auto& [stem, image] : images) {
    const auto mask = masks.find(stem);
    if (mask == masks.end())
      return invalid_argument(fmt::format("{} has no mask {}/{}.png", printable(image),
                                          printable(options.masks), printable(stem)));
    pairs.push_back({image, mask->second});
  }
  for (const auto& [stem, mask] : masks) {
    if (images.count(stem) == 0)
      return invalid_argument(fmt::format("{} has no image of stem '{}' in {}", printable(mask),
                                          printable(stem), printable(options.images)));
  }
  if (pairs.empty())
    return invalid_argument(fmt::format("{}: no images (.jpg, .png, ...) to pair with masks",
                                        printable(options.images)));
  return pairs;
}

// A PNG's colour type, for a mask's error.
const char* png_colors(image::ColorModel color) {
  switch (color) {
    case image::ColorModel::kGray:
      return "gray";
    case image::ColorModel::kGrayAlpha:
      return "gray + alpha";
    case image::ColorModel::kRgb:
      return "RGB";
    case image::ColorModel::kRgba:
      return "RGBA";
    case image::ColorModel::kPalette:
      return "palette";
    default:
      return "non-PNG";
  }
}

struct MaskEncoded {
  std::vector<uint8_t> record;
  ChannelStatistics pixels{3};
  Status status;
  uint64_t bytes_in = 0;
};

Status encode_mask_pair(const MaskFolderImportOptions& options, const Schema& schema,
                        const MaskPair& pair, image::DecodeBuffer& buffer, MaskEncoded& out) {
  STOKER_ASSIGN_OR_RETURN(
      const ImageToStore image,
      read_image_to_store(pair.image, printable(pair.image), options.keep_original,
                          options.max_pixels, buffer, out.pixels));
  // The mask is stored as it is; its whole decode checks its data (its pixels are no image
  // statistics).
  ChannelStatistics unused(3);
  STOKER_ASSIGN_OR_RETURN(
      const ImageToStore mask,
      read_image_to_store(pair.mask, printable(pair.mask),
                          /*keep_original=*/true, options.max_pixels, buffer, unused));
  if (mask.header.format != image::ImageFormat::kPng)
    return corrupt(fmt::format("{}: a mask must be a PNG, not a JPEG", printable(pair.mask)));
  // What the loader's class map decode (image/gray_png_decode.h) takes.
  const image::ColorModel colors = mask.header.color;
  if (mask.header.bit_depth != 8 ||
      (colors != image::ColorModel::kGray && colors != image::ColorModel::kPalette))
    return invalid_argument(
        fmt::format("{}: a mask must be an 8-bit gray or palette PNG, not {}-bit {}",
                    printable(pair.mask), mask.header.bit_depth, png_colors(colors)));
  if (mask.header.width != image.header.width || mask.header.height != image.header.height)
    return invalid_argument(fmt::format(
        "{} is {}x{}, but its image {} is {}x{}", printable(pair.mask), mask.header.width,
        mask.header.height, printable(pair.image), image.header.width, image.header.height));
  RecordEncoder encoder(schema);
  const int64_t height = image.header.height, width = image.header.width;
  STOKER_RETURN_IF_ERROR(encoder.set_fixed(kMaskHeight, &height, sizeof height));
  STOKER_RETURN_IF_ERROR(encoder.set_fixed(kMaskWidth, &width, sizeof width));
  STOKER_RETURN_IF_ERROR(encoder.set_bytes(kMaskImage, image.stored().data, image.stored().size));
  STOKER_RETURN_IF_ERROR(encoder.set_bytes(kMaskClasses, mask.file.data(), mask.file.size()));
  out.record = encoder.encode();
  out.bytes_in = image.file.size() + mask.file.size();
  return Status::ok();
}

}  // namespace

Schema mask_record_schema() {
  std::vector<Field> fields = {{"image", DType::kBytes},
                               {"mask", DType::kBytes},
                               {"height", DType::kInt64},
                               {"width", DType::kInt64}};
  // Valid by construction, its fields in MaskField's order.
  return std::move(Schema::create(std::move(fields))).value();
}

Result<MaskFolderImportSummary> import_mask_folder(const MaskFolderImportOptions& options) {
  STOKER_ASSIGN_OR_RETURN(const std::vector<MaskPair> pairs, pair_files(options));
  const Schema schema = mask_record_schema();
  DatasetWriterOptions writer_options;
  writer_options.shard_bytes = options.shard_bytes;
  writer_options.source = options.images + " and " + options.masks + " (image + mask folders)";
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                          DatasetWriter::create(options.out, schema, writer_options));
  const int workers = options.workers ? std::max(1, *options.workers) : machine_cores();
  std::vector<image::DecodeBuffer> buffers(static_cast<size_t>(workers));
  MaskFolderImportSummary summary;
  STOKER_RETURN_IF_ERROR(ordered_map<MaskEncoded>(
      pairs.size(), workers, kMaskWindowPerWorker * static_cast<size_t>(workers),
      [&](size_t i, int worker) {
        MaskEncoded out;
        out.status = encode_mask_pair(options, schema, pairs[i], buffers[worker], out);
        return out;
      },
      [&](size_t, MaskEncoded& encoded) -> Status {
        STOKER_RETURN_IF_ERROR(encoded.status);
        STOKER_RETURN_IF_ERROR(writer->append(encoded.record.data(), encoded.record.size()));
        STOKER_RETURN_IF_ERROR(writer->add_decoded_statistics(kMaskImage, encoded.pixels));
        ++summary.pairs;
        summary.bytes_in += encoded.bytes_in;
        summary.bytes_out += encoded.record.size();
        if (options.stop_requested && options.stop_requested())
          return Status(StatusCode::kCancelled, printable(options.images) + ": import stopped");
        return Status::ok();
      }));
  STOKER_RETURN_IF_ERROR(writer->finish());
  return summary;
}

}  // namespace stoker
