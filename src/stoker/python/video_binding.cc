#include "stoker/python/video_binding.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "stoker/python/released_gil.h"
#include "stoker/util/status.h"
#include "stoker/video/frame_decoder.h"
#include "stoker/video/video_clips.h"
#include "stoker/video/video_index.h"

namespace stoker::python {
namespace py = pybind11;

namespace {

video::VideoIndex read_index(const std::string& path) {
  Result<video::VideoIndex> index = invalid_argument("unread");
  {
    ReleasedGil no_gil;
    index = video::read_video_index(path);
  }
  throw_if_error(index.status());
  return std::move(index).value();
}

// {"codec", "width", "height", "time_base": (num, den), "rotation" (None or degrees),
// "pts": [...], "keyframes": [frame indices], "begin_seconds", "end_seconds", "average_fps"}:
// the last three as torchcodec's metadata has them.
py::dict video_index(const std::string& path) {
  const video::VideoIndex index = read_index(path);
  py::dict info;
  info["codec"] = index.codec;
  info["width"] = index.width;
  info["height"] = index.height;
  info["time_base"] = py::make_tuple(index.time_base_num, index.time_base_den);
  info["rotation"] = index.rotation ? py::object(py::float_(*index.rotation)) : py::none();
  info["pts"] = index.pts;
  std::vector<int64_t> keyframes;
  for (int64_t i = 0; i < index.frame_count(); ++i)
    if (index.keyframe[static_cast<size_t>(i)]) keyframes.push_back(i);
  info["keyframes"] = keyframes;
  info["begin_seconds"] = index.begin_seconds();
  info["end_seconds"] = index.end_seconds();
  info["average_fps"] = index.average_fps();
  return info;
}

// uint8 [N, 3, H, W] ("NCHW", torchcodec's get_frames_at) or [N, H, W, 3] ("NHWC").
py::array_t<uint8_t> decode_video_frames(const std::string& path,
                                         const std::vector<int64_t>& indices,
                                         const std::string& layout) {
  if (layout != "NCHW" && layout != "NHWC")
    throw py::value_error("layout is \"NCHW\" or \"NHWC\", not \"" + layout + "\"");
  const video::FrameLayout order =
      layout == "NCHW" ? video::FrameLayout::kNCHW : video::FrameLayout::kNHWC;
  auto pixels = std::make_unique<std::vector<uint8_t>>();
  video::VideoIndex index;
  Status status;
  {
    ReleasedGil no_gil;
    Result<video::VideoIndex> read = video::read_video_index(path);
    status = read.status();
    if (read.is_ok()) {
      index = std::move(read).value();
      status = video::decode_frames_at(index, indices, order, *pixels);
    }
  }
  throw_if_error(status);
  const py::ssize_t n = static_cast<py::ssize_t>(indices.size());
  const py::ssize_t h = index.upright_height(), w = index.upright_width();
  std::vector<py::ssize_t> shape = order == video::FrameLayout::kNCHW
                                       ? std::vector<py::ssize_t>{n, 3, h, w}
                                       : std::vector<py::ssize_t>{n, h, w, 3};
  uint8_t* data = pixels->data();
  // The array owns the vector: no copy of the frames.
  py::capsule owner(pixels.release(),
                    [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
  return py::array_t<uint8_t>(shape, data, owner);
}

// The frames one decode of `indices` decodes (those asked for, those before them back to their
// keyframes, less the non-reference frames skipped, and those after them the decoder decoded
// before they came out: VideoFrameDecoder::frames_decoded).
int64_t video_frames_decoded(const std::string& path, const std::vector<int64_t>& indices) {
  int64_t decoded = 0;
  Status status;
  {
    ReleasedGil no_gil;
    Result<video::VideoIndex> index = video::read_video_index(path);
    Result<video::VideoFrameDecoder> decoder =
        index.is_ok() ? video::VideoFrameDecoder::open(index.value()) : index.status();
    status = decoder.status();
    if (decoder.is_ok()) {
      std::vector<uint8_t> frames;
      status = decoder.value().decode(indices, video::FrameLayout::kNHWC, frames);
      decoded = decoder.value().frames_decoded();
    }
  }
  throw_if_error(status);
  return decoded;
}

// Every clip (its frame indices) of a video of `frame_count` frames at `fps` (video_clips.h).
std::vector<std::vector<int64_t>> video_clips(int64_t frame_count, double fps,
                                              int64_t frames_per_clip, int64_t step_between_clips,
                                              double frame_rate) {
  const video::VideoClips clips{frames_per_clip, step_between_clips, frame_rate};
  const int64_t count = clips.count(frame_count, fps).value_or_throw();
  std::vector<std::vector<int64_t>> out;
  for (int64_t j = 0; j < count; ++j)
    out.push_back(clips.frames(frame_count, fps, j).value_or_throw());
  return out;
}

}  // namespace

void register_video(py::module_& module) {
  module.def("video_index", &video_index, py::arg("path"),
             "A video file's frame index from its packets (no decoding): codec, width, height, "
             "time_base, rotation, every frame's pts in presentation order and the keyframes' "
             "frame indices. Raises stoker.Error (one line) for a file that is no video.");
  module.def("decode_video_frames", &decode_video_frames, py::arg("path"), py::arg("indices"),
             py::arg("layout") = "NCHW",
             "The frames at `indices` (presentation order) as uint8 RGB, [N, 3, H, W] or "
             "[N, H, W, 3], equal byte for byte to torchcodec 0.17's get_frames_at with the same "
             "FFmpeg. Raises stoker.Error naming the file and frame on bad input.");
  module.def("video_clips", &video_clips, py::arg("frame_count"), py::arg("fps"),
             py::arg("frames_per_clip"), py::arg("step_between_clips"), py::arg("frame_rate"),
             "The frame indices of every clip torchvision's VideoClips enumerates of a video of "
             "`frame_count` frames at `fps` (its average rate), resampled to `frame_rate` (0: its "
             "own): what stoker.VideoFolder(frames_per_clip=...) makes its samples. Raises "
             "ValueError naming a bad argument.");
  module.def("video_frames_decoded", &video_frames_decoded, py::arg("path"), py::arg("indices"),
             "How many frames decoding the frames at `indices` decodes (from their keyframes, "
             "non-reference frames nothing asks for skipped): the cost decode_video_frames pays.");
}

}  // namespace stoker::python
