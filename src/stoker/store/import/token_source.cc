#include "stoker/store/import/token_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "stoker/store/import/megatron_index.h"
#include "stoker/store/import/npy_header.h"
#include "stoker/store/import/token_scan.h"
#include "stoker/util/mapped_read_guard.h"
#include "stoker/util/regular_file.h"

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

// Why `path` names no token file: the first of it, PREFIX.bin and PREFIX.idx that is there but
// is no regular file, said by RegularFile (without opening it); else not found.
Status no_token_file(const std::string& path) {
  const std::string prefix =
      has_suffix(path, ".bin") || has_suffix(path, ".idx") ? path.substr(0, path.size() - 4) : path;
  for (const std::string& name : {path, prefix + ".bin", prefix + ".idx"}) {
    std::error_code error;
    if (std::filesystem::exists(name, error) && !is_regular(name))
      return RegularFile::open(name).status();
  }
  return not_found(
      fmt::format("{}: no such token file (a nanoGPT .bin, a .npy, or Megatron-LM's "
                  "PREFIX.bin with PREFIX.idx)",
                  path));
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

bool wants_index_documents(const TokenSourceOptions& options) {
  return options.eos_id < 0 &&
         (options.position_ids || options.cu_seqlens || options.mask_boundary_labels ||
          options.document_mask || options.packing != TokenPacking::kNone ||
          options.prompt_end_id >= 0);
}

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
  const std::optional<TokenColumn>& column = options.column;
  const bool in_place = column && column->in_place;
  const std::string prefix = in_place ? "" : megatron_prefix(path);
  std::vector<std::string> names{path};
  if (in_place) {
    names = column->files;
  } else if (!prefix.empty()) {
    names = {prefix + ".bin", prefix + ".idx"};
  } else if (!is_regular(path)) {
    return no_token_file(path);
  }
  source->shown_ = names[0];
  if (column) {
    source->path_ = source->shown_ = column->location;
    source->decoded_ = !in_place;
    if (!in_place) names.insert(names.end(), column->files.begin(), column->files.end());
  }
  source->files_ = local_files(names);
  STOKER_ASSIGN_OR_RETURN(OpenFile data, source->files_->open(0, nullptr));
  source->identities_.push_back(data.identity);
  const uint64_t size = data.identity.size;
  if (in_place) {
    if (data.identity != column->identities[0])
      return io_error(fmt::format("{}: changed since it was read (its size or time)", names[0]));
    source->identities_ = column->identities;
    source->layout_ = column->layout;
    source->documents_ = column->documents;
    source->document_starts_ = column->document_starts;
    source->index_name_ = column->location;
    source->format_ = fmt::format("{} column '{}'", column->format, column->column);
  } else if (!prefix.empty()) {
    STOKER_ASSIGN_OR_RETURN(OpenFile index, source->files_->open(1, nullptr));
    source->identities_.push_back(index.identity);
    if (column)
      source->identities_.insert(source->identities_.end(), column->identities.begin(),
                                 column->identities.end());
    const IndexRead read = [&](uint64_t at, size_t n) -> Result<std::string> {
      std::string bytes(n, '\0');
      STOKER_ASSIGN_OR_RETURN(
          size_t got, read_at(index.fd, names[1], at, reinterpret_cast<uint8_t*>(bytes.data()), n));
      bytes.resize(got);
      return bytes;
    };
    STOKER_ASSIGN_OR_RETURN(MegatronIndex parsed,
                            parse_megatron_index(names[1], index.identity.size, read, names[0],
                                                 size, wants_index_documents(options)));
    source->layout_ = std::move(parsed.layout);
    source->documents_ = parsed.documents;
    source->document_starts_ = std::move(parsed.document_starts);
    source->index_name_ = names[1];
    source->format_ = column
                          ? fmt::format("{} column '{}', decoded", column->format, column->column)
                          : "Megatron-LM indexed dataset";
  } else if (has_suffix(path, ".npy")) {
    STOKER_ASSIGN_OR_RETURN(source->layout_, npy_layout(path, size));
    source->format_ = ".npy";
  } else {
    STOKER_ASSIGN_OR_RETURN(source->layout_, raw_token_layout(path, size, options.raw_type));
    source->format_ = "nanoGPT .bin";
  }
  const uint64_t tokens = source->layout_.tokens;
  const auto per_sample = static_cast<uint64_t>(length);
  const bool packed = options.packing != TokenPacking::kNone;
  if (packed ? tokens == 0 : tokens < per_sample + 1)
    return invalid_argument(fmt::format("{}: {} tokens, fewer than seq_len + 1 ({}): no sample",
                                        source->shown_, tokens, packed ? 1 : per_sample + 1));
  if (source->layout_.spans.size() == 1 && data.offset == 0) {
    STOKER_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(names[0]));
    if (mapped.size() != size)
      return io_error(fmt::format("{}: changed while it was opened (its size)", names[0]));
    source->mapping_ = std::make_shared<const MappedFile>(std::move(mapped));
  }
  std::vector<Field> fields{{"input_ids", DType::kInt64, {length}},
                            {"labels", DType::kInt64, {length}}};
  STOKER_RETURN_IF_ERROR(source->set_boundaries(options, fields));
  Manifest manifest;
  manifest.source = source->path_;
  // Valid: a shape of 1 to 2^22.
  manifest.schema = Schema::create(std::move(fields)).value();
  manifest.format_version = manifest.schema.format_version();
  if (options.cu_seqlens) manifest.max_lengths["cu_seqlens"] = per_sample + 1;
  manifest.records = (tokens - 1) / per_sample;
  if (packed || options.prompt_end_id >= 0) {  // the whole array's documents
    STOKER_ASSIGN_OR_RETURN(std::vector<uint64_t> starts, source->array_document_starts(data));
    if (options.prompt_end_id >= 0)
      STOKER_RETURN_IF_ERROR(
          source->set_prompts(data, starts, static_cast<uint64_t>(options.prompt_end_id)));
    if (packed) {
      source->plan_ = std::make_shared<const PackingPlan>(
          pack_documents(starts, tokens, per_sample, static_cast<uint64_t>(options.packing_bins),
                         options.packing));
      manifest.records = source->plan_->rows();
    }
  }
  source->tokens_ = static_cast<int64_t>(packed ? tokens : manifest.records * per_sample);
  source->unit_samples_ = std::max<int64_t>(1, kUnitTokens / length);
  const auto unit_samples = static_cast<uint64_t>(source->unit_samples_);
  for (uint64_t first = 0; first < manifest.records; first += unit_samples) {
    ShardInfo unit;
    unit.file = fmt::format("{}#{}", names[0], manifest.shards.size());
    unit.records = std::min(unit_samples, manifest.records - first);
    unit.bytes = (unit.records * per_sample + 1) * token_type_size(source->layout_.type);
    if (options.document_mask) unit.bytes += unit.records * per_sample * per_sample;
    if (packed) unit.index_checksum = source->plan_->digest(first, unit.records);
    manifest.shards.push_back(std::move(unit));
  }
  source->set_manifest(std::move(manifest));
  // A unit of the mapping is views of it (and a packed unit's rows, a reference to the plan):
  // kept once read, pinned without a lock. With boundaries, a unit's document starts are its
  // own (about 0.2% of its bytes): those units are let go when the plan is done with them.
  if (source->mapping_ && (packed || !source->boundaries_)) source->set_units_stay();
  return source;
}

