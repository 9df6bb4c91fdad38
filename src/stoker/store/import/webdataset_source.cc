#include "stoker/store/import/webdataset_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/webdataset_tars.h"
#include "stoker/store/record_encoder.h"
#include "stoker/util/ordered_map.h"

namespace stoker {
namespace {

constexpr uint64_t kMaxLabelBytes = 64;  // a longer label member is no integer label

// A label member's integer: decimal digits, a sign, ASCII white space around (Python's int()).
std::optional<int64_t> parse_label(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return std::nullopt;
  const size_t last = text.find_last_not_of(" \t\n\r\f\v");
  const char* begin = text.data() + first + (text[first] == '+' ? 1 : 0);
  const char* end = text.data() + last + 1;
  int64_t value = 0;
  const auto parsed = std::from_chars(begin, end, value);
  if (parsed.ec != std::errc() || parsed.ptr != end) return std::nullopt;
  return value;
}

}  // namespace

Result<std::shared_ptr<WebDatasetSource>> WebDatasetSource::open(
    const std::string& spec, const WebDatasetSourceOptions& options) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> tars, webdataset_tars(spec));
  return open(local_files(std::move(tars)), spec, options);
}

Result<std::shared_ptr<WebDatasetSource>> WebDatasetSource::open(
    std::shared_ptr<const InPlaceFiles> files, const std::string& location,
    const WebDatasetSourceOptions& options) {
  std::shared_ptr<WebDatasetSource> source(new WebDatasetSource());
  source->spec_ = location;
  source->options_ = options;
  source->files_ = files;
  const std::vector<std::string>& tars = files->names();
  Manifest manifest;
  manifest.source = location;
  // Tars indexed on several threads (reads overlap), taken in order.
  const int workers = std::max(1, std::min(options.index_threads, static_cast<int>(tars.size())));
  STOKER_RETURN_IF_ERROR(ordered_map<Result<TarIndex>>(
      tars.size(), workers, 2 * static_cast<size_t>(workers),
      [&](size_t i, int /*worker*/) { return tar_index_of(*files, i, options.index_cache_dir); },
      [&](size_t i, Result<TarIndex>& indexed) -> Status {
        STOKER_RETURN_IF_ERROR(indexed.status());
        TarIndex index = std::move(indexed).value();
        source->samples_.push_back(group_samples(index.listing));
        source->tars_.push_back(std::move(index));
        source->add_units(i, manifest);
        return Status::ok();
      }));
  source->starts_.push_back(manifest.records);
  for (const std::vector<WebDatasetSample>& tar : source->samples_)
    for (const WebDatasetSample& sample : tar)
      source->has_images_ |= image_member(sample).has_value();
  // Tars without any image (of videos, say) are records of a label and the other members.
  const Schema base = source->has_images_ ? image_record_schema()
                                          : Schema::create({{"label", DType::kInt64, {}}}).value();
  source->fields_ = webdataset_fields(source->tars_, source->samples_, base.fields(), options.label,
                                      options.required);
  std::vector<Field> fields = base.fields();
  for (size_t k = 0; k < source->fields_.fields.size(); ++k) {
    const Field& field = source->fields_.fields[k];
    fields.push_back(field);
    if (field.is_variable_length()) manifest.max_lengths[field.name] = source->fields_.max_rows[k];
  }
  // Valid: webdataset_fields keeps the fields the schema holds.
  manifest.schema = Schema::create(std::move(fields)).value();
  manifest.format_version = manifest.schema.format_version();
  if (source->has_images_) source->image_fields_ = ImageRecordFields::find(manifest.schema).value();
  source->set_manifest(std::move(manifest));
  source->set_units_ahead(options.tars_ahead);
  return source;
}

