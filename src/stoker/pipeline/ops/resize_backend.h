#pragma once
// The decoding sources' "backend" parameter (random_resized_crop, center_crop, resize): whose
// resize their pixels are, torchvision's of a PIL image or its v2 resize of a uint8 tensor
// (ImageOutput::backend).
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

inline ParamSpec resize_backend_param() {
  return ParamSpec::choice(
      "backend", "pil", {"pil", "tensor", "tensor_float", "tensor_float_fused"},
      "whose resize: torchvision's of a PIL image (PIL's filters), its v2 resize of a uint8 "
      "tensor (torch's antialiased uint8 kernels), or its resize of a tensor in float32 (v1's: "
      "as torch 2.11 adds the taps, or, fused, as torch 2.4 does)");
}

inline ResizeBackend resize_backend(const Params& p) {
  return resize_backend_named(p.choice("backend"));
}

}  // namespace stoker::ops
