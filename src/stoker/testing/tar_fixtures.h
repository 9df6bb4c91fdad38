#pragma once
// Tars written by Python's tarfile (STOKER_PYTHON), the reference of the tar parser and the
// WebDataset source's tests, tarfile's own listing of a tar, and .npy files written by numpy.
// Test-only.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "stoker/testing/temp_dir.h"

namespace stoker::tar_fixtures {

struct Member {
  std::string name;
  std::string bytes;
  std::string type = "file";  // "file", "dir" or "symlink" (to `bytes`)
};

// Writes `members` into a tar at `path` in tarfile's `format` ("ustar", "gnu" or "pax").
// Returns tarfile's listing of it: [{"name", "offset_data", "size"}] of its regular files.
inline nlohmann::json write_tar(const std::string& path, const std::vector<Member>& members,
                                const std::string& format = "pax") {
  testing::TempDir dir;
  nlohmann::json spec = nlohmann::json::array();
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string file = dir / std::to_string(i);
    std::ofstream(file, std::ios::binary) << members[i].bytes;
    spec.push_back({{"name", members[i].name}, {"file", file}, {"type", members[i].type}});
  }
  std::ofstream(dir / "spec.json") << spec.dump();
  std::ofstream(dir / "write.py") << R"(
import io, json, sys, tarfile
spec = json.load(open(sys.argv[1] + "/spec.json"))
formats = {"ustar": tarfile.USTAR_FORMAT, "gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT}
with tarfile.open(sys.argv[2], "w", format=formats[sys.argv[3]]) as tar:
    for m in spec:
        data = open(m["file"], "rb").read()
        info = tarfile.TarInfo(m["name"])
        info.mtime = 1700000000
        if m["type"] == "dir":
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        elif m["type"] == "symlink":
            info.type = tarfile.SYMTYPE
            info.linkname = data.decode()
            tar.addfile(info)
        else:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
with tarfile.open(sys.argv[2]) as tar:
    out = [{"name": m.name, "offset_data": m.offset_data, "size": m.size}
           for m in tar.getmembers() if m.isreg()]
json.dump(out, open(sys.argv[1] + "/listing.json", "w"))
)";
  const std::string command = std::string(STOKER_PYTHON) + " " + (dir / "write.py") + " " +
                              dir.path() + " '" + path + "' " + format;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "listing.json");
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The .npy file numpy.save writes of the array the Python expression `array` makes (numpy is
// `np`).
inline std::string npy_file(const std::string& array) {
  testing::TempDir dir;
  std::ofstream(dir / "save.py") << "import sys\nimport numpy as np\nnp.save(sys.argv[1], " << array
                                 << ")\n";
  const std::string command =
      std::string(STOKER_PYTHON) + " " + (dir / "save.py") + " " + (dir / "a.npy");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return file_bytes(dir / "a.npy");
}

}  // namespace stoker::tar_fixtures
