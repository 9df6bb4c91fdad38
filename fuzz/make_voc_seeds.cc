// Writes the VOC fuzz target's seed corpus into a directory: small annotation files with
// objects, parts, fractional boxes and none.
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: voc_xml_fuzz_seeds DIR\n";
    return 2;
  }
  const char* const files[] = {
      R"(<annotation><folder>VOC2012</folder><filename>2007_000027.jpg</filename>
<size><width>486</width><height>500</height><depth>3</depth></size><segmented>0</segmented>
<object><name>person</name><pose>Unspecified</pose><truncated>0</truncated>
<difficult>0</difficult><bndbox><xmin>174</xmin><ymin>101</ymin><xmax>349</xmax>
<ymax>351</ymax></bndbox><part><name>head</name><bndbox><xmin>169</xmin><ymin>104</ymin>
<xmax>209</xmax><ymax>146</ymax></bndbox></part></object></annotation>)",
      R"(<?xml version="1.0"?><annotation><size><width>8</width><height>6</height></size>
<object><name>dog</name><difficult>1</difficult><bndbox><xmin>0.5</xmin><ymin>1</ymin>
<xmax>7.5</xmax><ymax>6</ymax></bndbox></object><object><name>tvmonitor</name><bndbox>
<xmin>1</xmin><ymin>1</ymin><xmax>1</xmax><ymax>1</ymax></bndbox></object></annotation>)",
      R"(<annotation><filename>x.jpg</filename><size><width>1</width><height>1</height>
</size></annotation>)",
  };
  int k = 0;
  for (const char* file : files)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++)) << file;
  return 0;
}
