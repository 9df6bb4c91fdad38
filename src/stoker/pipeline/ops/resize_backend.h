#pragma once
// The decoding sources' "backend" parameter (random_resized_crop, center_crop, resize): whose
// resize their pixels are, torchvision's of a PIL image or its v2 resize of a uint8 tensor
// (ImageOutput::tensor_backend).
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

inline ParamSpec resize_backend_param() {
  return ParamSpec::choice("backend", "pil", {"pil", "tensor"},
                           "whose resize: torchvision's of a PIL image (PIL's filters), or its v2 "
                           "resize of a uint8 tensor (torch's antialiased uint8 kernels)");
}

inline bool tensor_backend(const Params& p) { return p.choice("backend") == "tensor"; }

}  // namespace stoker::ops