void WebDatasetSource::add_units(size_t tar, Manifest& manifest) {
  const std::vector<WebDatasetSample>& samples = samples_[tar];
  const std::vector<TarMember>& members = tars_[tar].listing.members;
  const bool whole = options_.samples_per_unit <= 0;
  const size_t per_unit =
      whole ? std::max<size_t>(samples.size(), 1) : static_cast<size_t>(options_.samples_per_unit);
  const int first_unit = static_cast<int>(units_.size());
  // An empty tar is one empty unit.
  for (size_t first = 0; first == 0 || first < samples.size(); first += per_unit) {
    const size_t count = std::min(per_unit, samples.size() - first);
    units_.push_back({tar, first, count});
    starts_.push_back(manifest.records + first);
    ShardInfo unit;
    unit.file = files_->names()[tar];
    unit.records = count;
    for (size_t i = first; i < first + count; ++i)
      for (const auto& field : samples[i].fields) unit.bytes += members[field.second].size;
    if (whole) unit.bytes = tars_[tar].identity.size;
    manifest.shards.push_back(std::move(unit));
  }
  manifest.records += samples.size();
  tar_units_.push_back({first_unit, static_cast<int>(units_.size())});
}

void WebDatasetSource::units_ahead(const std::vector<int>& units) {
  std::vector<size_t> tars;  // of the units, soonest first, each once
  for (const int u : units)
    if (std::find(tars.begin(), tars.end(), units_[u].tar) == tars.end())
      tars.push_back(units_[u].tar);
  files_->fetch_ahead(tars);
}

void WebDatasetSource::reads_planned(std::function<int64_t(int unit)> next_read, int64_t position) {
  // A tar is next read when the first of its units is.
  files_->plan(
      [next_read = std::move(next_read), ranges = tar_units_](size_t tar) {
        int64_t soonest = std::numeric_limits<int64_t>::max();
        for (int u = ranges[tar].first; u < ranges[tar].second; ++u)
          soonest = std::min(soonest, next_read(u));
        return soonest;
      },
      position);
}

Result<std::vector<FileStamp>> WebDatasetSource::file_stamps() const {
  std::vector<FileStamp> stamps;
  for (size_t i = 0; i < tars_.size(); ++i)
    stamps.push_back({files_->names()[i], tars_[i].identity.size, tars_[i].identity.stamp});
  return stamps;
}

std::string WebDatasetSource::describe() const {
  std::vector<std::string> read;
  for (const Field& field : fields_.fields) read.push_back(field.name);
  return fmt::format(
      "{} (WebDataset: {} tars, {} samples, label {}, fields {}{}{}, read in place)",
      spec_.find('\n') == std::string::npos ? spec_ : tars_.front().path + ", ...", tars_.size(),
      manifest().records, fields_.label.empty() ? "none" : fields_.label,
      read.empty() ? "none" : fmt::format("{}", fmt::join(read, ", ")),
      fields_.left_out.empty() ? "" : "; left out: ", fmt::join(fields_.left_out, ", "));
}

