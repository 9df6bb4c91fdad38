#pragma once
// A batch field made from a list of operation calls (op_registry.h), ordered by their roles: at
// most one source first, then image operations, then at most one normalize, then float
// operations.
//
//   []                               the stored fixed field, copied as stored
//   [normalize]                      a stored uint8 field as float32 (x / 255 - mean) / std
//   [source]                         what the source makes (a crop, uint8)
//   [source, normalize, float...]    the source normalises as it writes (one fused pass), then
//                                    each float operation changes the float32 sample in place
//   [source?, pixel..., normalize?, float...]
//                                    the source's uint8 sample (or the stored uint8 field), each
//                                    pixel operation in place (or into another buffer, one that
//                                    changes H and W: ResizingPixelOp), normalised into the
//                                    batch, then each float operation in place
//
// Each operation is made for the shape the steps before it make; the batch's sample shape is the
// last one's. Where no operation changes the shape, the image stays in the batch's slot (or in
// one scratch buffer before normalize), as fast as before.
//
// Determinism (docs/DESIGN.md contract 1): the source draws from the sample's stream as any
// transform does; the k-th call after the source (1, 2, ..., normalize counted) draws from its
// own stream of the sample (SampleInput::step = k, transform.h), never repeating another's.

#include <string>
#include <vector>

#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

class Dataset;

// The request for batch field `field` of `schema` made by `calls`. kInvalidArgument naming the
// field for calls out of order, a stored field they cannot apply to, or a factory's refusal.
// `measure`: an image source's switches for measuring (ImageOutput::crop_decode, simd_resize);
// the calls set the rest. `sample_parts`: the dataset's Manifest::sample_parts (a source
// operation that decodes a record's part, decode_clip's "video_clips", reads it). `cache_dir`:
// SourceContext::cache_dir (the loader's cache folder; "": none). `dataset`:
// SourceContext::dataset (null: not known). `frame_counts`: SourceContext::frame_counts (the
// caller's, kept while its requests are made; null: none shared).
Result<FieldRequest> make_field_request(const Schema& schema, const std::string& field,
                                        const std::vector<OpCall>& calls,
                                        const ImageOutput& measure = {},
                                        const std::string& sample_parts = {},
                                        const std::string& cache_dir = {},
                                        const Dataset* dataset = nullptr,
                                        FrameCountsMemo* frame_counts = nullptr);

}  // namespace stoker
