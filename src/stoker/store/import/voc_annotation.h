#pragma once
// One Pascal VOC annotation file (`Annotations/NAME.xml`) read and checked, with libexpat: the
// image's file name and size, and its objects in the file's order — class name, difficult flag
// and box (`bndbox` xmin, ymin, xmax, ymax, pixels as written) — the values torchvision's
// VOCDetection parses out of it (`parse_voc_xml`). An object's `part`s (person layout) and
// every other element are ignored. A DTD (and so any entity) is refused: annotation files have
// none. Every problem is one kInvalidArgument line naming the file and the object. Pure:
// thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// Largest annotation file read (VOC's are about 1 KB).
inline constexpr uint64_t kMaxVocXmlBytes = uint64_t{1} << 20;
// Deepest element nesting read.
inline constexpr int kMaxVocXmlDepth = 32;

// VOC's 20 classes, in torchvision's (and the devkit's) order; a label is 1 + the index.
inline constexpr const char* kVocClasses[] = {
    "aeroplane", "bicycle",     "bird",  "boat",        "bottle", "bus",      "car",
    "cat",       "chair",       "cow",   "diningtable", "dog",    "horse",    "motorbike",
    "person",    "pottedplant", "sheep", "sofa",        "train",  "tvmonitor"};

struct VocObject {
  std::string name;   // one of kVocClasses
  int64_t label = 0;  // 1 + its index in kVocClasses
  bool difficult = false;
  std::array<double, 4> box{};  // xmin, ymin, xmax, ymax
};

struct VocAnnotation {
  std::string filename;
  int64_t width = 0;
  int64_t height = 0;
  std::vector<VocObject> objects;
};

// Parses and checks `xml`: `origin` (the file) starts every error. A box must have xmin <=
// xmax and ymin <= ymax and lie within [0, width] x [0, height] (VOC counts pixels from 1, so
// its boxes reach width and height).
Result<VocAnnotation> parse_voc_annotation(std::string_view xml, const std::string& origin);

}  // namespace stoker
