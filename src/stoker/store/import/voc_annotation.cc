#include "stoker/store/import/voc_annotation.h"

#include <expat.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <memory>

#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// The parse's state, shared with expat's callbacks.
struct VocReader {
  XML_Parser parser = nullptr;
  std::vector<std::string> path;  // the open elements' names
  std::string text;               // of the innermost open element
  VocAnnotation out;
  bool has_width = false, has_height = false;
  std::vector<int> box_seen;  // per object: bndbox's four values seen, as bits
  std::vector<bool> has_name;
  std::string error;  // the first problem; stops the parser

  void fail(std::string why) {
    if (error.empty()) error = std::move(why);
    XML_StopParser(parser, XML_FALSE);
  }
  // "object K" for problems inside the K-th object (from 1).
  std::string where() const { return fmt::format("object {}", out.objects.size()); }
  bool at(std::initializer_list<const char*> names) const {
    if (path.size() != names.size()) return false;
    size_t i = 0;
    for (const char* name : names) {
      if (path[i++] != name) return false;
    }
    return true;
  }
};

// A decimal number, as Python's float() reads it (no hexadecimal, which strtod takes).
double voc_number(VocReader& r, const std::string& text, const std::string& what) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  const size_t end = text.find_last_not_of(" \t\r\n");
  const std::string trimmed = begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
  char* stop = nullptr;
  const double value = std::strtod(trimmed.c_str(), &stop);
  if (trimmed.empty() || trimmed.find_first_not_of("0123456789+-.eE") != std::string::npos ||
      *stop != '\0' || !std::isfinite(value)) {
    r.fail(fmt::format("{} '{}' is not a number", what, printable(trimmed).substr(0, 40)));
    return 0;
  }
  return value;
}

void voc_on_start(void* data, const XML_Char* name, const XML_Char**) {
  auto& r = *static_cast<VocReader*>(data);
  r.path.emplace_back(name);
  r.text.clear();
  if (r.path.size() > static_cast<size_t>(kMaxVocXmlDepth))
    return r.fail(fmt::format("elements nested deeper than {}", kMaxVocXmlDepth));
  if (r.path.size() == 1 && r.path[0] != "annotation")
    return r.fail(fmt::format("the root element is <{}>, not <annotation>",
                              printable(r.path[0]).substr(0, 40)));
  if (r.at({"annotation", "object"})) {
    r.out.objects.emplace_back();
    r.box_seen.push_back(0);
    r.has_name.push_back(false);
  }
}

void voc_on_text(void* data, const XML_Char* text, int length) {
  auto& r = *static_cast<VocReader*>(data);
  if (r.text.size() + static_cast<size_t>(length) > 4096)
    return r.fail("an element's text is over 4 KB");
  r.text.append(text, static_cast<size_t>(length));
}

