#pragma once
// TokenSource: a flat array of token ids read in place, as a record source
// (store/shard_source.h) of language-model samples: nanoGPT's headerless `.bin` (uint16 or
// uint32, as the options say), a 1-D `.npy` (its header's dtype), or Megatron-LM's indexed
// dataset (`PREFIX.bin` + `PREFIX.idx`, megatron_index.h: every sequence's tokens in order as one
// array; named by either file or the prefix). The path names one file (token_layout.h), or
// is a table's column (token_column.h): its decoded copy, or an Arrow column read in place, its
// record batches' runs of ids in one or several files.
//
// Concatenate and split, as nanoGPT's get_batch and Megatron's GPTDataset (without its document
// shuffle): with T tokens and seq_len L, there are N = floor((T - 1) / L) samples; sample i has
// `input_ids` int64 [L], tokens [iL, iL + L), and `labels` int64 [L], tokens [iL + 1, iL + L + 1)
// (shifted by one). Every token but the last T - NL - 1 is in exactly one sample's input_ids.
// Asked for (TokenSourceOptions), the same samples also carry their documents' boundaries
// (token_boundaries.h: `position_ids` int64 [L], `cu_seqlens` int64 [segments + 1], a variable
// field of at most L + 1 rows, and labels masked where they would cross into the next document),
// computed as each unit is read, from an end-of-document token id (its tokens scanned) or from
// Megatron-LM's document index; input_ids and the samples themselves do not change.
// The data file is mapped at open. Where its tokens are one run of the file (nanoGPT's .bin, a
// .npy, Megatron's dataset whose sequences follow one another), a unit of reading (a manifest
// shard: the samples of about kUnitTokens tokens, store/unit_read_source.h) is, when the loader
// first pins it, views of the mapping (ShardReader::viewed), kept from then on (its pins take no
// lock; but for units with document boundaries, let go when unused): each sample's input_ids and
// labels are widened from the file's bytes straight into the batch, no record built, copied or
// checksummed (a token file has no checksum). Otherwise a unit's tokens are read as stored (preads
// of their runs), its samples views of them widened into the batch as the mapping's are.
//
// Packed (TokenSourceOptions::packing), the samples are instead the rows of the packing plan
// of the array's documents (token_packing.h), made at open (the end-of-document tokens scanned
// then); a unit is the rows of about kUnitTokens tokens, their fields computed from the tokens
// their pieces hold (views of the mapping, or those tokens read), every token in one row; its
// index checksum is its rows' digest (PackingPlan::digest): a loader's state names the rows.
//
// Errors, one line naming the file: at open, a path that names no token file, a file whose
// layout is inconsistent (token_layout.h, megatron_index.h), or fewer than L + 1 tokens, and one
// naming the file and the parameter for boundary fields without boundaries (no eos_id and no
// Megatron index, or an index without documents), an eos_id without a boundary field or
// outside the tokens' type, or an id parameter (eos_id, pad_id, prompt_end_id) not below
// vocab_size; at a unit's read (acquire's error, so it fails the batch under either on_error
// policy: fixed int64 fields have no transform that could refuse one record), a token that is no
// token id (negative, or 2^63 and above: only a signed or a uint64 file's tokens are checked,
// once per read of a unit) or, with vocab_size, not below it (every type whose largest value
// reaches it, in the same read), naming its sample, and a file changed (size or time) since it
// was opened; a mapped file that shrinks while its samples are copied fails their batch
// (util/mapped_read_guard.h).
// Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/import/token_boundaries.h"
#include "stoker/store/import/token_column.h"
#include "stoker/store/import/token_layout.h"
#include "stoker/store/import/token_packing.h"
#include "stoker/store/in_place_files.h"
#include "stoker/store/unit_read_source.h"
#include "stoker/util/mapped_file.h"

