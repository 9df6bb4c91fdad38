// libFuzzer target for Pascal VOC's annotation files (store/import/voc_annotation.h): untrusted
// XML a user converts. For each input, parse_voc_annotation either fails with one line
// (kInvalidArgument) starting with the file's name, or gives a size of at least 1x1 and objects
// each of a VOC class (its label 1 + the class's index) with a box inside the image. Any
// violation is a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stoker/store/import/voc_annotation.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const std::string xml(reinterpret_cast<const char*>(data), size);
  const Result<VocAnnotation> parsed = parse_voc_annotation(xml, "fuzz.xml");
  if (!parsed.is_ok()) {
    check(parsed.status().code() == StatusCode::kInvalidArgument ||
          parsed.status().code() == StatusCode::kInternal);
    check(parsed.status().message().rfind("fuzz.xml: ", 0) == 0 ||
          parsed.status().code() == StatusCode::kInternal);
    check(parsed.status().message().find('\n') == std::string::npos);
    return 0;
  }
  const VocAnnotation& a = parsed.value();
  check(a.width >= 1 && a.height >= 1);
  for (const VocObject& object : a.objects) {
    check(object.label >= 1 && object.label <= 20);
    check(object.name == kVocClasses[object.label - 1]);
    const auto [x0, y0, x1, y1] = object.box;
    check(0 <= x0 && x0 <= x1 && x1 <= a.width && 0 <= y0 && y0 <= y1 && y1 <= a.height);
  }
  return 0;
}