void voc_on_end(void* data, const XML_Char*) {
  auto& r = *static_cast<VocReader*>(data);
  if (r.at({"annotation", "filename"})) {
    r.out.filename = r.text;
  } else if (r.at({"annotation", "size", "width"}) || r.at({"annotation", "size", "height"})) {
    const bool width = r.path.back() == "width";
    const double v = voc_number(r, r.text, width ? "width" : "height");
    if (v < 1 || v > (1 << 20) || std::floor(v) != v)
      return r.fail(
          fmt::format("{} {} is not a whole number from 1", width ? "width" : "height", v));
    (width ? r.out.width : r.out.height) = static_cast<int64_t>(v);
    (width ? r.has_width : r.has_height) = true;
  } else if (r.at({"annotation", "object", "name"})) {
    VocObject& object = r.out.objects.back();
    if (r.has_name.back()) return r.fail(fmt::format("{}: has two <name>s", r.where()));
    object.name = r.text;
    for (size_t i = 0; i < std::size(kVocClasses); ++i) {
      if (object.name == kVocClasses[i]) object.label = static_cast<int64_t>(i) + 1;
    }
    if (object.label == 0)
      return r.fail(fmt::format("{}: class '{}' is not one of VOC's 20", r.where(),
                                printable(object.name).substr(0, 40)));
    r.has_name.back() = true;
  } else if (r.at({"annotation", "object", "difficult"})) {
    const double v = voc_number(r, r.text, r.where() + ": difficult");
    if (v != 0 && v != 1)
      return r.fail(fmt::format("{}: difficult {} is not 0 or 1", r.where(), v));
    r.out.objects.back().difficult = v == 1;
  } else if (r.path.size() == 4 && r.at({"annotation", "object", "bndbox", r.path[3].c_str()})) {
    static constexpr const char* kCorners[] = {"xmin", "ymin", "xmax", "ymax"};
    for (int i = 0; i < 4; ++i) {
      if (r.path[3] != kCorners[i]) continue;
      if (r.box_seen.back() & (1 << i))
        return r.fail(fmt::format("{}: has two <{}>s", r.where(), kCorners[i]));
      r.out.objects.back().box[i] =
          voc_number(r, r.text, fmt::format("{}: {}", r.where(), kCorners[i]));
      r.box_seen.back() |= 1 << i;
    }
  }
  r.path.pop_back();
  r.text.clear();
}

void voc_on_doctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  static_cast<VocReader*>(data)->fail("has a DTD, which annotations do not");
}

struct VocParserFree {
  void operator()(XML_Parser p) const { XML_ParserFree(p); }
};

}  // namespace

Result<VocAnnotation> parse_voc_annotation(std::string_view xml, const std::string& origin) {
  if (xml.size() > kMaxVocXmlBytes)
    return invalid_argument(fmt::format("{}: {} bytes, over the {} an annotation may have",
                                        printable(origin), xml.size(), kMaxVocXmlBytes));
  const std::unique_ptr<std::remove_pointer_t<XML_Parser>, VocParserFree> parser(
      XML_ParserCreate(nullptr));
  if (!parser) return Status(StatusCode::kInternal, "expat: out of memory");
  VocReader r;
  r.parser = parser.get();
  XML_SetUserData(parser.get(), &r);
  XML_SetElementHandler(parser.get(), voc_on_start, voc_on_end);
  XML_SetCharacterDataHandler(parser.get(), voc_on_text);
  XML_SetStartDoctypeDeclHandler(parser.get(), voc_on_doctype);
  const XML_Status status =
      XML_Parse(parser.get(), xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  const auto bad = [&](const std::string& why) {
    return invalid_argument(fmt::format("{}: {}", printable(origin), why));
  };
  if (!r.error.empty()) return bad(r.error);
  if (status != XML_STATUS_OK)
    return bad(fmt::format("not XML: {} at line {}",
                           XML_ErrorString(XML_GetErrorCode(parser.get())),
                           XML_GetCurrentLineNumber(parser.get())));
  if (!r.has_width || !r.has_height) return bad("no <size> with <width> and <height>");
  for (size_t k = 0; k < r.out.objects.size(); ++k) {
    const VocObject& object = r.out.objects[k];
    if (!r.has_name[k]) return bad(fmt::format("object {}: no <name>", k + 1));
    if (r.box_seen[k] != 0xF)
      return bad(fmt::format("object {}: no <bndbox> with xmin, ymin, xmax and ymax", k + 1));
    const auto [x0, y0, x1, y1] = object.box;
    if (x0 > x1 || y0 > y1 || x0 < 0 || y0 < 0 || x1 > static_cast<double>(r.out.width) ||
        y1 > static_cast<double>(r.out.height))
      return bad(fmt::format("object {}: box [{}, {}, {}, {}] is not inside the {}x{} image", k + 1,
                             x0, y0, x1, y1, r.out.width, r.out.height));
  }
  return std::move(r.out);
}

}  // namespace stoker
