#include "stoker/pipeline/batch_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "stoker/pipeline/normalization.h"

namespace stoker {
namespace {

// Samples ahead of the one being written whose records are prefetched.
constexpr size_t kPrefetchDistance = 8;

Result<std::shared_ptr<const Transform>> stored_field(
    const Schema& schema, const FieldRequest& request,
    const std::map<std::string, uint64_t>& max_lengths) {
  const int f = schema.find(request.name);
  if (f < 0) return invalid_argument("the dataset has no field '" + request.name + "'");
  const Field& field = schema.fields()[f];
  if (field.is_variable_length()) {
    if (request.normalize)
      return invalid_argument("field '" + request.name +
                              "' varies in length; it does not normalise");
    const auto most = max_lengths.find(field.name);
    if (most == max_lengths.end())
      return invalid_argument("field '" + request.name +
                              "' varies in length and the manifest "
                              "gives no max_lengths for it");
    // A capacity of at least one row: a slot of none would be an empty field.
    const auto rows = static_cast<int64_t>(std::min<uint64_t>(
        std::max<uint64_t>(most->second, 1), static_cast<uint64_t>(kMaxDimension)));
    return copy_variable_field(f, field.dtype, field.shape, rows);
  }
  if (!field.is_fixed())
    return invalid_argument("field '" + request.name +
                            "' is variable-size bytes; it needs a transform (a decoder)");
  if (!request.normalize) return copy_field(schema, f);
  if (field.dtype != DType::kUint8)
    return invalid_argument("field '" + request.name + "' is not uint8; only uint8 normalises");
  Result<Normalization> normalization =
      Normalization::create(field.shape, request.mean, request.std, request.unit);
  if (!normalization.is_ok())
    return invalid_argument("field '" + request.name + "': " + normalization.status().message());
  return normalize_field(schema, f, normalization.value());
}

// Bytes of a sample of `type`; kInvalidArgument naming field `name` past 2^40 elements.
Result<size_t> sample_bytes_of(const BatchFieldType& type) {
  if (type.dtype == DType::kBytes)
    return invalid_argument("field '" + type.name + "': a transform must write a fixed dtype");
  size_t elements = 1;
  for (int64_t d : type.sample_shape) {
    if (d <= 0 || elements > (size_t{1} << 40) / static_cast<size_t>(d))
      return invalid_argument("field '" + type.name + "': sample shape out of range");
    elements *= static_cast<size_t>(d);
  }
  return elements * dtype_size(type.dtype);
}

// Ok if a sample of `shape` lies within `capacity`; else kInternal (the transform's bug, refused
// rather than delivered).
Status check_within_capacity(const int64_t* shape, const std::vector<int64_t>& capacity) {
  for (size_t d = 0; d < capacity.size(); ++d) {
    if (shape[d] < 0 || shape[d] > capacity[d])
      return Status(StatusCode::kInternal,
                    fmt::format("the transform wrote a sample of dimension {} = {}, outside its "
                                "capacity of {}",
                                d, shape[d], capacity[d]));
  }
  return Status::ok();
}

// Variable field `field`'s sample into `slot`, its shape into `shape`: the transform's, checked
// against the capacity again.
Status write_variable(const BatchField& field, const SampleInput& input, uint8_t* slot,
                      int64_t* shape) {
  Status status = field.variable->apply_sized(input, slot, shape);
  if (!status.is_ok()) return status;
  return check_within_capacity(shape, field.sample_shape);
}

// The field of a joint transform's output: its type and capacity, written by the joint alone
// (BatchLayout::write_joint).
class JointOutputField : public VariableTransform {
 public:
  explicit JointOutputField(const JointTransform::Output& output) : output_(output) {}
  DType dtype() const override { return output_.dtype; }
  std::vector<int64_t> sample_shape() const override { return output_.capacity; }
  Status apply_sized(const SampleInput&, uint8_t*, int64_t*) const override {
    return Status(StatusCode::kInternal, "a joint transform's field is written by the joint");
  }

