// libFuzzer target for COCO's instances JSON (store/import/coco_annotations.h) and the masks
// its segmentations make (coco_mask.h): untrusted files a user converts. For each input:
//   - parse_coco_annotations either fails with one line (kInvalidArgument) starting with the
//     file's name, or gives images sorted by unique id whose objects' boxes lie within the
//     image (to kCocoBoxSlack);
//   - every object of an image of at most 4,096 pixels paints its mask, or fails with one line
//     naming its annotation; a painted pixel is 0 or 1.
// Any violation is a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/import/coco_annotations.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool one_line(const std::string& message) { return message.find('\n') == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const std::string json(reinterpret_cast<const char*>(data), size);
  const Result<CocoAnnotations> parsed = parse_coco_annotations(json, "fuzz.json");
  if (!parsed.is_ok()) {
    check(parsed.status().code() == StatusCode::kInvalidArgument);
    check(parsed.status().message().rfind("fuzz.json: ", 0) == 0);
    check(one_line(parsed.status().message()));
    return 0;
  }
  const std::vector<CocoImage>& images = parsed.value().images;
  for (size_t i = 0; i < images.size(); ++i) {
    const CocoImage& image = images[i];
    check(i == 0 || images[i - 1].id < image.id);
    if (image.width * image.height > 4096) continue;
    std::vector<uint8_t> pixels(image.width * image.height, 0);
    for (const CocoObject& object : image.objects) {
      check(object.bbox[2] >= 0 && object.bbox[3] >= 0 &&
            object.bbox[0] + object.bbox[2] <= image.width + kCocoBoxSlack);
      const Status painted = paint_coco_object(object, image, pixels.data());
      check(painted.is_ok() ||
            (painted.message().rfind("annotation ", 0) == 0 && one_line(painted.message())));
    }
    for (const uint8_t p : pixels) check(p <= 1);
  }
  return 0;
}
