// Writes the saved_video_index fuzz target's seed corpus into a directory: the saved index
// (encode_known_video) of each video of bench/make_video_set.py (every codec and container of
// the test set, GOPs of 1 to 250, B-frames, odd sizes, a variable frame rate, a rotation), made
// by Debian's ffmpeg run through STOKER_PYTHON into a temporary folder and opened as the cache
// opens them, and one of them cut short.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "stoker/video/saved_video_index.h"

namespace {

using namespace stoker;
using namespace stoker::video;

// The saved index of the video in `path`, or "" where it does not open.
std::string saved_index_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  const ByteSpan span{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  Result<VideoFile> file = open_video_bytes("", span);
  if (!file.is_ok()) return "";
  KnownVideo known;
  Result<VideoStreamInfo> stream = stream_info_of(file.value());
  Result<VideoIndex> index = read_video_index(file.value());
  if (!stream.is_ok() || !index.is_ok()) return "";
  known.stream = std::move(stream).value();
  known.index = std::move(index).value();
  return encode_known_video(video_key(span), known);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: saved_video_index_fuzz_seeds DIR\n";
    return 2;
  }
  std::string videos = (std::filesystem::temp_directory_path() / "stoker-videos-XXXXXX").string();
  if (::mkdtemp(videos.data()) == nullptr) return 1;
  const std::string command = std::string(STOKER_PYTHON) + " " + STOKER_SOURCE_DIR +
                              "/bench/make_video_set.py " + videos + " > /dev/null";
  int written = 0;
  std::string last;
  if (std::system(command.c_str()) == 0) {
    std::vector<std::filesystem::path> paths;
    for (const auto& entry : std::filesystem::directory_iterator(videos))
      paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end());
    for (const std::filesystem::path& path : paths) {
      const std::string saved = saved_index_of(path.string());
      if (saved.empty()) continue;
      std::ofstream(std::string(argv[1]) + "/" + path.filename().string() + ".index",
                    std::ios::binary)
          << saved;
      last = saved;
      ++written;
    }
  }
  std::filesystem::remove_all(videos);
  if (written == 0) return 1;
  std::ofstream(std::string(argv[1]) + "/cut.index", std::ios::binary)
      << last.substr(0, last.size() / 2);
  return 0;
}
