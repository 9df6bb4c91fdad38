#pragma once
// A uint8 image value as torchvision's float32 pixel, bit for bit: torchvision's own float32
// operations in its order, each rounded (no multiply-add fused into one rounding: the files
// that compute it build with -ffp-contract=off).
//   unit    v / 255 (v1's ToTensor and ConvertImageDtype) or v * float32(1 / 255) (v2's
//           ToDtype(float32, scale=True) and ConvertImageDtype): the two differ by an ulp for
//           half of the values;
//   result  (unit - mean) / std (Normalize, v1 and v2); mean 0 and std 1 leave the unit as is.

#include <cstdint>
#include <string_view>

namespace stoker::image {

enum class UnitScale : uint8_t {
  kDivide,    // v / 255
  kMultiply,  // v * float32(1 / 255)
};

inline constexpr float kInverse255 = static_cast<float>(1.0 / 255.0);

inline float unit_value(uint8_t v, UnitScale unit) {
  const float x = static_cast<float>(v);
  return unit == UnitScale::kDivide ? x / 255.0f : x * kInverse255;
}

inline float float_pixel(uint8_t v, UnitScale unit, float mean, float std) {
  return (unit_value(v, unit) - mean) / std;
}

// The operations' `unit_scale` parameter: "multiply" is kMultiply, anything else ("divide")
// kDivide.
inline UnitScale unit_scale_named(std::string_view name) {
  return name == "multiply" ? UnitScale::kMultiply : UnitScale::kDivide;
}

}  // namespace stoker::image
