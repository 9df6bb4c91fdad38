#include "stoker/store/import/image_table_rows.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "stoker/image/exif_orientation.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

// Why PIL through Hugging Face's Image feature (`pil`) would give image `bytes` (of header
// `header`) otherwise than stoker's RGB decode, or nullopt where it would not.
std::optional<std::string> pil_difference(PilDecode pil, ByteSpan bytes,
                                          const image::ImageHeader& header) {
  if (pil == PilDecode::kNone) return std::nullopt;
  if (pil == PilDecode::kOwn && header.components != 3)
    return fmt::format(
        "its image has {} samples a pixel: Hugging Face gives it in PIL's mode for that, not RGB "
        "(cast the column to Image(mode=\"RGB\") to read it natively)",
        header.components);
  const int orientation = image::exif_orientation(bytes);
  if (orientation < 0) return "its EXIF segment cannot be read: Hugging Face may turn the image";
  if (orientation > 1)
    return fmt::format(
        "its EXIF orientation is {}: Hugging Face turns the image (PIL's exif_transpose), stoker "
        "does not",
        orientation);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> image_row_values(const ImageRow& row, const ImageRowOptions& options,
                                            ImageRecordValues& values, std::string& from_file) {
  values.label = row.label.value_or(0);
  if (!row.label) return "its label is null";
  if (!row.image) {
    if (!row.path) return "its image is null";
    Result<std::string> bytes =
        table_file_at_path(options.folder, std::string(*row.path), kMaxImageFileBytes);
    if (!bytes.is_ok())
      return fmt::format("its image's path '{}': {}", *row.path, bytes.status().message());
    from_file = std::move(bytes).value();
    values.original = {reinterpret_cast<const uint8_t*>(from_file.data()), from_file.size()};
  } else if (row.image->size() > kMaxImageFileBytes) {
    return fmt::format("its image is larger than {} bytes", kMaxImageFileBytes);
  } else {
    values.original = {reinterpret_cast<const uint8_t*>(row.image->data()), row.image->size()};
  }
  Result<image::ImageHeader> header = image::read_image_header(values.original, options.max_pixels);
  if (!header.is_ok()) return header.status().message();
  if (std::optional<std::string> why = pil_difference(options.pil, values.original, header.value()))
    return why;
  values.stored = values.original;
  values.height = header.value().height;
  values.width = header.value().width;
  return std::nullopt;
}

UnitImageRecords::UnitImageRecords(const Schema& schema, uint64_t first, int64_t rows,
                                   std::map<uint64_t, std::string>& bad)
    : UnitRecords(schema, first, rows, bad,
                  encode_image_record(schema, ImageRecordFields::find(schema).value(), {}).value()),
      fields_(ImageRecordFields::find(schema).value()) {}

void UnitImageRecords::add(const ImageRow& row, const ImageRowOptions& options) {
  if (full()) return;
  ImageRecordValues values;
  std::string from_file;  // the bytes of the image file at its path
  std::optional<std::string> reason = image_row_values(row, options, values, from_file);
  // An image is at most kMaxImageFileBytes: its record always encodes.
  append(encode_image_record(schema_, fields_, values).value(), std::move(reason));
}

std::vector<std::string> hugging_face_class_names(const std::string& metadata,
                                                  const std::string& label) {
  const nlohmann::json json = nlohmann::json::parse(metadata, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json::json_pointer names("/info/features/" + label + "/names");
  if (json.is_discarded() || !json.contains(names) || !json[names].is_array()) return {};
  std::vector<std::string> classes;
  for (const nlohmann::json& name : json[names]) {
    if (!name.is_string()) return {};
    classes.push_back(name.get<std::string>());
  }
  return classes;
}

std::string arrow_message(const char* what) {
  std::string text;
  std::string line;
  for (const char* c = what;; ++c) {
    if (*c != '\n' && *c != '\0') {
      line += *c;
      continue;
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty()) text += (text.empty() ? "" : "; ") + line;
    line.clear();
    if (*c == '\0') return text;
  }
}

Result<std::string> table_file_at_path(const std::string& folder, const std::string& path,
                                       uint64_t max_bytes) {
  if (path.find("://") != std::string::npos)
    return unsupported("a URL, not a local file: not supported");
  if (path.empty()) return invalid_argument("an empty path");
  if (path[0] == '/') return read_file(path, max_bytes);
  if (folder.empty())
    return unsupported("relative to a remote Parquet file: not supported (only local files' are)");
  return read_file(folder + "/" + path, max_bytes);
}

std::string image_folder_of(const std::string& name) {
  if (name.find("://") != std::string::npos) return "";
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(name, error);
  std::string folder = (error ? std::filesystem::path(name) : absolute).parent_path().string();
  return folder.empty() ? "." : folder;
}

}  // namespace stoker
