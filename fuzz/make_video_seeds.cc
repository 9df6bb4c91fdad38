// Writes the video fuzz target's seed corpus into a directory: the small videos of
// bench/make_video_set.py (every codec and container of the test set: H.264 in mp4 and mkv,
// VP9 in webm, MPEG-4 part 2 in avi, GOPs of 1 to 250, B-frames, odd sizes, a variable frame
// rate, a rotation), made by Debian's ffmpeg run through STOKER_PYTHON.
#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: video_fuzz_seeds DIR\n";
    return 2;
  }
  const std::string command = std::string(STOKER_PYTHON) + " " + STOKER_SOURCE_DIR +
                              "/bench/make_video_set.py " + argv[1] + " > /dev/null";
  return std::system(command.c_str()) == 0 ? 0 : 1;
}