Status TokenSource::set_boundaries(const TokenSourceOptions& options, std::vector<Field>& fields) {
  const std::string& name = shown_;
  const bool packed = options.packing != TokenPacking::kNone;
  if (options.vocab_size == 0 || options.vocab_size < -1)
    return invalid_argument(
        fmt::format("{}: vocab_size {}, not at least 1 (-1: none)", name, options.vocab_size));
  vocab_size_ = options.vocab_size;
  for (const auto& [param, id] : {std::pair<const char*, int64_t>{"eos_id", options.eos_id},
                                  {"pad_id", packed ? options.pad_id : -1},
                                  {"prompt_end_id", options.prompt_end_id}})
    if (vocab_size_ > 0 && id >= vocab_size_)
      return invalid_argument(
          fmt::format("{}: {} {} is not below vocab_size {}", name, param, id, vocab_size_));
  const char* asked = packed                         ? "packing"
                      : options.prompt_end_id >= 0   ? "prompt_end_id"
                      : options.position_ids         ? "return_position_ids"
                      : options.cu_seqlens           ? "return_cu_seqlens"
                      : options.mask_boundary_labels ? "mask_boundary_labels"
                      : options.document_mask        ? "return_document_mask"
                                                     : nullptr;
  if (options.attention_mask && !packed)
    return invalid_argument(
        fmt::format("{}: return_attention_mask with packing 'none': concatenate-and-split "
                    "samples have no padding (every token attends); pack with first_fit or "
                    "best_fit for padded rows",
                    name));
  if (!asked) {
    if (options.eos_id < 0) return Status::ok();
    return invalid_argument(
        fmt::format("{}: eos_id {} given, but no field asks for document boundaries "
                    "(return_position_ids, return_cu_seqlens, mask_boundary_labels, "
                    "return_document_mask or packing)",
                    name, options.eos_id));
  }
  const uint64_t type_max = token_type_max(layout_.type);
  if (options.eos_id >= 0) {
    if (static_cast<uint64_t>(options.eos_id) > type_max)
      return invalid_argument(fmt::format("{}: eos_id {} is no {} token (0 to {})", name,
                                          options.eos_id, token_type_name(layout_.type), type_max));
    document_starts_.clear();
  } else if (index_name_.empty()) {
    return invalid_argument(
        fmt::format("{}: {} needs document boundaries: give eos_id, the end-of-document token "
                    "id (nanoGPT's GPT-2 EOT is 50256), or read a Megatron-LM dataset (its .idx)",
                    name, asked));
  } else if (documents_ == 0) {
    return invalid_argument(
        fmt::format("{}: {} needs document boundaries, but its document index holds no "
                    "document: give eos_id, the end-of-document token id",
                    index_name_, asked));
  }
  const int64_t length = fields[0].shape[0];
  if (options.document_mask && length > kMaxMaskSeqLen)
    return invalid_argument(fmt::format(
        "{}: return_document_mask with seq_len {}: a mask of seq_len^2 bytes a sample, seq_len "
        "at most {}",
        name, length, kMaxMaskSeqLen));
  if (options.prompt_end_id >= 0 && (static_cast<uint64_t>(options.prompt_end_id) > type_max ||
                                     options.prompt_end_id == options.eos_id))
    return invalid_argument(
        fmt::format("{}: prompt_end_id {} is no {} token (0 to {}) other than "
                    "eos_id",
                    name, options.prompt_end_id, token_type_name(layout_.type), type_max));
  if (packed && (options.pad_id < 0 || static_cast<uint64_t>(options.pad_id) > type_max))
    return invalid_argument(fmt::format("{}: pad_id {} is no {} token (0 to {})", name,
                                        options.pad_id, token_type_name(layout_.type), type_max));
  if (packed && options.packing_bins < 1)
    return invalid_argument(
        fmt::format("{}: packing_bins {}, not at least 1", name, options.packing_bins));
  eos_id_ = options.eos_id;
  pad_id_ = options.pad_id;
  boundaries_ = true;
  if (options.mask_boundary_labels || packed || options.prompt_end_id >= 0)
    boundary_fields_.labels = 1;
  boundary_fields_.mask_boundaries = options.mask_boundary_labels || packed;
  const auto add = [&fields](Field field) {
    fields.push_back(std::move(field));
    return static_cast<int>(fields.size() - 1);
  };
  if (options.position_ids || packed)
    boundary_fields_.position_ids = add({"position_ids", DType::kInt64, {length}});
  if (packed) boundary_fields_.segment_ids = add({"segment_ids", DType::kInt64, {length}});
  if (options.cu_seqlens)
    boundary_fields_.cu_seqlens = add({"cu_seqlens", DType::kInt64, {}, "segments"});
  if (options.document_mask)
    boundary_fields_.document_mask = add({"document_mask", DType::kUint8, {length, length}});
  if (options.attention_mask)
    boundary_fields_.attention_mask = add({"attention_mask", DType::kInt64, {length}});
  return Status::ok();
}

