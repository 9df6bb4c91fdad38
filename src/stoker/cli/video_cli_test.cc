// The commands on a folder of class folders of videos (a video folder, recognised by `auto`):
// inspect shows each video's facts, verify indexes and decodes each and names the bad ones one
// line each, bench loader and doctor say what its clips cost in decoded frames, train learns its
// classes with video_cnn and refuses what does not fit clips in one line. Built only with video.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/cli_run.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/train_outputs.h"
#include "stoker/testing/video_set.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::log_records;
using testing::run;
using testing::RunResult;

class VideoCliTest : public ::testing::Test {
 protected:
  // root/CLASS/NAME holding `bytes`.
  void put(const std::string& root, const std::string& name, const std::string& bytes) {
    fs::create_directories(fs::path(root + "/" + name).parent_path());
    throw_if_error(write_file_atomically(root + "/" + name, bytes));
  }
  // dir/videos: pan/{a.mp4: 75 frames, 7 keyframes; b.mp4: 50, all keyframes}, zoom/c.avi
  // (MPEG-4 part 2, one keyframe).
  std::string good_folder() {
    const std::string root = dir_.path() + "/videos";
    put(root, "pan/a.mp4", video::testing::video_bytes("h264_gop12_bframes.mp4"));
    put(root, "pan/b.mp4", video::testing::video_bytes("h264_gop1.mp4"));
    put(root, "zoom/c.avi", video::testing::video_bytes("mpeg4_gop250_no_bframes.avi"));
    return root;
  }
  // good_folder with four bad videos: bytes that are no video, an MP4 cut short (its index,
  // at the end, gone), Matroska cut short (its header declaring 4 s), and an MP4 whose middle is
  // overwritten (past its keyframes' packets).
  std::string bad_folder() {
    const std::string root = good_folder();
    put(root, "pan/garbage.mp4", "not a video");
    put(root, "zoom/truncated.mp4",
        video::testing::video_bytes("h264_gop12_no_bframes.mp4").substr(0, 30000));
    put(root, "zoom/cut.mp4",
        video::testing::video_bytes("h264_gop250_bframes.mkv").substr(0, 8000));
    std::string damaged = video::testing::video_bytes("h264_gop12_bframes.mp4");
    for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 3000; ++i)
      damaged[i] = static_cast<char>((i * 131 + 7) & 255);
    put(root, "pan/damaged.mp4", damaged);
    return root;
  }
  // Every file under `root` with its size: what a run may not change.
  std::vector<std::string> files(const std::string& root) {
    std::vector<std::string> all;
    for (const auto& entry : fs::recursive_directory_iterator(root))
      all.push_back(entry.path().string() +
                    (entry.is_regular_file() ? " " + std::to_string(entry.file_size()) : ""));
    std::sort(all.begin(), all.end());
    return all;
  }
  RunResult stoker(const std::string& args) {
    return run(args + " --cache-dir " + dir_.path() + "/cache", dir_);
  }

  testing::TempDir dir_;
};

