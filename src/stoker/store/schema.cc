#include "stoker/store/schema.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace stoker {
namespace {

// `text` as a JSON string: quoted, control characters escaped, invalid UTF-8 replaced, so that
// a message naming it stays one line.
std::string json_quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace

const char* dtype_name(DType dtype) { return kDTypeNames.name(dtype); }

std::optional<DType> dtype_from_name(const std::string& name) { return kDTypeNames.find(name); }

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return 1;
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
      return 4;
    case DType::kBytes:
      return 0;
  }
  return 0;
}

int64_t Field::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t Field::fixed_bytes() const {
  return is_fixed() ? dtype_size(dtype) * static_cast<size_t>(num_elements()) : 0;
}

size_t Field::row_bytes() const {
  return is_variable_length() ? dtype_size(dtype) * static_cast<size_t>(num_elements()) : 0;
}

bool Field::operator==(const Field& other) const {
  return name == other.name && dtype == other.dtype && shape == other.shape &&
         length_dim == other.length_dim;
}

uint32_t Schema::format_version() const {
  const bool variable_length = std::any_of(fields_.begin(), fields_.end(),
                                           [](const Field& f) { return f.is_variable_length(); });
  return variable_length ? 2 : 1;
}

Result<Schema> Schema::create(std::vector<Field> fields) {
  if (fields.empty()) return invalid_argument("schema has no fields");
  std::set<std::string> names;
  Schema schema;
  for (const Field& f : fields) {
    if (f.name.empty()) return invalid_argument("schema field with an empty name");
    // Names appear in one-line error messages: no control characters.
    if (has_control_character(f.name))
      return invalid_argument("schema field name " + json_quoted(f.name) +
                              " holds a control character");
    if (!names.insert(f.name).second)
      return invalid_argument("schema field '" + f.name + "' repeats");
    if (f.dtype == DType::kBytes && (!f.shape.empty() || f.is_variable_length()))
      return invalid_argument("schema field '" + f.name + "': bytes fields have no shape");
    if (f.is_variable_length() && has_control_character(f.length_dim))
      return invalid_argument("schema field '" + f.name + "': dimension name " +
                              json_quoted(f.length_dim) + " holds a control character");
    uint64_t bytes = dtype_size(f.dtype);
    for (int64_t d : f.shape) {
      if (d <= 0 || d > kMaxDimension)
        return invalid_argument("schema field '" + f.name + "': dimension out of range (" +
                                std::to_string(d) + "; each is 1 to 2^31)");
      // bytes <= kMaxFixedBytes = 2^32 and d <= 2^31: the product cannot overflow.
      bytes *= static_cast<uint64_t>(d);
      if (bytes > kMaxFixedBytes)
        return invalid_argument("schema field '" + f.name + "' takes more than 4 GiB");
    }
    if (f.is_variable_length() && bytes > kMaxRowBytes)
      return invalid_argument("schema field '" + f.name + "': a row takes 4 GiB or more");
    if (f.is_fixed()) {
      schema.offsets_.push_back(schema.fixed_bytes_);
      schema.fixed_bytes_ += bytes;
      if (schema.fixed_bytes_ > kMaxFixedBytes)
        return invalid_argument("schema: the fixed fields take more than 4 GiB per record");
    } else {
      schema.offsets_.push_back(0);
      ++schema.num_variable_;
    }
  }
  schema.fields_ = std::move(fields);
  return schema;
}

std::string Schema::to_json() const {
  nlohmann::json fields = nlohmann::json::array();
  for (const Field& f : fields_) {
    nlohmann::json j = {{"name", f.name}, {"dtype", dtype_name(f.dtype)}};
    if (f.is_fixed()) j["shape"] = f.shape;
    if (f.is_variable_length()) {
      j["shape"] = nlohmann::json::array({f.length_dim});
      for (int64_t d : f.shape) j["shape"].push_back(d);
    }
    fields.push_back(j);
  }
  return nlohmann::json{{"fields", fields}}.dump();
}

Result<Schema> Schema::from_json(const std::string& text, const std::string& origin) {
  // Parsed JSON takes 10 to 40 times its text's bytes: the limit comes before parsing.
  if (text.size() > kMaxSchemaJsonBytes)
    return corrupt(origin + ": schema JSON of " + std::to_string(text.size()) +
                   " bytes, more than " + std::to_string(kMaxSchemaJsonBytes));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("fields") || !j["fields"].is_array())
    return corrupt(origin + ": schema is not valid JSON with a 'fields' array");
  std::vector<Field> fields;
  for (const auto& jf : j["fields"]) {
    if (!jf.is_object() || !jf.contains("name") || !jf["name"].is_string() ||
        !jf.contains("dtype") || !jf["dtype"].is_string())
      return corrupt(origin + ": schema field lacks a name or dtype");
    Field f;
    f.name = jf["name"].get<std::string>();
    if (has_control_character(f.name))
      return corrupt(origin + ": schema field name " + json_quoted(f.name) +
                     " holds a control character");
    const std::string dtype = jf["dtype"].get<std::string>();
    const std::optional<DType> known = dtype_from_name(dtype);
    if (!known)
      return corrupt(origin + ": schema field " + json_quoted(f.name) + " has unknown dtype " +
                     json_quoted(dtype));
    f.dtype = *known;
    if (jf.contains("shape")) {
      const nlohmann::json& shape = jf["shape"];
      if (!shape.is_array()) return corrupt(origin + ": schema field '" + f.name + "' shape");
      for (size_t i = 0; i < shape.size(); ++i) {
        // Only the leading dimension may be a name: that of a variable-length field.
        if (i == 0 && shape[i].is_string()) {
          f.length_dim = shape[i].get<std::string>();
          if (f.length_dim.empty())
            return corrupt(origin + ": schema field '" + f.name + "' has an empty dimension name");
          continue;
        }
        if (!shape[i].is_number_integer())
          return corrupt(origin + ": schema field '" + f.name + "' shape");
        f.shape.push_back(shape[i].get<int64_t>());
      }
    }
    fields.push_back(std::move(f));
  }
  Result<Schema> schema = create(std::move(fields));
  if (!schema.is_ok()) return corrupt(origin + ": " + schema.status().message());
  return schema;
}

int Schema::find(const std::string& name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace stoker