 private:
  const JointTransform::Output output_;
};

// Checks that every output of each joint transform of `fields` is one field, and gives the first
// field of each joint the batch field of every output.
Status link_joint_fields(std::vector<BatchField>& fields,
                         const std::vector<FieldRequest>& requests) {
  for (size_t f = 0; f < fields.size(); ++f) {
    const JointTransform* joint = requests[f].joint.get();
    if (!joint) continue;
    const int output = requests[f].joint_output;
    if (output < 0 || static_cast<size_t>(output) >= joint->outputs().size())
      return invalid_argument(
          fmt::format("field '{}': the joint transform has no output {}", fields[f].name, output));
    size_t first = 0;
    while (requests[first].joint.get() != joint) ++first;
    std::vector<int>& linked = fields[first].joint_fields;
    if (linked.empty()) linked.assign(joint->outputs().size(), -1);
    if (linked[output] >= 0)
      return invalid_argument(fmt::format(
          "field '{}': the joint transform's output is requested twice", fields[f].name));
    linked[output] = static_cast<int>(f);
  }
  for (size_t f = 0; f < fields.size(); ++f) {
    for (size_t o = 0; o < fields[f].joint_fields.size(); ++o) {
      if (fields[f].joint_fields[o] < 0)
        return invalid_argument(
            fmt::format("field '{}': its joint transform also makes '{}', "
                        "which the batch must hold",
                        fields[f].name, fields[f].joint->outputs()[o].name));
    }
  }
  return Status::ok();
}

}  // namespace

Result<BatchLayout> BatchLayout::create(const Schema& schema,
                                        const std::vector<FieldRequest>& requests,
                                        std::shared_ptr<const BatchTransform> batch,
                                        const std::map<std::string, uint64_t>& max_lengths) {
  if (requests.empty()) return invalid_argument("a batch needs at least one field");
  BatchLayout layout;
  layout.schema_ = schema;
  std::vector<BatchFieldType> written;
  for (const FieldRequest& request : requests) {
    if (layout.find(request.name) >= 0)
      return invalid_argument("field '" + request.name + "' is requested twice");
    std::shared_ptr<const Transform> transform = request.transform;
    if (request.joint && request.joint_output >= 0 &&
        static_cast<size_t>(request.joint_output) < request.joint->outputs().size()) {
      transform =
          std::make_shared<JointOutputField>(request.joint->outputs()[request.joint_output]);
    } else if (!transform) {
      STOKER_ASSIGN_OR_RETURN(transform, stored_field(schema, request, max_lengths));
    }
    BatchField out;
    out.name = request.name;
    out.written = {request.name, transform->dtype(), transform->sample_shape()};
    STOKER_ASSIGN_OR_RETURN(out.slot_bytes, sample_bytes_of(out.written));
    out.variable = transform->as_variable();
    if (out.variable && out.written.sample_shape.empty())
      return invalid_argument("field '" + request.name + "': a variable sample needs a shape");
    if (request.padded && !out.variable)
      return invalid_argument("field '" + request.name +
                              "' is fixed-size; only a variable field is padded");
    out.padded = request.padded;
    if (out.variable && batch)
      return invalid_argument("field '" + request.name +
                              "' varies in size; batch transforms take fixed fields only");
    layout.any_variable_ = layout.any_variable_ || out.variable;
    out.transform = std::move(transform);
    out.joint = request.joint;
    layout.record_prefix_ = std::max(layout.record_prefix_, out.transform->record_prefix());
    layout.copies_views_ = layout.copies_views_ && out.transform->copies_views();
    written.push_back(out.written);
    layout.fields_.push_back(std::move(out));
  }
  if (Status linked = link_joint_fields(layout.fields_, requests); !linked.is_ok()) return linked;
  std::vector<BatchFieldType> held = written;
  if (batch) {
    STOKER_ASSIGN_OR_RETURN(held, batch->outputs(written));
    if (held.size() != written.size())
      return invalid_argument("the batch transform changed the number of fields");
  }
  for (size_t f = 0; f < held.size(); ++f) {
    BatchField& out = layout.fields_[f];
    out.dtype = held[f].dtype;
    out.sample_shape = held[f].sample_shape;
    STOKER_ASSIGN_OR_RETURN(out.sample_bytes, sample_bytes_of(held[f]));
    out.slot_bytes = std::max(out.slot_bytes, out.sample_bytes);
  }
  layout.batch_ = std::move(batch);
  return layout;
}

Result<BatchLayout> BatchLayout::copy_all(const Schema& schema,
                                          std::shared_ptr<const BatchTransform> batch,
                                          const std::map<std::string, uint64_t>& max_lengths) {
  std::vector<FieldRequest> requests;
  for (const Field& f : schema.fields()) {
    if (f.is_fixed() || f.is_variable_length()) requests.push_back({f.name});
  }
  if (requests.empty())
    return invalid_argument(
        "the dataset has no fixed-size field to load as stored; its bytes "
        "fields need transforms (decoders)");
  return create(schema, requests, std::move(batch), max_lengths);
}

int BatchLayout::find(const std::string& name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

size_t BatchLayout::sample_bytes() const {
  size_t bytes = 0;
  for (const BatchField& f : fields_) bytes += f.slot_bytes;
  return bytes;
}

Status BatchLayout::write_sample(const SampleInput& input, uint8_t* const* dst,
                                 int64_t* const* shapes, size_t k) const {
  for (size_t f = 0; f < fields_.size(); ++f) {
    const BatchField& field = fields_[f];
    Status status;
    try {
      uint8_t* slot = dst[f] + k * field.slot_bytes;
      if (!field.variable) {
        status = field.transform->apply(input, slot);
      } else if (field.joint) {
        // Its message names the field; the joint runs once, for its first field.
        if (!field.joint_fields.empty()) status = write_joint(field, input, dst, shapes, k);
        if (!status.is_ok()) return status;
        continue;
      } else {
        status = write_variable(field, input, slot, shapes[f] + k * field.sample_shape.size());
      }
    } catch (const std::exception& e) {
      status = Status(StatusCode::kInternal, std::string("the transform threw: ") + e.what());
    } catch (...) {
      status = Status(StatusCode::kInternal, "the transform threw a non-standard exception");
    }
    if (!status.is_ok())
      return Status(status.code(), "field '" + field.name + "': " + status.message());
  }
  return Status::ok();
}

Status BatchLayout::write_joint(const BatchField& field, const SampleInput& input,
                                uint8_t* const* dst, int64_t* const* shapes, size_t k) const {
  thread_local std::vector<uint8_t*> slots;
  thread_local std::vector<int64_t*> shapes_out;
  slots.clear();
  shapes_out.clear();
  for (int f : field.joint_fields) {
    const BatchField& out = fields_[f];
    slots.push_back(dst[f] + k * out.slot_bytes);
    shapes_out.push_back(shapes[f] + k * out.sample_shape.size());
  }
  Status status = field.joint->apply(input, slots.data(), shapes_out.data());
  if (!status.is_ok()) return status;
  for (size_t o = 0; o < field.joint_fields.size(); ++o) {
    const BatchField& out = fields_[field.joint_fields[o]];
    status = check_within_capacity(shapes_out[o], out.sample_shape);
    if (!status.is_ok())
      return Status(status.code(), "field '" + out.name + "': " + status.message());
  }
  return Status::ok();
}

Status BatchLayout::write_samples(const ByteSpan* records, const IndexSpan& samples, size_t begin,
                                  size_t end, int64_t epoch, uint64_t seed, uint8_t* const* dst,
                                  uint8_t* failed, size_t* failed_at,
                                  const std::function<bool()>& cancelled, int64_t* const* shapes,
                                  const ViewedRecord* viewed, SampleCounters* counters,
                                  const int64_t* parts) const {
  if (any_variable_ && shapes == nullptr)
    return Status(StatusCode::kInternal, "a batch of variable fields needs their shapes' arrays");
  // A built record: every cache line the fields read, the last one included (records are not
  // line-aligned), kPrefetchDistance samples ahead. The prefix lies within every record (a
  // record holds at least the fixed part), and a prefetch never faults. (Bounding it by
  // record.size made GCC 12 -O2 drop the prefetches.) A record read in place and not built
  // (a token sample: a page at a random place): the first one's bytes here, each next one's
  // while the one before is widened (SampleInput::ahead), which measured faster than all of
  // them at once.
  const auto in_place = [records, viewed](size_t k) {
    return !records[k].data && viewed && viewed[k].views;
  };
  auto prefetch = [this, records](size_t k) {
    if (!records[k].data) return;  // read in place, or failed
    for (size_t at = 0; at < record_prefix_ + 63; at += 64)
      __builtin_prefetch(records[k].data + at);
  };
  for (size_t k = begin; k < std::min(end, begin + kPrefetchDistance); ++k) prefetch(k);
  if (begin < end && in_place(begin)) viewed[begin].views->prefetch(viewed[begin].record);
  Status first;
  SampleInput input;
  input.schema = &schema_;
  input.epoch = epoch;
  input.seed = seed;
  input.counters = counters;
  if (cancelled) input.cancelled = &cancelled;
  for (size_t k = begin; k < end; ++k) {
    if (k + kPrefetchDistance < end) prefetch(k + kPrefetchDistance);
    if (failed && failed[k]) continue;
    if (cancelled && cancelled()) return Status(StatusCode::kCancelled, "cancelled");
    input.record = records[k];
    if (viewed) input.viewed = viewed[k];
    input.ahead = k + 1 < end && in_place(k + 1) ? viewed[k + 1].views->bytes(viewed[k + 1].record)
                                                 : ByteSpan{};
    input.index = samples.sample(k);
    if (parts) input.part = parts[k];
    input.repeat = samples.repeat(k);
    Status status = write_sample(input, dst, shapes, k);
    if (status.is_ok()) continue;
    if (first.is_ok()) {
      first = std::move(status);
      *failed_at = k;
    }
    if (!failed) break;
    failed[k] = 1;
  }
  return first;
}

}  // namespace stoker
