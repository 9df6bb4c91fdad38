#include "stoker/pipeline/field_pipeline.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "stoker/pipeline/normalization.h"

namespace stoker {
namespace {

// A uint8 sample made by `source`, changed in place by each pixel operation, then written as is
// or normalised to float32.
class PixelPipeline : public Transform {
 public:
  PixelPipeline(std::string field, std::shared_ptr<const Transform> source,
                std::vector<std::shared_ptr<const PixelOp>> ops,
                std::optional<Normalization> normalization)
      : field_(std::move(field)),
        source_(std::move(source)),
        ops_(std::move(ops)),
        normalization_(std::move(normalization)),
        shape_(source_->sample_shape()) {
    bytes_ = 1;
    for (int64_t d : shape_) bytes_ *= static_cast<size_t>(d);
  }

  DType dtype() const override { return normalization_ ? DType::kFloat32 : DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return shape_; }
  size_t record_prefix() const override { return source_->record_prefix(); }

  Status apply(const SampleInput& input, uint8_t* slot) const override {
    thread_local std::vector<uint8_t> scratch;
    uint8_t* pixels = slot;
    if (normalization_) {
      scratch.resize(bytes_);
      pixels = scratch.data();
    }
    if (Status s = source_->apply(input, pixels); !s.is_ok()) return s;
    SampleInput own = input;
    for (size_t k = 0; k < ops_.size(); ++k) {
      own.step = k + 1;
      if (Status s = ops_[k]->apply(own, pixels); !s.is_ok())
        return Status(s.code(), fmt::format("field '{}': {}", field_, s.message()));
    }
    if (normalization_) normalization_->apply(pixels, reinterpret_cast<float*>(slot), 1);
    return Status::ok();
  }

 private:
  const std::string field_;
  const std::shared_ptr<const Transform> source_;
  const std::vector<std::shared_ptr<const PixelOp>> ops_;
  const std::optional<Normalization> normalization_;
  const std::vector<int64_t> shape_;
  size_t bytes_;
};

std::vector<float> floats(const std::vector<double>& values) {
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace

Result<FieldRequest> make_field_request(const Schema& schema, const std::string& field,
                                        const std::vector<OpCall>& calls,
                                        const ImageOutput& measure) {
  const auto fail = [&](const std::string& message) {
    return invalid_argument(fmt::format("field '{}': {}", field, message));
  };
  const OpCall* source = nullptr;
  const OpCall* normalize = nullptr;
  std::vector<const OpCall*> pixels;
  for (const OpCall& call : calls) {
    const std::string& name = call.op->name;
    if (normalize)
      return fail(fmt::format("{} comes after {}, which makes the output: it must be last", name,
                              normalize->op->name));
    if (call.op->role == OpRole::kSource) {
      if (&call != &calls.front())
        return fail(fmt::format("{} makes the field from the record: it must come first", name));
      source = &call;
    } else if (call.op->role == OpRole::kPixel) {
      pixels.push_back(&call);
    } else {
      normalize = &call;
    }
  }
  std::vector<float> mean, std;
  if (normalize) {
    mean = floats(normalize->params.reals("mean"));
    std = floats(normalize->params.reals("std"));
  }
  if (!source && pixels.empty())
    return normalize ? FieldRequest(field, true, mean, std) : FieldRequest(field);

  std::shared_ptr<const Transform> made;
  if (source) {
    SourceContext context{&schema, field, measure};
    const bool fused = normalize && pixels.empty();
    context.output.uint8 = !fused;
    if (fused) {
      context.output.mean = mean;
      context.output.std = std;
    }
    Result<std::shared_ptr<const Transform>> transform =
        source->op->make_source(source->params, context);
    if (!transform.is_ok()) return transform.status();
    made = transform.value();
    if (!normalize && pixels.empty()) return FieldRequest(field, made);  // as the source writes
    if (made->dtype() != (fused ? DType::kFloat32 : DType::kUint8))
      return fail(fmt::format("{} writes {}: {} applies to uint8 images", source->op->name,
                              dtype_name(made->dtype()),
                              pixels.empty() ? normalize->op->name : pixels.front()->op->name));
    if (pixels.empty()) return FieldRequest(field, made);
  } else {
    const int f = schema.find(field);
    if (f < 0) return invalid_argument("the dataset has no field '" + field + "'");
    const Field& stored = schema.fields()[f];
    if (!stored.is_fixed() || stored.dtype != DType::kUint8)
      return fail(
          fmt::format("{} applies to uint8 arrays, not {} (a decoding operation such as "
                      "random_resized_crop must come first)",
                      pixels.front()->op->name, dtype_name(stored.dtype)));
    made = copy_field(schema, f);
  }

  const PixelContext context{field, made->sample_shape()};
  std::vector<std::shared_ptr<const PixelOp>> ops;
  for (const OpCall* call : pixels) {
    Result<std::shared_ptr<const PixelOp>> op = call->op->make_pixel(call->params, context);
    if (!op.is_ok()) return op.status();
    ops.push_back(op.value());
  }
  std::optional<Normalization> normalization;
  if (normalize) {
    Result<Normalization> n = Normalization::create(context.shape, mean, std);
    if (!n.is_ok()) return fail(n.status().message());
    normalization = n.value();
  }
  return FieldRequest(field, std::make_shared<PixelPipeline>(field, std::move(made), std::move(ops),
                                                             std::move(normalization)));
}

}  // namespace stoker