namespace stoker {

// The longest seq_len: a record of 2 × 2^22 int64 tokens is 64 MiB.
constexpr int64_t kMaxTokenSeqLen = int64_t{1} << 22;
// The longest seq_len with a document mask: L * L bytes, 64 MiB a sample.
constexpr int64_t kMaxMaskSeqLen = int64_t{1} << 13;

struct TokenSourceOptions {
  int64_t seq_len = 1024;  // L, 1 to kMaxTokenSeqLen (nanoGPT's block_size default)
  // The dtype of a headerless .bin (uint16 or uint32); .npy and Megatron's files say theirs.
  TokenType raw_type = TokenType::kUint16;
  // Document boundaries: the end-of-document token id (eos_id, -1: none; then a Megatron-LM
  // dataset's document index gives them), and the fields made of them (none: the samples as
  // above, nothing scanned).
  int64_t eos_id = -1;
  bool position_ids = false;
  bool cu_seqlens = false;
  bool mask_boundary_labels = false;
  bool document_mask = false;  // `document_mask` uint8 [L, L] (token_boundaries.h)
  // Whole documents packed into padded rows (token_packing.h), `packing_bins` open rows at a
  // time, padded with `pad_id`: then the samples are the plan's rows, each with position_ids and
  // segment_ids, and labels masked at documents' ends.
  TokenPacking packing = TokenPacking::kNone;
  int64_t packing_bins = 64;
  int64_t pad_id = 0;
  // `attention_mask` int64 [L] of a packed row: 1 on its tokens, 0 on its padding (Hugging
  // Face's for the same ids); packing only (concatenate-and-split samples have no padding).
  bool attention_mask = false;
  // The token id that ends each document's prompt (-1: none): labels that predict a prompt's
  // tokens are masked (token_boundaries.h), the array scanned for it at open.
  int64_t prompt_end_id = -1;
  // The vocabulary's size V (-1: none): every token id is checked to be below it as its unit is
  // read (skipped where the file's type holds no id from V), and eos_id, pad_id and
  // prompt_end_id at open.
  int64_t vocab_size = -1;
  // Set where the path is a table's column (token_column.h), its copy (PREFIX) or, read in
  // place, its location: then the source's location and messages name the column's location,
  // the files it was read from are checked (with the copy) at each read, and file_stamps()
  // names them, not the copy.
  std::optional<TokenColumn> column;
};

// Whether `options` need the documents' first tokens from an index (Megatron's, or an in-place
// column's rows): a boundary field asked for without eos_id.
bool wants_index_documents(const TokenSourceOptions& options);

// What `stoker inspect` and `verify` say of a token file (TokenSource::summarize).
struct TokenSummary {
  std::string format;  // "nanoGPT .bin", ".npy", "Megatron-LM indexed dataset"
  std::string dtype;   // numpy's name: "uint16"
  uint64_t tokens = 0;
  // Megatron's index's, or with eos_id its end-of-document tokens plus an unended last one;
  // nullopt where neither says.
  std::optional<uint64_t> documents;
  uint64_t samples = 0;  // or packed rows
  int64_t seq_len = 0;
  bool packed = false;
  uint64_t largest_id = 0;
  int64_t vocab_size = -1;  // TokenSourceOptions::vocab_size
};

class TokenSource : public UnitReadSource {
 public:
  // Tokens of a unit: its samples are those whose input_ids lie in about this many tokens.
  static constexpr int64_t kUnitTokens = int64_t{1} << 20;

  static Result<std::shared_ptr<TokenSource>> open(const std::string& path,
                                                   const TokenSourceOptions& options);
  // Whether `path` is, without a doubt, token data `auto` may open: Megatron's indexed dataset
  // (a .bin or .idx, or a prefix, whose .idx starts with its magic) or a 1-D .npy of integers.
  // A headerless .bin could be anything (and has no dtype): only a named source opens it.
  static bool recognises(const std::string& path);

  const std::string& location() const override { return path_; }
  std::string describe() const override;
  // The data file's (and Megatron's index's) name and identity when the source was opened.
  Result<std::vector<FileStamp>> file_stamps() const override;
  Status record_error(int unit, uint64_t record, uint64_t global,
                      const Status& status) const override;
  // The samples' input_ids tokens (N x L), or, packed, the array's (each in one row).
  std::vector<int64_t> part_tokens() const override { return {tokens_}; }
  // The file summed up, every token of the array read (the tail no sample holds too) and
  // checked as a unit's read checks them: the first bad one's error (or a read's).
  Result<TokenSummary> summarize() const;

