// parse_voc_annotation: the values torchvision's VOCDetection parses (parts ignored, boxes as
// written), and every bad file one line naming the file and the object.
#include "stoker/store/import/voc_annotation.h"

#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

constexpr const char* kVocTwoObjects =
    R"(<?xml version="1.0"?>
<annotation><filename>a.jpg</filename><size><width>50</width><height>40</height></size>
  <object><name>person</name><difficult>1</difficult>
    <bndbox><xmin>1</xmin><ymin> 2.5 </ymin><xmax>50</xmax><ymax>40</ymax></bndbox>
    <part><name>head</name><bndbox><xmin>9</xmin><ymin>9</ymin><xmax>9</xmax><ymax>9</ymax>
    </bndbox></part></object>
  <object><name>tvmonitor</name><bndbox><xmin>3</xmin><ymin>4</ymin><xmax>5</xmax>
    <ymax>6</ymax></bndbox></object>
</annotation>)";

TEST(VocAnnotation, ReadsSizeClassesBoxesAndDifficultIgnoringParts) {
  const VocAnnotation a = parse_voc_annotation(kVocTwoObjects, "a.xml").value_or_throw();
  EXPECT_EQ(a.filename, "a.jpg");
  EXPECT_EQ(a.width, 50);
  EXPECT_EQ(a.height, 40);
  ASSERT_EQ(a.objects.size(), 2u);
  EXPECT_EQ(a.objects[0].name, "person");
  EXPECT_EQ(a.objects[0].label, 15);
  EXPECT_TRUE(a.objects[0].difficult);
  EXPECT_EQ(a.objects[0].box, (std::array<double, 4>{1, 2.5, 50, 40}));
  EXPECT_EQ(a.objects[1].label, 20);
  EXPECT_FALSE(a.objects[1].difficult);
  EXPECT_EQ(a.objects[1].box, (std::array<double, 4>{3, 4, 5, 6}));
}

std::string voc_replaced(const std::string& from, const std::string& to) {
  std::string xml = kVocTwoObjects;
  xml.replace(xml.find(from), from.size(), to);
  return xml;
}

TEST(VocAnnotation, BadFilesAreOneLineNamingTheFileAndObject) {
  const std::pair<std::string, std::string> cases[] = {
      {voc_replaced("tvmonitor", "tv"), "a.xml: object 2: class 'tv' is not one of VOC's 20"},
      {voc_replaced("<xmax>5<", "<xmax>2<"),
       "a.xml: object 2: box [3, 4, 2, 6] is not inside the 50x40 image"},
      {voc_replaced("<xmax>50<", "<xmax>51<"),
       "a.xml: object 1: box [1, 2.5, 51, 40] is not inside the 50x40 image"},
      {voc_replaced("<ymax>6</ymax>", ""),
       "a.xml: object 2: no <bndbox> with xmin, ymin, xmax and ymax"},
      {voc_replaced("<difficult>1<", "<difficult>2<"),
       "a.xml: object 1: difficult 2 is not 0 or 1"},
      {voc_replaced("<width>50<", "<width>5x<"), "a.xml: width '5x' is not a number"},
      // strtod's hexadecimal, which Python's float() (what a VOC reader calls) refuses.
      {voc_replaced("<width>50<", "<width>0x32<"), "a.xml: width '0x32' is not a number"},
      {voc_replaced("<xmin>3<", "<xmin>0x3<"), "a.xml: object 2: xmin '0x3' is not a number"},
      {voc_replaced("<ymax>6<", "<ymax>0X6p0<"), "a.xml: object 2: ymax '0X6p0' is not a number"},
      // Found by voc_xml_fuzz: a second name of an unknown class kept the first one's label.
      {voc_replaced("<name>tvmonitor</name>", "<name>tvmonitor</name><name>tv</name>"),
       "a.xml: object 2: has two <name>s"},
      {voc_replaced("<xmin>3</xmin>", "<xmin>3</xmin><xmin>4</xmin>"),
       "a.xml: object 2: has two <xmin>s"},
      {voc_replaced("<width>50</width>", ""), "a.xml: no <size> with <width> and <height>"},
      {voc_replaced("</annotation>", ""), "a.xml: not XML: "},
      {"<root/>", "a.xml: the root element is <root>, not <annotation>"},
      {R"(<!DOCTYPE a [<!ENTITY b "bbbbbbbbbb"><!ENTITY c "&b;&b;&b;&b;">]><annotation>&c;</annotation>)",
       "a.xml: has a DTD, which annotations do not"},
      {"<annotation>" + std::string(40, 'x') + std::string(kMaxVocXmlDepth * 3, ' ') +
           "</annotation>",
       "a.xml: no <size>"},
      {std::string(40, ' '), "a.xml: not XML: "},
  };
  for (const auto& [xml, words] : cases) {
    const Result<VocAnnotation> parsed = parse_voc_annotation(xml, "a.xml");
    ASSERT_FALSE(parsed.is_ok()) << words;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message().rfind(words, 0), 0u) << parsed.status().message();
    EXPECT_EQ(parsed.status().message().find('\n'), std::string::npos);
  }
  std::string deep = "<annotation>";
  for (int i = 0; i < kMaxVocXmlDepth; ++i) deep += "<a>";
  const Result<VocAnnotation> parsed = parse_voc_annotation(deep, "a.xml");
  EXPECT_EQ(parsed.status().message(), "a.xml: elements nested deeper than 32");
}

}  // namespace
}  // namespace stoker