TEST_F(VideoCliTest, InspectShowsEachVideosFacts) {
  const std::string root = bad_folder();
  const RunResult json = stoker("inspect --json --videos 0 " + root);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("class_names"), (std::vector<std::string>{"pan", "zoom"}));
  const nlohmann::json& videos = j.at("videos");
  ASSERT_EQ(videos.size(), 7u) << videos.dump();
  // pan/a.mp4, pan/b.mp4, pan/damaged.mp4, pan/garbage.mp4, zoom/c.avi, zoom/cut.mp4, ...
  const nlohmann::json& a = videos[0];
  EXPECT_EQ(a.at("name"), "pan/a.mp4");
  EXPECT_EQ(a.at("class"), "pan");
  EXPECT_EQ(a.at("codec"), "h264");
  EXPECT_EQ(a.at("frames"), 75);
  EXPECT_EQ(a.at("keyframes"), 7);
  EXPECT_EQ(a.at("width"), 160);
  EXPECT_EQ(a.at("height"), 120);
  EXPECT_DOUBLE_EQ(a.at("fps").get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(a.at("seconds").get<double>(), 3.0);
  EXPECT_EQ(videos[1].at("keyframes"), 50);
  EXPECT_EQ(videos[4].at("name"), "zoom/c.avi");
  EXPECT_EQ(videos[4].at("class"), "zoom");
  EXPECT_EQ(videos[4].at("codec"), "mpeg4");
  EXPECT_EQ(videos[4].at("keyframes"), 1);
  // A bad video is its one-line error, the others still shown.
  EXPECT_EQ(videos[3].at("name"), "pan/garbage.mp4");
  EXPECT_NE(videos[3].at("error").get<std::string>().find("not a readable video container"),
            std::string::npos);
  EXPECT_NE(videos[5].at("error").get<std::string>().find("cut short"), std::string::npos);
  EXPECT_NE(videos[6].at("error").get<std::string>().find("not a readable video container"),
            std::string::npos);

  const RunResult text = stoker("inspect --videos 2 " + root);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("videos    2 of 7 (--videos N shows more, 0 all)\n"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("75 frames  25.00 fps   160x120 h264      3.00 s    7 keyframes  "
                          "pan/a.mp4\n"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("garbage"), std::string::npos) << text.out;
}

TEST_F(VideoCliTest, VerifyDecodesEveryVideoAndNamesEachBadOneInALine) {
  const std::string good = good_folder();
  const RunResult passed = stoker("verify " + good);
  ASSERT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_EQ(passed.out, good +
                            ": all 3 records in 3 shards verified (each video indexed and its "
                            "keyframes decoded)\n");

  const std::string root = bad_folder();
  const std::vector<std::string> before = files(root);
  const auto lines = [](const std::string& err) {
    std::vector<std::string> out;
    for (size_t at = 0, end; (end = err.find('\n', at)) != std::string::npos; at = end + 1)
      out.push_back(err.substr(at, end - at));
    return out;
  };
  // Keyframes: the files that do not open, and the one cut short; the damage past the keyframes
  // needs every frame decoded.
  const RunResult keyframes = stoker("verify " + root);
  EXPECT_EQ(keyframes.exit_code, 1);
  std::vector<std::string> bad = lines(keyframes.err);
  ASSERT_EQ(bad.size(), 4u) << keyframes.err;
  EXPECT_EQ(bad[0].rfind(root + "/pan/garbage.mp4: the video: not a readable video container", 0),
            0u);
  EXPECT_EQ(bad[1], root +
                        "/zoom/cut.mp4: the video: its frames end at 1.64 s of the 4.00 s its "
                        "container declares (the file is cut short) (dataset record 5)");
  EXPECT_EQ(bad[2].rfind(root + "/zoom/truncated.mp4: the video: not a readable", 0), 0u);
  EXPECT_EQ(bad[3], "stoker: " + root + ": 3 of 7 records failed verification");

  const RunResult all = stoker("verify --decode all " + root);
  EXPECT_EQ(all.exit_code, 1);
  bad = lines(all.err);
  ASSERT_EQ(bad.size(), 5u) << all.err;
  EXPECT_EQ(bad[0].rfind(root + "/pan/damaged.mp4: the video: frame 36: ", 0), 0u) << bad[0];
  EXPECT_NE(bad[0].find("(dataset record 2)"), std::string::npos) << bad[0];
  EXPECT_EQ(bad[4], "stoker: " + root + ": 4 of 7 records failed verification");

  // The index alone: the damaged frames go unseen.
  EXPECT_EQ(lines(stoker("verify --decode none " + root).err).size(), 4u);
  EXPECT_EQ(files(root), before);  // nothing written in the folder
  expect_one_line_error(stoker("verify --decode some " + root), "--decode");
}

// A video of one 5800x5800 frame, made by Debian's ffmpeg (a second): above DecodeClip's
// default max_pixels (2^25, 5792.6 squared), which the loader refuses; verify reports it in one
// line naming its file, the others passing, whatever it decodes.
TEST_F(VideoCliTest, VerifyRefusesFramesAboveWhatDecodeClipReads) {
  const std::string root = good_folder();
  const std::string command =
      "ffmpeg -nostdin -v error -f lavfi -i color=c=red:size=5800x5800:rate=1 -frames:v 1 "
      "-c:v libx264 -preset ultrafast " +
      root + "/zoom/huge.mp4";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  for (const std::string decode : {"none", "keyframes"}) {
    const RunResult verified = stoker("verify --decode " + decode + " " + root);
    EXPECT_EQ(verified.exit_code, 1);
    EXPECT_EQ(verified.err, root +
                                "/zoom/huge.mp4: the video: its 5800x5800 frames are above "
                                "max_pixels 33554432 (dataset record 3)\n"
                                "stoker: " +
                                root + ": 1 of 4 records failed verification\n");
  }
}

TEST_F(VideoCliTest, BenchLoaderCountsTheFramesDecodedPerFrameDelivered) {
  const std::string root = good_folder();
  const RunResult r =
      stoker("bench loader --json --epochs 1 --min-seconds 0 --batch 3 --workers 0 --data " + root +
             " --field video=decode_clip:num_frames_per_clip=4,resize=[32],crop=[32]");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json video = nlohmann::json::parse(r.out).at("video");
  EXPECT_EQ(video.at("frames_delivered"), 3 * 4);
  // At least the frames delivered; from keyframes before them, more.
  EXPECT_GE(video.at("frames_decoded").get<int64_t>(), 3 * 4);
  EXPECT_DOUBLE_EQ(video.at("decoded_per_delivered").get<double>(),
                   video.at("frames_decoded").get<double>() / 12);
}

// video_cnn trained on clips of 4 frames at 32 px, the whole folder per step with a fixed seed:
// its loss falls (the last five steps' mean below the first five's), and the run records the
// clips' shape.
TEST_F(VideoCliTest, TrainLearnsTheClassesOfAVideoFolderWithVideoCnn) {
  const std::string root = good_folder();
  const RunResult r = stoker("train --data " + root +
                             " --model video_cnn --frames 4 --image-size 32 --batch 3 --epochs 30 "
                             "--seed 0 --workers 1 --log-every 1 --log " +
                             dir_.path() + "/log.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trained video_cnn: 30 epochs"), std::string::npos) << r.out;
  const std::vector<nlohmann::json> steps = log_records(dir_.path() + "/log.jsonl", "step");
  ASSERT_EQ(steps.size(), 30u);
  const auto mean_loss = [&](size_t from) {
    double sum = 0;
    for (size_t i = from; i < from + 5; ++i) sum += steps[i]["loss"].get<double>();
    return sum / 5;
  };
  EXPECT_LT(mean_loss(25), 0.8 * mean_loss(0));
  const nlohmann::json run = log_records(dir_.path() + "/log.jsonl", "run").at(0);
  EXPECT_EQ(run["data"]["input"], nlohmann::json({3, 4, 32, 32}));
}

