#pragma once
// The check every operation with per-channel values makes (random_erasing's value,
// random_crop's fill, the policies' fill): one number, or one per channel of the image.

#include <fmt/format.h>

#include <cstddef>
#include <string>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

// Ok for 1 or C numbers (C the context's channels); else "field 'F': OP: PARAM has N numbers;
// give one or one per channel (C)".
inline Status check_per_channel(const PixelContext& context, const std::string& op,
                                const std::string& param, size_t count) {
  const size_t channels = context.shape.empty() ? 0 : static_cast<size_t>(context.shape[0]);
  if (count == 1 || count == channels) return Status::ok();
  return invalid_argument(
      fmt::format("field '{}': {}: {} has {} numbers; give one or one per channel ({})",
                  context.field, op, param, count, channels));
}

}  // namespace stoker::ops