Result<std::vector<FileStamp>> TokenSource::file_stamps() const {
  std::vector<FileStamp> stamps;
  for (size_t i = decoded_ ? 2 : 0; i < identities_.size(); ++i)
    stamps.push_back({files_->names()[i], identities_[i].size, identities_[i].stamp});
  return stamps;
}

std::string TokenSource::describe() const {
  return fmt::format("{} ({}: {} {} tokens{}, {} {} of seq_len {}, read in place{})", path_,
                     format_, layout_.tokens, token_type_name(layout_.type),
                     documents_ ? fmt::format(" in {} documents", documents_) : "",
                     manifest().records, plan_ ? "packed rows" : "samples", seq_len_,
                     decoded_ ? fmt::format(" from {}", files_->names()[0]) : "");
}

Status TokenSource::read_stored(const OpenFile& data, uint64_t first, size_t n,
                                uint8_t* out) const {
  const size_t item = token_type_size(layout_.type);
  // The span holding token `first`: the last that starts at or before it.
  auto span = std::upper_bound(layout_.spans.begin(), layout_.spans.end(), first,
                               [](uint64_t token, const TokenSpan& s) { return token < s.first; });
  --span;
  OpenFile other;  // the spans' file other than the first (an in-place column's), once opened
  uint32_t other_file = 0;
  for (size_t done = 0; done < n; ++span) {
    const std::string& name = files_->names()[span->file];
    if (span->file != 0 && span->file != other_file) {
      STOKER_ASSIGN_OR_RETURN(other, files_->open(span->file, nullptr));
      other_file = span->file;
      if (other.identity != identities_[other_file])
        return io_error(fmt::format("{}: changed since it was opened (its size or time)", name));
    }
    const OpenFile& in = span->file == 0 ? data : other;
    const uint64_t skip = first + done - span->first;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, span->count - skip));
    const uint64_t offset = in.offset + span->offset + skip * item;
    STOKER_ASSIGN_OR_RETURN(size_t got,
                            read_at(in.fd, name, offset, out + done * item, take * item));
    if (got != take * item)
      return corrupt(fmt::format("{}: the file ends before byte {}", name, offset + take * item));
    done += take;
  }
  return Status::ok();
}