// train keeps its videos' indexes in its cache folder (--cache-dir; the Python loader's, by the
// same rule: loader_cache_dir), one file a video, so that a later run indexes none (issue 63):
// after one step on the whole folder, video-indexes/ holds the three videos' files, and a second
// run (another process: nothing in memory) reads them and builds none (an index built again is
// written anew, renamed into place over the old: another inode).
TEST_F(VideoCliTest, TrainKeepsItsVideosIndexesInTheCacheFolderForTheNextRun) {
  const std::string root = good_folder();
  const fs::path folder = fs::path(dir_.path()) / "cache" / kVideoIndexFolder;
  const auto saved = [&] {  // each file's inode
    std::map<std::string, uint64_t> inodes;
    if (!fs::exists(folder)) return inodes;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(folder)) {
      struct stat st {};
      if (entry.is_regular_file() && ::stat(entry.path().c_str(), &st) == 0)
        inodes[entry.path().string()] = st.st_ino;
    }
    return inodes;
  };
  const std::string train =
      "train --max-steps 1 --model video_cnn --frames 4 --image-size 32 "
      "--batch 3 --workers 1 --data " +
      root;
  const RunResult first = stoker(train);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::map<std::string, uint64_t> indexes = saved();
  EXPECT_EQ(indexes.size(), 3u);
  for (const auto& [path, inode] : indexes) EXPECT_EQ(fs::path(path).extension(), ".index");
  const RunResult second = stoker(train);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(saved(), indexes);
}

