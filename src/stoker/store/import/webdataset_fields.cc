#include "stoker/store/import/webdataset_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "stoker/store/import/npy_header.h"

namespace stoker {
namespace {

constexpr const char* kImageFields[] = {"jpg", "jpeg", "png", "webp"};
constexpr const char* kLabelFields[] = {"cls", "label", "class", "txt"};

ByteSpan span_of(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("({}{})", fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
}

// The rows of the array `header` describes, in a file of `size` bytes, as `field` holds it (1
// for a fixed field); kCorrupt saying why it does not.
Result<uint64_t> array_rows(const Field& field, const NpyHeader& header, uint64_t size) {
  const std::optional<DType> dtype = npy_dtype(header.descr);
  if (dtype != field.dtype)
    return corrupt(fmt::format("dtype '{}', not {}", header.descr, dtype_name(field.dtype)));
  const std::vector<int64_t>& shape = header.shape;
  if (field.is_variable_length()) {
    if (shape.size() != field.shape.size() + 1 ||
        !std::equal(field.shape.begin(), field.shape.end(), shape.begin() + 1))
      return corrupt(
          fmt::format("shape {}, not (N, {})", shape_text(shape), fmt::join(field.shape, ", ")));
  } else if (shape != field.shape) {
    return corrupt(fmt::format("shape {}, not {}", shape_text(shape), shape_text(field.shape)));
  }
  STOKER_ASSIGN_OR_RETURN(uint64_t bytes, npy_data_bytes(header, dtype_size(field.dtype)));
  if (bytes != size - header.data_offset)
    return corrupt(fmt::format("{} bytes of data where its shape {} takes {}",
                               size - header.data_offset, shape_text(shape), bytes));
  return field.is_variable_length() ? static_cast<uint64_t>(shape[0]) : 1;
}

// The field `name` of .npy members (bytes where none is read as an array), and its most rows.
std::pair<Field, uint64_t> npy_field(const std::string& name, const std::vector<TarIndex>& tars,
                                     const std::vector<std::vector<WebDatasetSample>>& samples) {
  std::optional<NpyHeader> first;
  Field fixed, variable;
  bool same = true;
  uint64_t max_rows = 0;
  for (size_t t = 0; t < tars.size(); ++t) {
    for (const WebDatasetSample& sample : samples[t]) {
      const std::optional<size_t> at = sample.problem.empty() ? sample.member(name) : std::nullopt;
      if (!at) continue;
      const Result<NpyHeader> header = parse_npy_header(span_of(tars[t].npy_heads[*at]));
      if (!header.is_ok()) continue;
      const NpyHeader& h = header.value();
      const uint64_t size = tars[t].listing.members[*at].size;
      if (!first) {
        const std::optional<DType> dtype = npy_dtype(h.descr);
        if (!dtype || !array_rows(Field(name, *dtype, h.shape), h, size).is_ok()) continue;
        first = h;
        fixed = Field(name, *dtype, h.shape);
        if (!h.shape.empty())
          variable = Field(name, *dtype, {h.shape.begin() + 1, h.shape.end()}, "N_" + name);
      }
      if (first->shape.empty()) continue;  // a scalar: fixed, whatever the others
      const Result<uint64_t> rows = array_rows(variable, h, size);
      if (!rows.is_ok()) continue;
      same = same && h.shape == first->shape;
      max_rows = std::max(max_rows, rows.value());
    }
  }
  if (!first) return {Field(name, DType::kBytes), 0};
  const bool whole =
      std::all_of(first->shape.begin(), first->shape.end(), [](int64_t d) { return d > 0; });
  if (first->shape.empty() || (same && whole)) return {fixed, 0};
  return {variable, max_rows};
}

}  // namespace

std::optional<size_t> image_member(const WebDatasetSample& sample) {
  for (const char* field : kImageFields)
    if (std::optional<size_t> member = sample.member(field)) return member;
  return std::nullopt;
}

WebDatasetFields webdataset_fields(const std::vector<TarIndex>& tars,
                                   const std::vector<std::vector<WebDatasetSample>>& samples,
                                   const std::vector<Field>& base, const std::string& label,
                                   const std::vector<std::string>& required) {
  std::map<std::string, uint64_t> holding;  // field -> the samples holding it
  uint64_t grouped = 0;                     // the samples the grouping accepts
  for (const std::vector<WebDatasetSample>& tar : samples)
    for (const WebDatasetSample& sample : tar)
      if (sample.problem.empty()) {
        ++grouped;
        for (const auto& field : sample.fields) ++holding[field.first];
      }
  for (const std::string& name : required) holding[name] = grouped;  // read, or a bad record
  WebDatasetFields out;
  out.label = label == "none" ? "" : label.empty() ? kLabelFields[0] : label;
  for (const char* name : kLabelFields) {
    if (!label.empty()) break;
    if (holding.count(name)) {
      out.label = name;
      break;
    }
  }
  holding.erase(out.label);
  for (const char* image : kImageFields) holding.erase(image);
  std::vector<Field> schema = base;
  for (const auto& [name, held] : holding) {
    if (held < grouped) {
      out.left_out.push_back(fmt::format("{} (in {} of {} samples)", name, held, grouped));
      continue;
    }
    const bool npy = is_npy_name("." + name);
    auto [field, rows] = npy ? npy_field(name, tars, samples)
                             : std::pair<Field, uint64_t>{Field(name, DType::kBytes), 0};
    schema.push_back(field);
    const Result<Schema> valid = Schema::create(schema);
    if (!valid.is_ok()) {
      schema.pop_back();
      out.left_out.push_back(fmt::format("{} ({})", name, valid.status().message()));
      continue;
    }
    out.fields.push_back(std::move(field));
    out.max_rows.push_back(rows);
  }
  return out;
}

Result<WebDatasetValue> webdataset_value(const Field& field, ByteSpan member) {
  if (field.dtype == DType::kBytes) return WebDatasetValue{member, 0};
  STOKER_ASSIGN_OR_RETURN(NpyHeader header, parse_npy_header(member));
  STOKER_ASSIGN_OR_RETURN(uint64_t rows, array_rows(field, header, member.size));
  return WebDatasetValue{{member.data + header.data_offset, member.size - header.data_offset},
                         rows};
}

Status set_webdataset_value(RecordEncoder& encoder, int index, const Field& field,
                            const WebDatasetValue& value) {
  if (field.dtype == DType::kBytes)
    return encoder.set_bytes(index, value.data.data, value.data.size);
  if (field.is_variable_length()) return encoder.set_rows(index, value.data.data, value.rows);
  if (value.data.size == field.fixed_bytes())
    return encoder.set_fixed(index, value.data.data, value.data.size);
  const std::vector<uint8_t> zeros(field.fixed_bytes());
  return encoder.set_fixed(index, zeros.data(), zeros.size());
}

}  // namespace stoker
