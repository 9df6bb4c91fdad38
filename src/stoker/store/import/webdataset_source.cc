#include "stoker/store/import/webdataset_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/webdataset_tars.h"
#include "stoker/util/ordered_map.h"

namespace stoker {
namespace {

constexpr const char* kImageFields[] = {"jpg", "jpeg", "png", "webp"};
constexpr uint64_t kMaxLabelBytes = 64;  // a longer `cls` member is no integer label

std::optional<size_t> image_member(const WebDatasetSample& sample) {
  for (const char* field : kImageFields)
    if (std::optional<size_t> member = sample.member(field)) return member;
  return std::nullopt;
}

// A `cls` member's integer: decimal digits, a sign, ASCII white space around (Python's int()).
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
  manifest.schema = image_record_schema();
  manifest.source = location;
  // Tars indexed on several threads (reads overlap), taken in order.
  const int workers = std::max(1, std::min(options.index_threads, static_cast<int>(tars.size())));
  STOKER_RETURN_IF_ERROR(ordered_map<Result<TarIndex>>(
      tars.size(), workers, 2 * static_cast<size_t>(workers),
      [&](size_t i, int /*worker*/) { return tar_index_of(*files, i, options.index_cache_dir); },
      [&](size_t i, Result<TarIndex>& indexed) -> Status {
        STOKER_RETURN_IF_ERROR(indexed.status());
        TarIndex index = std::move(indexed).value();
        std::vector<WebDatasetSample> samples = group_samples(index.listing);
        ShardInfo unit;
        unit.file = tars[i];
        unit.records = samples.size();
        unit.bytes = index.identity.size;
        source->starts_.push_back(manifest.records);
        manifest.records += unit.records;
        manifest.shards.push_back(std::move(unit));
        source->tars_.push_back(std::move(index));
        source->samples_.push_back(std::move(samples));
        return Status::ok();
      }));
  source->starts_.push_back(manifest.records);
  source->set_manifest(std::move(manifest));
  source->set_units_ahead(options.tars_ahead);
  return source;
}

void WebDatasetSource::units_ahead(const std::vector<int>& units) {
  files_->fetch_ahead(std::vector<size_t>(units.begin(), units.end()));
}

std::string WebDatasetSource::describe() const {
  return fmt::format("{} (WebDataset: {} tars, {} samples, read in place)",
                     spec_.find('\n') == std::string::npos ? spec_ : tars_.front().path + ", ...",
                     tars_.size(), manifest().records);
}

Result<ShardReader> WebDatasetSource::read_unit(int u, std::map<uint64_t, std::string>& bad) const {
  static const ImageRecordFields fields = ImageRecordFields::find(manifest().schema).value();
  const TarIndex& index = tars_[u];
  STOKER_ASSIGN_OR_RETURN(OpenFile tar, files_->open(u));
  const bool changed = !(tar.identity == index.identity);
  std::vector<std::vector<uint8_t>> records;
  const std::vector<WebDatasetSample>& samples = samples_[u];
  for (size_t i = 0; i < samples.size(); ++i) {
    const WebDatasetSample& sample = samples[i];
    const uint64_t global = starts_[u] + i;
    ImageRecordValues values;
    std::string image;
    // The reason the record is bad, "" if it is not.
    auto check = [&]() -> std::string {
      if (changed) return "changed after its index was built";
      if (!sample.problem.empty()) return sample.problem;
      const std::optional<size_t> image_at = image_member(sample);
      const std::optional<size_t> label_at = sample.member("cls");
      if (!image_at) return fmt::format("sample {}: no image (jpg, jpeg, png or webp)", sample.key);
      if (!label_at) return fmt::format("sample {}: no label (cls)", sample.key);
      const TarMember& member = index.listing.members[*image_at];
      if (member.size > kMaxImageFileBytes)
        return fmt::format("member {}: {} bytes, more than an image may have", member.name,
                           member.size);
      const std::string& label_name = index.listing.members[*label_at].name;
      if (index.listing.members[*label_at].size > kMaxLabelBytes)
        return fmt::format("member {}: not an integer label", label_name);
      Result<std::string> label = read_member(tar.fd, index, *label_at);
      if (!label.is_ok()) return label.status().message();
      const std::optional<int64_t> value = parse_label(label.value());
      if (!value) return fmt::format("member {}: not an integer label", label_name);
      values.label = *value;
      Result<std::string> read = read_member(tar.fd, index, *image_at);
      if (!read.is_ok()) return read.status().message();
      image = std::move(read).value();
      values.original = {reinterpret_cast<const uint8_t*>(image.data()), image.size()};
      Result<image::ImageHeader> header =
          image::read_image_header(values.original, options_.max_pixels);
      if (!header.is_ok())
        return fmt::format("member {}: {}", member.name, header.status().message());
      values.stored = values.original;
      values.height = header.value().height;
      values.width = header.value().width;
      return "";
    };
    if (std::string reason = check(); !reason.empty()) {
      bad[global] = std::move(reason);
      values = ImageRecordValues();
    }
    // An image is at most kMaxImageFileBytes: its record always encodes.
    records.push_back(encode_image_record(manifest().schema, fields, values).value());
  }
  return ShardReader::in_memory(index.path, manifest().schema, records);
}

Status WebDatasetSource::record_error(int unit, uint64_t record, uint64_t global,
                                      const Status& status) const {
  const std::string bad = bad_reason(global);
  if (!bad.empty())
    return Status(status.code(),
                  fmt::format("{}: {} (dataset record {})", tars_[unit].path, bad, global));
  const std::optional<size_t> image = image_member(samples_[unit][record]);
  const std::string member =
      image ? tars_[unit].listing.members[*image].name : samples_[unit][record].key;
  return Status(status.code(), fmt::format("{}: member {}: {} (dataset record {})",
                                           tars_[unit].path, member, status.message(), global));
}

}  // namespace stoker