// doctor on videos says what decoding clips from keyframes costs: frames out of the decoder per
// frame delivered, over its loader-alone run, in its text and its JSON (issue 63, point 3).
TEST_F(VideoCliTest, DoctorSaysTheFramesDecodedPerFrameDelivered) {
  const std::string doctor =
      "doctor --model video_cnn --frames 4 --frame-step 8 --image-size 32 --batch 3 --workers 1 "
      "--steps 2 --seconds 0.1 --data " +
      good_folder();
  const RunResult text = stoker(doctor);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("frames decoded"), std::string::npos) << text.out;
  const RunResult json = stoker(doctor + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::string fact = nlohmann::json::parse(json.out).at("facts").at("frames decoded");
  double ratio = 0;
  long long decoded = 0, delivered = 0;
  ASSERT_EQ(std::sscanf(fact.c_str(), "%lf per frame delivered (%lld for %lld", &ratio, &decoded,
                        &delivered),
            3)
      << fact;
  EXPECT_GT(delivered, 0);
  EXPECT_EQ(delivered % 4, 0) << "4 frames a clip";
  // Clips 8 frames apart in a GOP of 12 and one of 250 decode more than they deliver.
  EXPECT_GT(decoded, delivered);
  EXPECT_NEAR(ratio, static_cast<double>(decoded) / delivered, 0.01);
}

// An image model and options for images are refused in one line naming the data; so are
// --frame-step and --clips-per-video on images, and video_cnn.
TEST_F(VideoCliTest, TrainAndDoctorRefuseWhatDoesNotFitClipsInOneLine) {
  const std::string root = good_folder();
  for (const char* command : {"train --max-steps 1 --batch 1", "doctor --steps 1 --batch 1"})
    expect_one_line_error(stoker(std::string(command) + " --data " + root),
                          "model mlp takes images; the data are clips [3, 16, 224, 224]: use "
                          "--model video_cnn");
  const std::string video = "train --max-steps 1 --batch 1 --model video_cnn --data " + root;
  expect_one_line_error(stoker(video + " --mixup-alpha 0.2"),
                        root + ": a dataset of videos: --mixup-alpha does not apply to its clips");
  // More clips than decode_clip decodes in a sample, named as the command line gives them.
  const testing::RunResult together = stoker(video + " --clips-per-video 300 --clips-together");
  expect_one_line_error(together, "--clips-per-video 300 with --clips-together: at most 256 ");
  EXPECT_EQ(together.err.find("num_clips"), std::string::npos) << together.err;
  EXPECT_EQ(together.exit_code, 2);  // a usage error
  expect_one_line_error(stoker("train --max-steps 1 --clips-per-video 2"),
                        "--clips-per-video, --eval-clips-per-video and --clips-together apply "
                        "to datasets of videos");
  expect_one_line_error(stoker("train --max-steps 1 --model video_cnn"),
                        "model video_cnn takes clips [C, T, H, W]; the data are images");
}

}  // namespace
}  // namespace stoker