Status TokenSource::read_tokens(const OpenFile& data, uint64_t first, size_t n,
                                int64_t* out) const {
  std::vector<uint8_t> bytes(n * token_type_size(layout_.type));
  STOKER_RETURN_IF_ERROR(read_stored(data, first, n, bytes.data()));
  if (std::optional<BadToken> bad = widen_tokens(layout_.type, bytes.data(), n, out))
    return bad_token(first + bad->at, bad->value);
  return check_vocab(layout_.type, bytes.data(), first, n);
}

Status TokenSource::bad_token(uint64_t token, const std::string& value,
                              const std::string& why) const {
  const std::string& name = shown_;
  const std::string what = fmt::format("token {} is {}, {}", token, value, why);
  const auto length = static_cast<uint64_t>(seq_len_);
  // A packed row's pieces are not in token order; the tail after the last label is in no sample.
  if (plan_ || token > manifest().records * length)
    return corrupt(fmt::format("{}: {}", name, what));
  const uint64_t sample = std::min(token / length, manifest().records - 1);
  return corrupt(fmt::format("{}: sample {}: {}", name, sample, what));
}

Status TokenSource::check_vocab(TokenType type, const uint8_t* tokens, uint64_t first,
                                size_t n) const {
  if (vocab_size_ < 0 || token_type_max(type) < static_cast<uint64_t>(vocab_size_))
    return Status::ok();
  const std::optional<size_t> at =
      first_token_from(type, tokens, n, static_cast<uint64_t>(vocab_size_));
  if (!at) return Status::ok();
  int64_t value = 0;
  widen_to_int64(type, tokens + *at * token_type_size(type), 1, reinterpret_cast<uint8_t*>(&value));
  return bad_token(first + *at, std::to_string(value),
                   fmt::format("not below vocab_size {}", vocab_size_));
}

