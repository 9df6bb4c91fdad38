#pragma once
// The video suites' files: bench/make_video_set.py's videos, made by Debian's ffmpeg (run
// through STOKER_PYTHON) once per build (made_once.h) and read, never written, by the tests.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/made_once.h"
#include "stoker/util/byte_span.h"
#include "stoker/video/saved_video_index.h"

namespace stoker::video::testing {

// The folder holding every video of the set; fails the calling test when it cannot be made.
inline const std::string& video_set() {
  static const std::string folder = [] {
    const std::string script =
        std::string(stoker::testing::kSourceDir) + "/bench/make_video_set.py";
    return stoker::testing::made_once("video_set", script, [&](const std::string& out) {
      const std::string command =
          std::string(STOKER_PYTHON) + " " + script + " " + out + " > /dev/null";
      return std::system(command.c_str()) == 0;
    });
  }();
  EXPECT_FALSE(folder.empty()) << "bench/make_video_set.py failed";
  return folder;
}

inline std::string video_path(const std::string& name) { return video_set() + "/" + name; }

// The bytes of the set's video `name`, as a record holds them.
inline std::string video_bytes(const std::string& name) {
  std::ifstream in(video_path(name), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline ByteSpan span_of(const std::string& bytes) {
  return ByteSpan{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

// What an opening of `bytes` finds: its stream and index, as the caches keep them.
inline KnownVideo known_video_of(const std::string& bytes) {
  VideoFile file = open_video_bytes("", span_of(bytes)).value_or_throw();
  KnownVideo known;
  known.stream = stream_info_of(file).value_or_throw();
  known.index = read_video_index(file).value_or_throw();
  return known;
}

}  // namespace stoker::video::testing