 private:
  TokenSource() = default;
  Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                const std::function<bool()>& cancelled) const override;
  // Tokens [first, first + n) as stored (preads of their spans) into `out`: the read's error.
  Status read_stored(const OpenFile& data, uint64_t first, size_t n, uint8_t* out) const;
  // Tokens [first, first + n) widened into `out`: the read's error, or a bad token's naming its
  // sample.
  Status read_tokens(const OpenFile& data, uint64_t first, size_t n, int64_t* out) const;
  // The error of the bad token `value`, token `token` of the array: no token id, or `why`.
  Status bad_token(uint64_t token, const std::string& value,
                   const std::string& why = "not a token id (0 to 2^63 - 1)") const;
  // The first of the `n` tokens of `type` at `tokens` (token `first` on) not below vocab_size,
  // as bad_token's error; ok where all are (or no vocab_size is set).
  Status check_vocab(TokenType type, const uint8_t* tokens, uint64_t first, size_t n) const;
  // Checks the boundary options against the file (its type, Megatron's documents) and adds
  // the boundary fields asked for to `fields`.
  Status set_boundaries(const TokenSourceOptions& options, std::vector<Field>& fields);
  // Unit u as views of its tokens (from its first sample's first token, `first`) of `type` at
  // `tokens`, which `hold` keeps: the mapping's or those read as stored (checked in a guard as
  // its document boundaries are found).
  Result<ShardReader> viewed_unit(int u, uint64_t first, TokenType type, const uint8_t* tokens,
                                  std::shared_ptr<const void> hold) const;
  // The array index after each token equal to `id`, in order: the whole array scanned (read
  // through `data` where the file is not mapped).
  Result<std::vector<uint64_t>> positions_after(const OpenFile& data, uint64_t id) const;
  // Every document start of the array (a packing plan's input): the end-of-document tokens'
  // or Megatron's index's.
  Result<std::vector<uint64_t>> array_document_starts(const OpenFile& data) const;
  // Sets prompts_ from the documents starting at `starts` and the prompt-end tokens `id`.
  Status set_prompts(const OpenFile& data, const std::vector<uint64_t>& starts, uint64_t id);
  // Unit u of a packed source: its rows' fields over their pieces' tokens (read from `data`,
  // null where the file is mapped).
  Result<ShardReader> packed_unit(int u, const OpenFile* data) const;
  // Checks the n tokens at `tokens` (token `first` on; mapped, or read) in a guard, running
  // `also` (a scan of them) there too: the changed file's error, or the first bad token's.
  Status check_mapped(const uint8_t* tokens, uint64_t first, size_t n,
                      const std::function<void()>& also) const;
  // The document starts among unit u's tokens (as viewed_unit's), counted from its first.
  std::vector<uint32_t> unit_document_starts(int u, uint64_t first, TokenType type,
                                             const uint8_t* tokens) const;

  std::string path_;
  std::string shown_;     // the name messages give: the data file's, or a column's location
  bool decoded_ = false;  // a column's copy (file_stamps: the files decoded, files_ from 2)
  std::string format_;    // for describe(): "nanoGPT .bin", ".npy", "Megatron-LM indexed dataset"
  int64_t seq_len_ = 0;
  int64_t tokens_ = 0;        // part_tokens()
  int64_t unit_samples_ = 0;  // samples per unit (the last unit may have fewer)
  uint64_t documents_ = 0;    // Megatron's; 0 for a flat array
  // Boundaries: none where no field asks; else from eos_id_ (>= 0) or document_starts_
  // (Megatron's index, MegatronIndex::document_starts).
  BoundaryFields boundary_fields_;
  bool boundaries_ = false;
  int64_t eos_id_ = -1;
  int64_t vocab_size_ = -1;  // TokenSourceOptions::vocab_size
  std::vector<uint64_t> document_starts_;
  // What gives the documents: Megatron's index or an in-place column's location ("": none).
  std::string index_name_;
  // Packed: the plan (its rows are the samples) and the padding token; else null.
  std::shared_ptr<const PackingPlan> plan_;
  int64_t pad_id_ = 0;
  // The documents' prompts (TokenSourceOptions::prompt_end_id; null: none).
  std::shared_ptr<const std::vector<PromptRange>> prompts_;
  TokenLayout layout_;
  // The data file, then Megatron's index, then a column's files decoded; or an in-place
  // column's files (TokenSpan::file).
  std::shared_ptr<const InPlaceFiles> files_;
  std::vector<FileIdentity> identities_;  // of files_, when opened
  // The data file mapped, where its tokens are one run (layout_.spans has one); else null
  // (the tokens read by preads of their spans, in one file or an in-place column's several).
  std::shared_ptr<const MappedFile> mapping_;
};

}  // namespace stoker
