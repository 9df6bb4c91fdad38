#include "stoker/store/import/coco_annotations.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "stoker/store/dataset_summary.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

using Json = nlohmann::json;

// A problem of one part of the file, which the caller prefixes with the file and the part.
struct Bad {
  std::string what;
};

const Json& member(const Json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end()) throw Bad{fmt::format("has no \"{}\"", key)};
  return *found;
}

int64_t whole(const Json& value, const char* key) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::floor(d) == d && std::abs(d) < 9e15) return static_cast<int64_t>(d);
  }
  throw Bad{
      fmt::format("\"{}\" is {}, not a whole number", key, printable(value.dump()).substr(0, 40))};
}

double number(const Json& value, const char* key) {
  if (!value.is_number())
    throw Bad{
        fmt::format("\"{}\" is {}, not a number", key, printable(value.dump()).substr(0, 40))};
  const double d = value.get<double>();
  if (!std::isfinite(d)) throw Bad{fmt::format("\"{}\" is not a finite number", key)};
  return d;
}

std::string text(const Json& value, const char* key) {
  if (!value.is_string()) throw Bad{fmt::format("\"{}\" is not a string", key)};
  return value.get<std::string>();
}

// A file name inside the images' directory: relative, no "..", no NUL.
std::string relative_name(const Json& value) {
  std::string name = text(value, "file_name");
  bool escapes = name.empty() || name.front() == '/' || name.find('\0') != std::string::npos;
  for (size_t begin = 0; !escapes && begin <= name.size();) {
    const size_t end = std::min(name.find('/', begin), name.size());
    escapes = name.compare(begin, end - begin, "..") == 0 && end - begin == 2;
    begin = end + 1;
  }
  if (escapes)
    throw Bad{
        fmt::format("file_name '{}' is not a path inside the images' directory", printable(name))};
  return name;
}

CocoImage read_image(const Json& json) {
  if (!json.is_object()) throw Bad{"is not an object"};
  CocoImage image;
  image.id = whole(member(json, "id"), "id");
  image.file_name = relative_name(member(json, "file_name"));
  image.width = whole(member(json, "width"), "width");
  image.height = whole(member(json, "height"), "height");
  if (image.width < 1 || image.height < 1 || image.height > kMaxMaskPixels / image.width ||
      image.width * image.height >= kMaxMaskPixels)
    throw Bad{fmt::format("size {}x{} is not at least 1x1 and under {} pixels", image.width,
                          image.height, kMaxMaskPixels)};
  return image;
}

void read_segmentation(const Json& json, const CocoImage& image, CocoObject& object) {
  if (json.is_array()) {
    for (const Json& polygon : json) {
      if (!polygon.is_array()) throw Bad{"a polygon of \"segmentation\" is not a list of numbers"};
      std::vector<double> xy;
      for (const Json& c : polygon) xy.push_back(number(c, "segmentation"));
      object.polygons.push_back(std::move(xy));
    }
    return;
  }
  if (!json.is_object()) throw Bad{"\"segmentation\" is neither polygons nor run-length counts"};
  const Json& size = member(json, "size");
  if (!size.is_array() || size.size() != 2 || whole(size[0], "size") != image.height ||
      whole(size[1], "size") != image.width)
    throw Bad{fmt::format("segmentation size {} is not the image's [{}, {}]",
                          printable(size.dump()).substr(0, 40), image.height, image.width)};
  const Json& counts = member(json, "counts");
  object.has_counts = true;
  if (counts.is_string()) {
    object.counts_text = counts.get<std::string>();
  } else if (counts.is_array()) {
    for (const Json& c : counts) object.counts.push_back(whole(c, "counts"));
  } else {
    throw Bad{"\"counts\" is neither a list nor a string"};
  }
}

CocoObject read_object(const Json& json, const CocoImage& image) {
  CocoObject object;
  const Json& box = member(json, "bbox");
  if (!box.is_array() || box.size() != 4)
    throw Bad{"\"bbox\" is not 4 numbers [x, y, width, height]"};
  for (int i = 0; i < 4; ++i) object.bbox[i] = number(box[i], "bbox");
  const auto [x, y, w, h] = object.bbox;
  if (w < 0 || h < 0 || x < -kCocoBoxSlack || y < -kCocoBoxSlack ||
      x + w > static_cast<double>(image.width) + kCocoBoxSlack ||
      y + h > static_cast<double>(image.height) + kCocoBoxSlack)
    throw Bad{fmt::format("box [{}, {}, {}, {}] is not inside the {}x{} image", x, y, w, h,
                          image.width, image.height)};
  const auto area = json.find("area");
  object.area = area == json.end() ? w * h : number(*area, "area");
  if (object.area < 0) throw Bad{fmt::format("area {} is negative", object.area)};
  const auto crowd = json.find("iscrowd");
  const int64_t crowd_flag = crowd == json.end() ? 0 : whole(*crowd, "iscrowd");
  if (crowd_flag != 0 && crowd_flag != 1)
    throw Bad{fmt::format("iscrowd {} is not 0 or 1", crowd_flag)};
  object.crowd = crowd_flag == 1;
  if (const auto segmentation = json.find("segmentation");
      segmentation != json.end() && !segmentation->is_null())
    read_segmentation(*segmentation, image, object);
  return object;
}

