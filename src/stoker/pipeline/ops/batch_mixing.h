#pragma once
// What MixUp and CutMix share (ops/mixup.cc, cutmix.cc, mixup_cutmix.cc, timm_mixup.cc): the
// batch's image and label fields, each sample blended with or pasted from its partner (the
// previous sample, torchvision's roll(1, 0); or the mirror one, timm's flip(0)), and the labels
// made soft targets over num_classes.
//
// Arithmetic as torch's float32 kernels, one rounding per step and no multiply-add contracted
// (these files compile with -ffp-contract=off): a blend is fl(fl(x * a) + fl(y * b)) with x the
// sample, y its partner, a = float(lam) and b = float(1 - lam), the factors torch casts its
// Python scalars to; a soft target fl(fl(t * a) + fl(u * b)) with t the sample's one-hot (or
// smoothed) row and u its partner's.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/pipeline/batch_transform.h"

namespace stoker::ops {

// Which sample a sample is mixed with.
enum class Partner {
  kRoll,  // sample i - 1, sample 0 with the last (torchvision's roll(1, 0))
  kFlip,  // sample n - 1 - i (timm's flip(0))
};

// A box of a [C, H, W] image: rows [top, bottom), columns [left, right).
struct MixBox {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  int64_t area() const { return (bottom - top) * (right - left); }
};

// How one sample changes: not at all, blended (sample * self + partner * other), or the box
// pasted from its partner. self and other are its soft target's factors too.
struct SampleMix {
  enum Kind { kKeep, kBlend, kPaste } kind = kKeep;
  float self = 1;
  float other = 0;
  MixBox box;
};

// The factors of a weight lam (a double, as Python's float): float(lam), float(1 - lam).
inline SampleMix blend(double lam) {
  return {SampleMix::kBlend, static_cast<float>(lam), static_cast<float>(1.0 - lam), {}};
}
inline SampleMix paste(const MixBox& box, double lam) {
  return {SampleMix::kPaste, static_cast<float>(lam), static_cast<float>(1.0 - lam), box};
}

// The fields a mixing operation works on: their indices in the batch.
struct MixFields {
  size_t image = 0;  // float32 [C, H, W]
  size_t label = 0;  // int64 [] (class indices)
};

inline std::string field_types_text(const std::vector<BatchFieldType>& fields) {
  std::vector<std::string> parts;
  for (const BatchFieldType& f : fields)
    parts.push_back(
        fmt::format("{} ({} [{}])", f.name, dtype_name(f.dtype), fmt::join(f.sample_shape, ", ")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The batch's one float32 [C, H, W] field and one int64 [] field; kInvalidArgument naming `op`
// and the fields otherwise.
inline Result<MixFields> find_mix_fields(const std::vector<BatchFieldType>& fields,
                                         const std::string& op) {
  std::vector<size_t> images, labels;
  for (size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].dtype == DType::kFloat32 && fields[f].sample_shape.size() == 3)
      images.push_back(f);
    if (fields[f].dtype == DType::kInt64 && fields[f].sample_shape.empty()) labels.push_back(f);
  }
  if (images.size() != 1 || labels.size() != 1)
    return invalid_argument(fmt::format(
        "{} needs one float32 image field [C, H, W] (after normalize) and one int64 label "
        "field; the batch has {}",
        op, field_types_text(fields)));
  return MixFields{images[0], labels[0]};
}

// The fields after a mixing operation: the label a float32 soft target [num_classes].
inline Result<std::vector<BatchFieldType>> soft_target_outputs(
    const std::vector<BatchFieldType>& fields, const std::string& op, int64_t num_classes) {
  Result<MixFields> found = find_mix_fields(fields, op);
  if (!found.is_ok()) return found.status();
  std::vector<BatchFieldType> out = fields;
  out[found.value().label].dtype = DType::kFloat32;
  out[found.value().label].sample_shape = {num_classes};
  return out;
}

// The batch's labels into `out`; kInvalidArgument naming `op` for one outside [0, num_classes).
inline Status read_labels(const BatchInput& input, size_t field, int64_t num_classes,
                          const std::string& op, std::vector<int64_t>& out) {
  const BatchFieldData& labels = input.fields[field];
  out.resize(static_cast<size_t>(input.size));
  for (size_t k = 0; k < out.size(); ++k) {
    std::memcpy(&out[k], labels.data + k * labels.stride, sizeof(int64_t));
    if (out[k] < 0 || out[k] >= num_classes)
      return invalid_argument(
          fmt::format("{}: label {} is not in [0, num_classes = {})", op, out[k], num_classes));
  }
  return Status::ok();
}

inline size_t partner_of(Partner partner, size_t i, size_t n) {
  return partner == Partner::kRoll ? (i + n - 1) % n : n - 1 - i;
}

// Sample `self` changed by `mix` from `from` (its partner as it was), both [C, H, W].
inline void mix_sample(float* self, const float* from, const SampleMix& mix,
                       const std::vector<int64_t>& shape) {
  const int64_t plane = shape[1] * shape[2];
  if (mix.kind == SampleMix::kBlend) {
    const int64_t n = shape[0] * plane;
    for (int64_t e = 0; e < n; ++e) {
      const float x = self[e] * mix.self;
      const float y = from[e] * mix.other;
      self[e] = x + y;
    }
  } else if (mix.kind == SampleMix::kPaste) {
    const MixBox& b = mix.box;
    for (int64_t c = 0; c < shape[0]; ++c)
      for (int64_t y = b.top; y < b.bottom; ++y) {
        const int64_t at = c * plane + y * shape[2] + b.left;
        std::copy(from + at, from + at + (b.right - b.left), self + at);
      }
  }
}

// The image field changed in place: sample i by mixes[i] from its partner as it was.
inline void mix_images(const BatchInput& input, size_t field, Partner partner,
                       const std::vector<SampleMix>& mixes) {
  const BatchFieldData& images = input.fields[field];
  const std::vector<int64_t>& shape = images.type->sample_shape;
  const size_t n = static_cast<size_t>(input.size);
  const auto sample = [&](size_t k) {
    return reinterpret_cast<float*>(images.data + k * images.stride);
  };
  const size_t elements = images.type->sample_shape[0] * shape[1] * shape[2];
  thread_local std::vector<float> saved;
  saved.resize(elements);
  if (partner == Partner::kRoll) {  // from the last down: sample i - 1 is still as it was
    std::copy(sample(n - 1), sample(n - 1) + elements, saved.begin());
    for (size_t i = n; i-- > 0;)
      mix_sample(sample(i), i == 0 ? saved.data() : sample(i - 1), mixes[i], shape);
    return;
  }
  for (size_t i = 0; i <= (n - 1) / 2; ++i) {  // the pairs (i, n - 1 - i); the middle alone
    const size_t j = n - 1 - i;
    std::copy(sample(i), sample(i) + elements, saved.begin());
    mix_sample(sample(i), i == j ? saved.data() : sample(j), mixes[i], shape);
    if (j != i) mix_sample(sample(j), saved.data(), mixes[j], shape);
  }
}

// The label field made soft targets [n, num_classes] in place: row i is
// fl(fl(t_i * self) + fl(t_p * other)), t the one-hot rows of value `on` at the label and `off`
// elsewhere, p the partner. `labels` as read_labels read them.
inline void write_soft_targets(const BatchInput& input, size_t field, Partner partner,
                               const std::vector<int64_t>& labels, int64_t num_classes,
                               const std::vector<SampleMix>& mixes, float on = 1, float off = 0) {
  float* out = reinterpret_cast<float*>(input.fields[field].data);
  const size_t n = labels.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t mine = labels[i];
    const int64_t theirs = labels[partner_of(partner, i, n)];
    for (int64_t c = 0; c < num_classes; ++c) {
      const float x = (c == mine ? on : off) * mixes[i].self;
      const float y = (c == theirs ? on : off) * mixes[i].other;
      out[i * num_classes + c] = x + y;
    }
  }
}

}  // namespace stoker::ops
