#include "stoker/pipeline/field_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "stoker/pipeline/normalization.h"

namespace stoker {
namespace {

size_t element_count(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// A pixel operation of a field: `resizing` (the operation's) where it makes another shape, of
// `elements` values, else null (it changes the image in place).
struct PixelStep {
  std::shared_ptr<const PixelOp> op;
  const ResizingPixelOp* resizing = nullptr;
  size_t elements = 0;
};

// A sample made by `source` (uint8, or float32 when it normalises as it writes), changed by each
// pixel operation (in place, or into another buffer where it makes another shape), normalised to
// float32 if `normalization` is set, then changed in place by each float operation. Operation k
// after the source draws from stream step k, normalize counted (fused into the source or not).
// `shape` is the last pixel operation's (the source's if none changes it).
class FieldPipeline : public Transform {
 public:
  FieldPipeline(std::string field, std::shared_ptr<const Transform> source,
                std::vector<PixelStep> pixel_steps, std::optional<Normalization> normalization,
                std::vector<std::shared_ptr<const FloatOp>> float_ops, uint64_t first_float_step,
                std::vector<int64_t> shape)
      : field_(std::move(field)),
        source_(std::move(source)),
        pixel_steps_(std::move(pixel_steps)),
        normalization_(std::move(normalization)),
        float_ops_(std::move(float_ops)),
        first_float_step_(first_float_step),
        shape_(std::move(shape)),
        elements_(element_count(shape_)),
        source_elements_(element_count(source_->sample_shape())),
        resizes_(std::any_of(pixel_steps_.begin(), pixel_steps_.end(),
                             [](const PixelStep& step) { return step.resizing != nullptr; })) {}

  DType dtype() const override {
    return normalization_ || source_->dtype() == DType::kFloat32 ? DType::kFloat32 : DType::kUint8;
  }
  std::vector<int64_t> sample_shape() const override { return shape_; }
  size_t record_prefix() const override { return source_->record_prefix(); }

  Status apply(const SampleInput& input, uint8_t* slot) const override {
    // The image in the slot itself unless it is normalised or changes shape on the way.
    thread_local std::vector<uint8_t> scratch, resized;
    uint8_t* pixels = slot;
    if (normalization_ || resizes_) {
      scratch.resize(source_elements_);
      pixels = scratch.data();
    }
    if (Status s = source_->apply(input, pixels); !s.is_ok()) return s;
    SampleInput own = input;
    for (const PixelStep& step : pixel_steps_) {
      ++own.step;
      if (!step.resizing) {
        if (Status s = step.op->apply(own, pixels); !s.is_ok()) return named(s);
        continue;
      }
      resized.resize(step.elements);
      if (Status s = step.resizing->apply_to(own, pixels, resized.data()); !s.is_ok())
        return named(s);
      scratch.swap(resized);
      pixels = scratch.data();
    }
    if (normalization_)
      normalization_->apply(pixels, reinterpret_cast<float*>(slot), 1);
    else if (pixels != slot)
      std::memcpy(slot, pixels, elements_);
    own.step = first_float_step_;
    for (const auto& op : float_ops_) {
      if (Status s = op->apply(own, reinterpret_cast<float*>(slot)); !s.is_ok()) return named(s);
      ++own.step;
    }
    return Status::ok();
  }

 private:
  Status named(const Status& s) const {
    return Status(s.code(), fmt::format("field '{}': {}", field_, s.message()));
  }

  const std::string field_;
  const std::shared_ptr<const Transform> source_;
  const std::vector<PixelStep> pixel_steps_;
  const std::optional<Normalization> normalization_;
  const std::vector<std::shared_ptr<const FloatOp>> float_ops_;
  const uint64_t first_float_step_;
  const std::vector<int64_t> shape_;
  const size_t elements_, source_elements_;
  const bool resizes_;
};

// A field's calls sorted by role.
struct FieldCalls {
  const OpCall* source = nullptr;
  std::vector<const OpCall*> pixels;
  const OpCall* normalize = nullptr;
  std::vector<const OpCall*> floats;
};

// `calls` composed by their types (sample_type.h): a source first (it takes the record), then
// each call taking what the one before it makes, the first the stored field's type (`stored`,
// nullopt for a field the dataset lacks). kInvalidArgument naming the field and the call that
// does not fit, what it takes and what it was given.
Result<FieldCalls> sort_calls(const std::string& field, const std::vector<OpCall>& calls,
                              const std::optional<SampleType>& stored) {
  const auto fail = [&](const std::string& message) {
    return invalid_argument(fmt::format("field '{}': {}", field, message));
  };
  FieldCalls sorted;
  std::optional<SampleType> made = stored;
  std::string maker = "the stored field holds";
  for (const OpCall& call : calls) {
    const OpSpec& op = *call.op;
    if (op.role == OpRole::kBatch)
      return fail(fmt::format(
          "{} changes whole batches, not a field's samples: give it as the batch transform",
          op.name));
    if (op.role == OpRole::kJoint)
      return fail(
          fmt::format("{} changes a sample's image, boxes and masks together: give it in a joint "
                      "transform (joint_pipeline.h), after detection_sample",
                      op.name));
    if (op.input->layout == Layout::kRecord) {
      if (&call != &calls.front())
        return fail(fmt::format("{} makes the field from the record: it must come first", op.name));
    } else if (!made) {
      return invalid_argument("the dataset has no field '" + field + "'");
    } else if (*made != *op.input) {
      const bool encoded = made->layout == Layout::kEncoded && &call == &calls.front();
      return fail(fmt::format("{} takes {}; {} {}{}", op.name, describe(*op.input), maker,
                              describe(*made),
                              encoded ? " (a decoding operation such as random_resized_crop "
                                        "must come first)"
                                      : ""));
    }
    made = op.output;
    maker = op.name + " before it makes";
    switch (op.role) {
      case OpRole::kSource:
        sorted.source = &call;
        break;
      case OpRole::kPixel:
        sorted.pixels.push_back(&call);
        break;
      case OpRole::kNormalize:
        sorted.normalize = &call;
        break;
      default:
        sorted.floats.push_back(&call);
    }
  }
  return sorted;
}

std::vector<float> floats(const std::vector<double>& values) {
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace

Result<FieldRequest> make_field_request(const Schema& schema, const std::string& field,
                                        const std::vector<OpCall>& calls,
                                        const ImageOutput& measure, const std::string& sample_parts,
                                        const std::string& cache_dir, const Dataset* dataset,
                                        FrameCountsMemo* frame_counts) {
  const auto fail = [&](const std::string& message) {
    return invalid_argument(fmt::format("field '{}': {}", field, message));
  };
  const int stored = schema.find(field);
  Result<FieldCalls> sorted_calls =
      sort_calls(field, calls,
                 stored < 0 ? std::nullopt : std::optional(stored_type(schema.fields()[stored])));
  if (!sorted_calls.is_ok()) return sorted_calls.status();
  const FieldCalls& c = sorted_calls.value();
  std::vector<float> mean, std;
  image::UnitScale unit = image::UnitScale::kDivide;
  if (c.normalize) {
    mean = floats(c.normalize->params.reals("mean"));
    std = floats(c.normalize->params.reals("std"));
    unit = image::unit_scale_named(c.normalize->params.choice("unit_scale"));
  }
  const bool only_normalize = c.pixels.empty() && c.floats.empty();
  if (!c.source && only_normalize)
    return c.normalize ? FieldRequest(field, true, mean, std, unit) : FieldRequest(field);

  // The source's (or the stored field's) sample; a source normalises as it writes when no
  // pixel operation comes between.
  std::shared_ptr<const Transform> made;
  const bool fused = c.source && c.normalize && c.pixels.empty();
  if (c.source) {
    SourceContext context{&schema, field, measure, sample_parts, dataset, cache_dir, frame_counts};
    context.output.uint8 = !fused;
    if (fused) {
      context.output.mean = mean;
      context.output.std = std;
      context.output.unit = unit;
    }
    Result<std::shared_ptr<const Transform>> transform =
        c.source->op->make_source(c.source->params, context);
    if (!transform.is_ok()) return transform.status();
    made = transform.value();
    if (!c.normalize && c.pixels.empty()) return FieldRequest(field, made);  // as it writes
    if (made->as_variable())  // a choice among sources one of which varies
      return fail(fmt::format("{} makes samples of varying size: no operation may follow it",
                              c.source->op->name));
    if (fused && c.floats.empty()) return FieldRequest(field, made);
  } else {
    made = copy_field(schema, stored);
  }

  // Each pixel operation made for the shape the ones before it make.
  PixelContext context{field, made->sample_shape()};
  std::vector<PixelStep> pixel_steps;
  for (const OpCall* call : c.pixels) {
    Result<std::shared_ptr<const PixelOp>> op = call->op->make_pixel(call->params, context);
    if (!op.is_ok()) return op.status();
    PixelStep step{op.value()};
    std::vector<int64_t> shape = output_shape(*step.op, context.shape);
    if (shape != context.shape) {
      step.resizing = dynamic_cast<const ResizingPixelOp*>(step.op.get());
      step.elements = element_count(shape);
      context.shape = std::move(shape);
    }
    pixel_steps.push_back(std::move(step));
  }
  std::optional<Normalization> normalization;
  if (c.normalize && !fused) {
    Result<Normalization> n = Normalization::create(context.shape, mean, std, unit);
    if (!n.is_ok()) return fail(n.status().message());
    normalization = n.value();
  }
  std::vector<std::shared_ptr<const FloatOp>> float_ops;
  for (const OpCall* call : c.floats) {
    Result<std::shared_ptr<const FloatOp>> op = call->op->make_float(call->params, context);
    if (!op.is_ok()) return op.status();
    float_ops.push_back(op.value());
  }
  return FieldRequest(
      field, std::make_shared<FieldPipeline>(field, std::move(made), std::move(pixel_steps),
                                             std::move(normalization), std::move(float_ops),
                                             c.pixels.size() + 2, context.shape));
}

}  // namespace stoker
