#pragma once
// A video field's bytes as a uint8 [N] sample (raw_bytes on a field that may hold references):
// a record's own bytes copied as copy_variable_field copies them, and a reference to a remote
// video (video/video_reference.h: a remote video folder's records) resolved to the whole video's
// bytes, read through video::video_field_bytes (its blocks through the remote cache; a failed or
// changed read is its one-line error naming the URL) under the sample's cancellation
// (SampleInput::cancelled, put in scope: util/cancel_scope.h). A video longer than `max_length`
// is refused, one line naming its size, before anything is read. Built with the video layer.

#include <cstdint>
#include <memory>

#include "stoker/pipeline/transform.h"

namespace stoker {

// Bytes field `field` (of the records' schema) as uint8 [N], N at most `max_length`.
std::shared_ptr<const Transform> copy_video_field(int field, int64_t max_length);

}  // namespace stoker