std::vector<uint32_t> TokenSource::unit_document_starts(int u, uint64_t first, TokenType type,
                                                        const uint8_t* tokens) const {
  const uint64_t labels_end = manifest().shards[u].records * static_cast<uint64_t>(seq_len_);
  if (eos_id_ >= 0)
    return eos_document_starts(type, tokens, labels_end, static_cast<uint64_t>(eos_id_));
  auto from = std::upper_bound(document_starts_.begin(), document_starts_.end(), first);
  auto to = std::upper_bound(from, document_starts_.end(), first + labels_end);
  std::vector<uint32_t> starts;
  for (auto s = from; s != to; ++s) starts.push_back(static_cast<uint32_t>(*s - first));
  return starts;
}

Result<ShardReader> TokenSource::viewed_unit(int u, uint64_t first, TokenType type,
                                             const uint8_t* tokens,
                                             std::shared_ptr<const void> hold) const {
  const size_t item = token_type_size(type);
  const auto length = static_cast<uint64_t>(seq_len_);
  const uint64_t records = manifest().shards[u].records;
  std::vector<uint32_t> starts;
  STOKER_RETURN_IF_ERROR(check_mapped(tokens, first, records * length + 1, [&] {
    if (boundaries_) starts = unit_document_starts(u, first, type, tokens);
  }));
  RecordViews views;
  views.base = tokens;
  views.stride = length * item;
  views.fields = {{type, 0, DType::kInt64}, {type, item, DType::kInt64}};
  views.hold = std::move(hold);
  if (boundaries_) {
    views.computed = std::make_shared<const SampleBoundaries>(
        std::move(starts), seq_len_, boundary_fields_, type, tokens, PromptMasks{prompts_, first});
    views.fields[1].computed = boundary_fields_.labels == 1;
    const std::vector<Field>& fields = manifest().schema.fields();
    for (size_t f = 2; f < fields.size(); ++f)
      views.fields.push_back({type, 0, fields[f].dtype, true});
  }
  return ShardReader::viewed(manifest().shards[u].file, manifest().schema, records,
                             std::move(views));
}

Status TokenSource::check_mapped(const uint8_t* tokens, uint64_t first, size_t n,
                                 const std::function<void()>& also) const {
  // Read in a guard: a file shrunk since the check of its identity reads as zeros, refused.
  MappedReadGuard guard;
  std::optional<BadToken> bad;
  if (token_type_checked(layout_.type)) bad = find_bad_token(layout_.type, tokens, n);
  Status out_of_vocab = Status::ok();
  if (!bad) out_of_vocab = check_vocab(layout_.type, tokens, first, n);
  if (!bad && out_of_vocab.is_ok()) also();
  if (!guard.changed_file().empty())
    return io_error(fmt::format("{}: {}", guard.changed_file(), kChangedSizeText));
  if (bad) return bad_token(first + bad->at, bad->value);
  return out_of_vocab;
}