Result<ShardReader> WebDatasetSource::read_unit(int u, std::map<uint64_t, std::string>& bad,
                                                const std::function<bool()>& cancelled) const {
  const Schema& schema = manifest().schema;
  const TarUnit& unit = units_[u];
  const TarIndex& index = tars_[unit.tar];
  STOKER_ASSIGN_OR_RETURN(OpenFile tar, files_->open(unit.tar, cancelled));
  const bool changed = !(tar.identity == index.identity);
  const size_t first_extra = schema.fields().size() - fields_.fields.size();
  RecordEncoder encoder(schema);
  std::vector<std::vector<uint8_t>> records;
  for (size_t i = 0; i < unit.count; ++i) {
    const WebDatasetSample& sample = samples_[unit.tar][unit.first + i];
    const uint64_t global = starts_[u] + i;
    ImageRecordValues values;
    std::string image;
    std::vector<std::string> members(fields_.fields.size());  // the other fields' bytes
    std::vector<WebDatasetValue> extra(fields_.fields.size());
    // Member `at`'s bytes, or the reason the record is bad.
    auto read = [&](size_t at, std::string& out) -> std::string {
      const TarMember& member = index.listing.members[at];
      if (member.size > kMaxImageFileBytes)
        return fmt::format("member {}: {} bytes, more than a member may have", member.name,
                           member.size);
      Result<std::string> bytes = read_member(tar.fd, index, at);
      if (!bytes.is_ok()) return bytes.status().message();
      out = std::move(bytes).value();
      return "";
    };
    // The other members' fields; the reason the record is bad, "" if it is not.
    auto read_fields = [&]() -> std::string {
      for (size_t k = 0; k < fields_.fields.size(); ++k) {
        const Field& field = fields_.fields[k];
        const std::optional<size_t> at = sample.member(field.name);
        if (!at) return fmt::format("sample {}: no {}", sample.key, field.name);
        if (std::string why = read(*at, members[k]); !why.empty()) return why;
        Result<WebDatasetValue> value = webdataset_value(
            field, {reinterpret_cast<const uint8_t*>(members[k].data()), members[k].size()});
        if (!value.is_ok())
          return fmt::format("member {}: field {}: {}", index.listing.members[*at].name, field.name,
                             value.status().message());
        extra[k] = value.value();
      }
      return "";
    };
    // The image and the other fields (the sample has an image); the reason the record is bad.
    auto read_image = [&]() -> std::string {
      const size_t image_at = *image_member(sample);
      if (std::string why = read(image_at, image); !why.empty()) return why;
      values.original = {reinterpret_cast<const uint8_t*>(image.data()), image.size()};
      Result<image::ImageHeader> header =
          image::read_image_header(values.original, options_.max_pixels);
      if (!header.is_ok())
        return fmt::format("member {}: {}", index.listing.members[image_at].name,
                           header.status().message());
      values.stored = values.original;
      values.height = header.value().height;
      values.width = header.value().width;
      return read_fields();
    };
    // The reason the record is bad, "" if it is not.
    auto check = [&]() -> std::string {
      if (changed) return "changed after its index was built";
      if (!sample.problem.empty()) return sample.problem;
      const std::optional<size_t> image_at = image_member(sample);
      const std::optional<size_t> label_at = sample.member(fields_.label);
      if (!image_at && has_images_)
        return fmt::format("sample {}: no image (jpg, jpeg, png or webp)", sample.key);
      if (fields_.label.empty()) {
        values.label = -1;
        return has_images_ ? read_image() : read_fields();
      }
      if (!label_at) return fmt::format("sample {}: no label ({})", sample.key, fields_.label);
      const std::string& label_name = index.listing.members[*label_at].name;
      if (index.listing.members[*label_at].size > kMaxLabelBytes)
        return fmt::format("member {}: not an integer label", label_name);
      std::string label;
      if (std::string why = read(*label_at, label); !why.empty()) return why;
      const std::optional<int64_t> value = parse_label(label);
      if (!value) return fmt::format("member {}: not an integer label", label_name);
      values.label = *value;
      return has_images_ ? read_image() : read_fields();
    };
    if (std::string reason = check(); !reason.empty()) {
      bad[global] = std::move(reason);
      values = ImageRecordValues();
      extra.assign(extra.size(), WebDatasetValue());
    }
    // Every value is at most kMaxImageFileBytes: the record encodes.
    if (has_images_) {
      STOKER_RETURN_IF_ERROR(set_image_record(encoder, image_fields_, values));
    } else {
      STOKER_RETURN_IF_ERROR(encoder.set_fixed(0, &values.label, sizeof(values.label)));
    }
    for (size_t k = 0; k < fields_.fields.size(); ++k)
      STOKER_RETURN_IF_ERROR(set_webdataset_value(encoder, static_cast<int>(first_extra + k),
                                                  fields_.fields[k], extra[k]));
    records.push_back(encoder.encode());
  }
  return ShardReader::in_memory(index.path, schema, records);
}

Status WebDatasetSource::record_error(int unit, uint64_t record, uint64_t global,
                                      const Status& status) const {
  const TarIndex& tar = tars_[units_[unit].tar];
  const std::string bad = bad_reason(global);
  if (!bad.empty())
    return Status(status.code(), fmt::format("{}: {} (dataset record {})", tar.path, bad, global));
  const WebDatasetSample& sample = samples_[units_[unit].tar][units_[unit].first + record];
  const std::optional<size_t> image = image_member(sample);
  const std::string member = image ? tar.listing.members[*image].name : sample.key;
  return Status(status.code(), fmt::format("{}: member {}: {} (dataset record {})", tar.path,
                                           member, status.message(), global));
}

}  // namespace stoker
