// Writes the tar fuzz target's seed corpus into a directory: small tars (ustar members, a GNU
// long name, a pax path, a directory, a link, a cut member), a saved index of "t.tar", and
// brace patterns.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "stoker/store/import/tar_index.h"

namespace {

// One ustar header and its data, padded to 512-byte blocks.
std::string member(const std::string& name, const std::string& data, char type = '0') {
  std::string header(512, '\0');
  std::memcpy(&header[0], name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(&header[100], 8, "%07o", 0644);
  std::snprintf(&header[124], 12, "%011o", static_cast<unsigned>(data.size()));
  std::snprintf(&header[136], 12, "%011o", 0);
  header[156] = type;
  std::memcpy(&header[257],
              "ustar\0"
              "00",
              8);
  std::memset(&header[148], ' ', 8);
  unsigned sum = 0;
  for (char c : header) sum += static_cast<unsigned char>(c);
  std::snprintf(&header[148], 8, "%06o", sum);
  std::string padded = data;
  padded.resize((data.size() + 511) / 512 * 512, '\0');
  return header + padded;
}

std::string pax(const std::string& key, const std::string& value) {
  std::string record = " " + key + "=" + value + "\n";
  size_t length = record.size() + 1;
  while (std::to_string(length).size() + record.size() != length) ++length;
  return std::to_string(length) + record;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tar_fuzz_seeds DIR\n";
    return 2;
  }
  const std::string end(1024, '\0');
  const std::string simple = member("s/0.jpg", "JPEG") + member("s/0.cls", "3") +
                             member("s/1.jpg", "J2") + member("s/1.cls", "4") + end;
  const std::string long_name = member("././@LongLink", std::string(120, 'n') + ".jpg", 'L') +
                                member("short", "data") + member("d/", "", '5') +
                                member("x.jpg", "", '2') + end;
  const std::string paxed = member("pax", pax("path", "caf\xc3\xa9.jpg") + pax("size", "2"), 'x') +
                            member("cafe.jpg", "AB") + member("__meta__", "m") + end;
  const std::string cut = simple.substr(0, 512 + 2);
  stoker::TarIndex index;
  index.path = "t.tar";
  index.identity = {4096, 1};
  index.listing.members = {{"a.jpg", 512, 10, ""}, {"b", 1536, 0, "a FIFO"}};
  index.listing.damage = "member z: cut short";
  index.checksums = {1, 2};
  index.npy_heads = {"", ""};
  const std::string seeds[] = {simple,
                               long_name,
                               paxed,
                               cut,
                               stoker::encode_tar_index(index),
                               "data-{000000..000999}.tar",
                               "a{b,c{d,e}}\\{x}{1..9..2}{-3..03}"};
  int k = 0;
  for (const std::string& seed : seeds)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++), std::ios::binary) << seed;
  return 0;
}