Result<std::vector<uint64_t>> TokenSource::positions_after(const OpenFile& data,
                                                           uint64_t id) const {
  const size_t item = token_type_size(layout_.type);
  std::vector<uint64_t> after;
  std::vector<int64_t> read;
  for (uint64_t first = 0; first < layout_.tokens; first += kUnitTokens) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(kUnitTokens, layout_.tokens - first));
    TokenType type = layout_.type;
    const uint8_t* tokens = nullptr;
    if (mapping_) {
      tokens = mapping_->data() + layout_.spans[0].offset + first * item;
    } else {
      read.resize(n);
      STOKER_RETURN_IF_ERROR(read_tokens(data, first, n, read.data()));
      type = TokenType::kInt64;
      tokens = reinterpret_cast<const uint8_t*>(read.data());
    }
    for (uint32_t s : eos_document_starts(type, tokens, n, id)) after.push_back(first + s);
  }
  return after;
}

Result<TokenSummary> TokenSource::summarize() const {
  TokenSummary summary{format_,
                       token_type_name(layout_.type),
                       layout_.tokens,
                       {},
                       manifest().records,
                       seq_len_,
                       plan_ != nullptr};
  summary.vocab_size = vocab_size_;
  STOKER_ASSIGN_OR_RETURN(OpenFile data, files_->open(0, nullptr));
  const size_t item = token_type_size(layout_.type);
  uint64_t ends = 0;
  uint64_t after_last_end = 0;
  // The largest and the end-of-document tokens of n tokens of `type` from token `first`.
  const auto tally = [&](TokenType type, const uint8_t* tokens, uint64_t first, size_t n) {
    summary.largest_id = std::max(summary.largest_id, largest_token(type, tokens, n));
    if (eos_id_ < 0) return;
    const std::vector<uint32_t> after =
        eos_document_starts(type, tokens, n, static_cast<uint64_t>(eos_id_));
    ends += after.size();
    if (!after.empty()) after_last_end = first + after.back();
  };
  std::vector<int64_t> read;
  for (uint64_t first = 0; first < layout_.tokens; first += kUnitTokens) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(kUnitTokens, layout_.tokens - first));
    if (mapping_) {
      const uint8_t* tokens = mapping_->data() + layout_.spans[0].offset + first * item;
      STOKER_RETURN_IF_ERROR(
          check_mapped(tokens, first, n, [&] { tally(layout_.type, tokens, first, n); }));
    } else {
      read.resize(n);
      STOKER_RETURN_IF_ERROR(read_tokens(data, first, n, read.data()));
      // Checked, so from 0 to 2^63 - 1: as uint64 they are the same.
      tally(TokenType::kUint64, reinterpret_cast<const uint8_t*>(read.data()), first, n);
    }
  }
  if (documents_ > 0) summary.documents = documents_;
  if (eos_id_ >= 0) summary.documents = ends + (after_last_end < layout_.tokens ? 1 : 0);
  return summary;
}

Result<std::vector<uint64_t>> TokenSource::array_document_starts(const OpenFile& data) const {
  if (eos_id_ < 0) return document_starts_;
  return positions_after(data, static_cast<uint64_t>(eos_id_));
}

Status TokenSource::set_prompts(const OpenFile& data, const std::vector<uint64_t>& starts,
                                uint64_t id) {
  STOKER_ASSIGN_OR_RETURN(std::vector<uint64_t> ends, positions_after(data, id));
  for (uint64_t& end : ends) --end;  // the token itself
  prompts_ = std::make_shared<const std::vector<PromptRange>>(document_prompts(starts, ends));
  return Status::ok();
}