const Json& array_of(const Json& root, const char* key) {
  const Json& list = member(root, key);
  if (!list.is_array()) throw Bad{fmt::format("\"{}\" is not a list", key)};
  return list;
}

}  // namespace

Result<CocoAnnotations> parse_coco_annotations(std::string_view json_text,
                                               const std::string& origin) {
  const Json root =
      Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return invalid_argument(origin + ": not JSON");
  if (!root.is_object())
    return invalid_argument(origin + ": not a JSON object of images, annotations and categories");
  CocoAnnotations out;
  std::string where;  // the part being read, for the error
  try {
    std::unordered_set<int64_t> category_ids;
    for (const Json& category : array_of(root, "categories")) {
      where = "a category";
      if (!category.is_object()) throw Bad{"is not an object"};
      CocoCategory c{whole(member(category, "id"), "id"), text(member(category, "name"), "name")};
      where = fmt::format("category {}", c.id);
      if (c.id < 0) throw Bad{"id is negative"};
      if (c.id >= kMaxClasses)
        throw Bad{fmt::format("id is over {}: class names are indexed by id, at most {} of them",
                              kMaxClasses - 1, kMaxClasses)};
      if (!category_ids.insert(c.id).second) throw Bad{"is listed twice"};
      out.categories.push_back(std::move(c));
    }
    std::unordered_map<int64_t, size_t> image_at;
    for (const Json& image : array_of(root, "images")) {
      where = "an image";
      if (image.is_object() && image.contains("id"))
        where = fmt::format("image {}", printable(image["id"].dump()).substr(0, 40));
      CocoImage read = read_image(image);
      if (!image_at.emplace(read.id, out.images.size()).second) throw Bad{"is listed twice"};
      out.images.push_back(std::move(read));
    }
    where.clear();
    if (out.images.empty()) throw Bad{"\"images\" is empty: no records to convert"};
    std::unordered_set<int64_t> annotation_ids;
    const auto annotations = root.find("annotations");  // none in a test split's image info
    if (annotations != root.end()) {
      if (!annotations->is_array()) throw Bad{"\"annotations\" is not a list"};
      for (const Json& annotation : *annotations) {
        where = "an annotation";
        if (!annotation.is_object()) throw Bad{"is not an object"};
        const int64_t id = whole(member(annotation, "id"), "id");
        where = fmt::format("annotation {}", id);
        const int64_t image_id = whole(member(annotation, "image_id"), "image_id");
        const auto image = image_at.find(image_id);
        if (image == image_at.end()) throw Bad{fmt::format("image {} is not in images", image_id)};
        where = fmt::format("annotation {} (image {})", id, image_id);
        if (!annotation_ids.insert(id).second) throw Bad{"is listed twice"};
        CocoImage& owner = out.images[image->second];
        CocoObject object = read_object(annotation, owner);
        object.id = id;
        object.category_id = whole(member(annotation, "category_id"), "category_id");
        if (category_ids.count(object.category_id) == 0)
          throw Bad{fmt::format("category {} is not in categories", object.category_id)};
        owner.objects.push_back(std::move(object));
      }
    }
  } catch (const Bad& bad) {
    return invalid_argument(where.empty() ? fmt::format("{}: {}", origin, bad.what)
                                          : fmt::format("{}: {}: {}", origin, where, bad.what));
  }
  std::sort(out.images.begin(), out.images.end(),
            [](const CocoImage& a, const CocoImage& b) { return a.id < b.id; });
  return out;
}

Result<CocoAnnotations> read_coco_annotations(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(const std::string json, read_file(path, kMaxCocoJsonBytes));
  return parse_coco_annotations(json, path);
}

Status paint_coco_object(const CocoObject& object, const CocoImage& image, uint8_t* pixels) {
  const auto bad = [&](const Status& status) {
    return invalid_argument(fmt::format("annotation {} (image {}): segmentation: {}", object.id,
                                        image.id, status.message()));
  };
  if (object.has_counts) {
    Result<RunLengthMask> mask =
        object.counts.empty() ? mask_from_string(object.counts_text, image.height, image.width)
                              : mask_from_counts(object.counts, image.height, image.width);
    if (!mask.is_ok()) return bad(mask.status());
    paint_mask(mask.value(), pixels);
    return Status::ok();
  }
  for (const std::vector<double>& polygon : object.polygons) {
    Result<RunLengthMask> mask = mask_from_polygon(polygon, image.height, image.width);
    if (!mask.is_ok()) return bad(mask.status());
    paint_mask(mask.value(), pixels);
  }
  return Status::ok();
}

}  // namespace stoker
