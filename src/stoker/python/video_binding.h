#pragma once
// The video layer's first Python surface (issue 63): a file's frame index, and frames at indices
// as uint8 RGB arrays, decoded as torchcodec 0.17 decodes them (video/frame_decoder.h). Free
// functions; thread-safe (they release the GIL while reading and decoding).

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds stoker._stoker.video_index(path) and stoker._stoker.decode_video_frames(path, indices,
// layout) to `module`.
void register_video(pybind11::module_& module);

}  // namespace stoker::python