Result<ShardReader> TokenSource::packed_unit(int u, const OpenFile* data) const {
  const uint64_t records = manifest().shards[u].records;
  const uint64_t first_row = static_cast<uint64_t>(u) * static_cast<uint64_t>(unit_samples_);
  // The tokens the unit's rows hold, with the labels after them: [low, high).
  uint64_t low = layout_.tokens;
  uint64_t high = 0;
  for (uint64_t p = plan_->row_starts[first_row]; p < plan_->row_starts[first_row + records]; ++p) {
    const PackedPiece& piece = plan_->pieces[p];
    low = std::min(low, piece.first);
    high = std::max(high, piece.first + piece.count + (piece.continues ? 1 : 0));
  }
  const size_t item = token_type_size(layout_.type);
  RecordViews views;
  views.stride = static_cast<uint64_t>(seq_len_) * item;
  TokenType type = layout_.type;
  uint64_t base = 0;
  if (mapping_) {
    views.base = mapping_->data() + layout_.spans[0].offset;
    STOKER_RETURN_IF_ERROR(check_mapped(views.base + low * item, low, high - low, [] {}));
    views.hold = mapping_;
  } else {
    auto tokens = std::make_shared<std::vector<int64_t>>(high - low);
    STOKER_RETURN_IF_ERROR(read_tokens(*data, low, tokens->size(), tokens->data()));
    views.base = reinterpret_cast<const uint8_t*>(tokens->data());
    views.hold = std::move(tokens);
    type = TokenType::kInt64;
    base = low;
  }
  for (const Field& field : manifest().schema.fields())
    views.fields.push_back({type, 0, field.dtype, true});
  views.computed =
      std::make_shared<const PackedRows>(plan_, first_row, seq_len_, boundary_fields_, pad_id_,
                                         type, views.base, base, PromptMasks{prompts_, 0});
  return ShardReader::viewed(manifest().shards[u].file, manifest().schema, records,
                             std::move(views));
}

Result<ShardReader> TokenSource::read_unit(int u, std::map<uint64_t, std::string>& /*bad*/,
                                           const std::function<bool()>& cancelled) const {
  const ShardInfo& unit = manifest().shards[u];
  // A mapped file is not opened again: its identity is its stat().
  std::optional<OpenFile> data;
  if (!mapping_) {
    STOKER_ASSIGN_OR_RETURN(OpenFile opened, files_->open(0, cancelled));
    data.emplace(std::move(opened));
  }
  for (size_t i = 0; i < identities_.size(); ++i) {
    Result<FileIdentity> now =
        i == 0 && data ? Result<FileIdentity>(data->identity) : files_->identity(i);
    if (!now.is_ok()) return now.status();
    if (now.value() != identities_[i])
      return io_error(
          fmt::format("{}: changed since it was opened (its size or time)", files_->names()[i]));
  }
  if (plan_) return packed_unit(u, data ? &*data : nullptr);
  const auto length = static_cast<uint64_t>(seq_len_);
  const uint64_t first = static_cast<uint64_t>(u) * static_cast<uint64_t>(unit_samples_) * length;
  if (mapping_) {
    const size_t item = token_type_size(layout_.type);
    return viewed_unit(u, first, layout_.type,
                       mapping_->data() + layout_.spans[0].offset + first * item, mapping_);
  }
  // Read as stored, widened into the batch as the mapping's are.
  const auto n = static_cast<size_t>(unit.records * length + 1);
  auto tokens = std::make_shared<std::vector<uint8_t>>(n * token_type_size(layout_.type));
  STOKER_RETURN_IF_ERROR(read_stored(*data, first, n, tokens->data()));
  const uint8_t* bytes = tokens->data();
  return viewed_unit(u, first, layout_.type, bytes, std::move(tokens));
}

Status TokenSource::record_error(int /*unit*/, uint64_t /*record*/, uint64_t global,
                                 const Status& status) const {
  if (plan_)
    return Status(status.code(),
                  fmt::format("{}: packed row {}: {}", shown_, global, status.message()));
  const uint64_t first = global * static_cast<uint64_t>(seq_len_);
  return Status(status.code(),
                fmt::format("{}: sample {} (tokens [{}, {})): {}", shown_, global, first,
                            first + static_cast<uint64_t>(seq_len_) + 1, status.message()));
}

}  // namespace stoker
