#include "stoker/store/import/token_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "stoker/store/import/megatron_index.h"
#include "stoker/store/import/npy_header.h"
#include "stoker/util/mapped_read_guard.h"

namespace stoker {
namespace {

bool is_regular(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

bool has_suffix(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// PREFIX where `path` is PREFIX.bin, PREFIX.idx or PREFIX (no file) and both PREFIX.bin and
// PREFIX.idx are files: Megatron-LM's indexed dataset; "" otherwise.
std::string megatron_prefix(const std::string& path) {
  std::string prefix = path;
  if (has_suffix(path, ".bin") || has_suffix(path, ".idx")) {
    prefix.resize(path.size() - 4);
  } else if (is_regular(path)) {
    return "";
  }
  return is_regular(prefix + ".bin") && is_regular(prefix + ".idx") ? prefix : "";
}

// The first (up to) `n` bytes of the file at `path`; "" where it cannot be read.
std::string first_bytes(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(in ? n : static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return bytes;
}

// The layout of the .npy file `path` of `size` bytes.
Result<TokenLayout> npy_layout(const std::string& path, uint64_t size) {
  const std::string head = first_bytes(path, std::min<uint64_t>(size, kMaxNpyHeaderBytes));
  const ByteSpan bytes{reinterpret_cast<const uint8_t*>(head.data()), head.size()};
  return npy_token_layout(path, {bytes.data, npy_header_size(bytes)}, size);
}

}  // namespace

bool TokenSource::recognises(const std::string& path) {
  if (const std::string prefix = megatron_prefix(path); !prefix.empty())
    return has_megatron_magic(first_bytes(prefix + ".idx", kMegatronIndexHeaderBytes));
  std::error_code error;
  const uint64_t size = std::filesystem::file_size(path, error);
  return has_suffix(path, ".npy") && !error && npy_layout(path, size).is_ok();
}

Result<std::shared_ptr<TokenSource>> TokenSource::open(const std::string& path,
                                                       const TokenSourceOptions& options) {
  const int64_t length = options.seq_len;
  if (length < 1 || length > kMaxTokenSeqLen)
    return invalid_argument(
        fmt::format("{}: seq_len {}, not in [1, {}]", path, length, kMaxTokenSeqLen));
  std::shared_ptr<TokenSource> source(new TokenSource());
  source->path_ = path;
  source->seq_len_ = length;
  const std::string prefix = megatron_prefix(path);
  std::vector<std::string> names{path};
  if (!prefix.empty()) {
    names = {prefix + ".bin", prefix + ".idx"};
  } else if (!is_regular(path)) {
    return not_found(
        fmt::format("{}: no such token file (a nanoGPT .bin, a .npy, or Megatron-LM's "
                    "PREFIX.bin with PREFIX.idx)",
                    path));
  }
  source->files_ = local_files(names);
  STOKER_ASSIGN_OR_RETURN(OpenFile data, source->files_->open(0, nullptr));
  source->identities_.push_back(data.identity);
  const uint64_t size = data.identity.size;
  if (!prefix.empty()) {
    STOKER_ASSIGN_OR_RETURN(OpenFile index, source->files_->open(1, nullptr));
    source->identities_.push_back(index.identity);
    const IndexRead read = [&](uint64_t at, size_t n) -> Result<std::string> {
      std::string bytes(n, '\0');
      STOKER_ASSIGN_OR_RETURN(
          size_t got, read_at(index.fd, names[1], at, reinterpret_cast<uint8_t*>(bytes.data()), n));
      bytes.resize(got);
      return bytes;
    };
    STOKER_ASSIGN_OR_RETURN(
        MegatronIndex parsed,
        parse_megatron_index(names[1], index.identity.size, read, names[0], size));
    source->layout_ = std::move(parsed.layout);
    source->documents_ = parsed.documents;
    source->format_ = "Megatron-LM indexed dataset";
  } else if (has_suffix(path, ".npy")) {
    STOKER_ASSIGN_OR_RETURN(source->layout_, npy_layout(path, size));
    source->format_ = ".npy";
  } else {
    STOKER_ASSIGN_OR_RETURN(source->layout_, raw_token_layout(path, size, options.raw_type));
    source->format_ = "nanoGPT .bin";
  }
  const uint64_t tokens = source->layout_.tokens;
  const auto per_sample = static_cast<uint64_t>(length);
  if (tokens < per_sample + 1)
    return invalid_argument(fmt::format("{}: {} tokens, fewer than seq_len + 1 ({}): no sample",
                                        names[0], tokens, per_sample + 1));
  if (source->layout_.spans.size() == 1 && data.offset == 0) {
    STOKER_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(names[0]));
    if (mapped.size() != size)
      return io_error(fmt::format("{}: changed while it was opened (its size)", names[0]));
    source->mapping_ = std::make_shared<const MappedFile>(std::move(mapped));
  }
  Manifest manifest;
  manifest.source = path;
  // Valid: a shape of 1 to 2^22.
  manifest.schema =
      Schema::create({{"input_ids", DType::kInt64, {length}}, {"labels", DType::kInt64, {length}}})
          .value();
  manifest.format_version = manifest.schema.format_version();
  manifest.records = (tokens - 1) / per_sample;
  source->unit_samples_ = std::max<int64_t>(1, kUnitTokens / length);
  const auto unit_samples = static_cast<uint64_t>(source->unit_samples_);
  for (uint64_t first = 0; first < manifest.records; first += unit_samples) {
    ShardInfo unit;
    unit.file = fmt::format("{}#{}", names[0], manifest.shards.size());
    unit.records = std::min(unit_samples, manifest.records - first);
    unit.bytes = (unit.records * per_sample + 1) * token_type_size(source->layout_.type);
    manifest.shards.push_back(std::move(unit));
  }
  source->set_manifest(std::move(manifest));
  return source;
}

Result<std::vector<FileStamp>> TokenSource::file_stamps() const {
  std::vector<FileStamp> stamps;
  for (size_t i = 0; i < identities_.size(); ++i)
    stamps.push_back({files_->names()[i], identities_[i].size, identities_[i].stamp});
  return stamps;
}

std::string TokenSource::describe() const {
  return fmt::format("{} ({}: {} {} tokens{}, {} samples of seq_len {}, read in place)", path_,
                     format_, layout_.tokens, token_type_name(layout_.type),
                     documents_ ? fmt::format(" in {} documents", documents_) : "",
                     manifest().records, seq_len_);
}

Status TokenSource::read_tokens(const OpenFile& data, uint64_t first, size_t n,
                                int64_t* out) const {
  const std::string& name = files_->names()[0];
  const size_t item = token_type_size(layout_.type);
  // The span holding token `first`: the last that starts at or before it.
  auto span = std::upper_bound(layout_.spans.begin(), layout_.spans.end(), first,
                               [](uint64_t token, const TokenSpan& s) { return token < s.first; });
  --span;
  std::vector<uint8_t> bytes;
  for (size_t done = 0; done < n; ++span) {
    const uint64_t at = first + done;
    const uint64_t skip = at - span->first;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, span->count - skip));
    bytes.resize(take * item);
    const uint64_t offset = data.offset + span->offset + skip * item;
    STOKER_ASSIGN_OR_RETURN(size_t got, read_at(data.fd, name, offset, bytes.data(), bytes.size()));
    if (got != bytes.size())
      return corrupt(fmt::format("{}: the file ends before byte {}", name, offset + bytes.size()));
    if (std::optional<BadToken> bad = widen_tokens(layout_.type, bytes.data(), take, out + done))
      return bad_token(at + bad->at, bad->value);
    done += take;
  }
  return Status::ok();
}

Status TokenSource::bad_token(uint64_t token, const std::string& value) const {
  const uint64_t sample = std::min(token / static_cast<uint64_t>(seq_len_), manifest().records - 1);
  return corrupt(fmt::format("{}: sample {}: token {} is {}, not a token id (0 to 2^63 - 1)",
                             files_->names()[0], sample, token, value));
}

Result<ShardReader> TokenSource::viewed_unit(int u, uint64_t first_sample, uint64_t records) const {
  const size_t item = token_type_size(layout_.type);
  const auto length = static_cast<uint64_t>(seq_len_);
  const uint64_t first = first_sample * length;
  const uint8_t* base = mapping_->data() + layout_.spans[0].offset + first * item;
  if (token_type_checked(layout_.type)) {
    // Read in a guard: a file shrunk since the check of its identity reads as zeros, refused.
    MappedReadGuard guard;
    const std::optional<BadToken> bad = find_bad_token(layout_.type, base, records * length + 1);
    if (!guard.changed_file().empty())
      return io_error(fmt::format("{}: {}", guard.changed_file(), kChangedSizeText));
    if (bad) return bad_token(first + bad->at, bad->value);
  }
  RecordViews views;
  views.base = base;
  views.stride = length * item;
  views.fields = {{layout_.type, 0, DType::kInt64}, {layout_.type, item, DType::kInt64}};
  views.hold = mapping_;
  return ShardReader::viewed(manifest().shards[u].file, manifest().schema, records,
                             std::move(views));
}

Result<ShardReader> TokenSource::read_unit(int u, std::map<uint64_t, std::string>& /*bad*/,
                                           const std::function<bool()>& cancelled) const {
  const Schema& schema = manifest().schema;
  const ShardInfo& unit = manifest().shards[u];
  STOKER_ASSIGN_OR_RETURN(OpenFile data, files_->open(0, cancelled));
  for (size_t i = 0; i < identities_.size(); ++i) {
    Result<FileIdentity> now = i == 0 ? Result<FileIdentity>(data.identity) : files_->identity(i);
    if (!now.is_ok()) return now.status();
    if (now.value() != identities_[i])
      return io_error(
          fmt::format("{}: changed since it was opened (its size or time)", files_->names()[i]));
  }
  const auto length = static_cast<size_t>(seq_len_);
  const uint64_t first_sample = static_cast<uint64_t>(u) * static_cast<uint64_t>(unit_samples_);
  if (mapping_) return viewed_unit(u, first_sample, unit.records);
  std::vector<int64_t> tokens(unit.records * length + 1);
  STOKER_RETURN_IF_ERROR(read_tokens(data, first_sample * length, tokens.size(), tokens.data()));
  const size_t inputs = schema.fixed_offset(0), labels = schema.fixed_offset(1);
  std::vector<std::vector<uint8_t>> records(unit.records,
                                            std::vector<uint8_t>(schema.fixed_bytes()));
  for (size_t k = 0; k < records.size(); ++k) {
    std::memcpy(records[k].data() + inputs, &tokens[k * length], length * sizeof(int64_t));
    std::memcpy(records[k].data() + labels, &tokens[k * length + 1], length * sizeof(int64_t));
  }
  return ShardReader::in_memory(unit.file, schema, records);
}

Status TokenSource::record_error(int /*unit*/, uint64_t /*record*/, uint64_t global,
                                 const Status& status) const {
  const uint64_t first = global * static_cast<uint64_t>(seq_len_);
  return Status(status.code(),
                fmt::format("{}: sample {} (tokens [{}, {})): {}", files_->names()[0], global,
                            first, first + static_cast<uint64_t>(seq_len_) + 1, status.message()));
}

}  // namespace stoker
