// Token files read in place (store/import/token_source.h): nanoGPT's .bin, a 1-D .npy or
// Megatron-LM's indexed dataset, split into samples of seq_len tokens with their labels; or a
// Parquet or Arrow table's column of token id lists: an uncompressed Arrow one read in place,
// others decoded once into a Megatron-LM dataset in the cache folder
// (store/import/token_column.h). Local files only (a URL is refused in one
// line). `auto` takes Megatron's datasets and .npy token arrays; a headerless .bin only when
// named (source="tokens"): it could be other data, and its dtype is not in it.

#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/data_files.h"
#include "stoker/store/import/token_source.h"

namespace stoker::sources {
namespace {

using remote::is_remote_url;
using remote::shown_location;

Result<std::shared_ptr<const Dataset>> open_tokens(const SourceOpening& opening) {
  if (is_remote_url(opening.location))
    return unsupported(shown_location(opening.location) +
                       ": token files are read from local paths only, not URLs");
  TokenSourceOptions options;
  options.seq_len = opening.params.integer("seq_len");
  options.raw_type =
      opening.params.choice("dtype") == "uint32" ? TokenType::kUint32 : TokenType::kUint16;
  options.eos_id = opening.params.integer("eos_id");
  options.position_ids = opening.params.flag("return_position_ids");
  options.cu_seqlens = opening.params.flag("return_cu_seqlens");
  options.mask_boundary_labels = opening.params.flag("mask_boundary_labels");
  options.document_mask = opening.params.flag("return_document_mask");
  const std::string packing = opening.params.choice("packing");
  options.packing = packing == "first_fit"  ? TokenPacking::kFirstFit
                    : packing == "best_fit" ? TokenPacking::kBestFit
                                            : TokenPacking::kNone;
  options.packing_bins = opening.params.integer("packing_bins");
  options.pad_id = opening.params.integer("pad_id");
  options.attention_mask = opening.params.flag("return_attention_mask");
  options.prompt_end_id = opening.params.integer("prompt_end_id");
  options.vocab_size = opening.params.integer("vocab_size");
  std::string path = opening.location;
  if (is_data_path(path, ".parquet") || is_data_path(path, ".arrow")) {
#if STOKER_WITH_PARQUET
    STOKER_ASSIGN_OR_RETURN(std::string cache_dir, cache_dir_of(*opening.access));
    STOKER_ASSIGN_OR_RETURN(options.column,
                            token_column(path, opening.params.text("column"), cache_dir,
                                         wants_index_documents(options)));
    if (!options.column->in_place) path = options.column->prefix;
#else
    return unsupported(path + ": this stoker was built without Parquet (STOKER_WITH_PARQUET)");
#endif
  }
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<TokenSource> source, TokenSource::open(path, options));
  return Dataset::open(std::move(source));
}

}  // namespace

SourceSpec tokens() {
  SourceSpec spec;
  spec.name = "tokens";
  spec.doc =
      "a flat array of token ids read in place (nanoGPT's .bin, a 1-D .npy, Megatron-LM's "
      ".bin + .idx, or a Parquet or Arrow column of token id lists: uncompressed Arrow read in "
      "place, others decoded once), split into "
      "samples of seq_len tokens: input_ids and labels shifted by one";
  spec.params = {
      ParamSpec::integer("seq_len", 1024,
                         "tokens per sample (nanoGPT's block_size default, 1024); each sample "
                         "reads one more for its labels")
          .in(1, static_cast<double>(kMaxTokenSeqLen)),
      ParamSpec::choice("dtype", "uint16", {"uint16", "uint32"},
                        "the tokens' type in a headerless .bin (a .npy and Megatron's index say "
                        "theirs)"),
      ParamSpec::integer("eos_id", -1,
                         "the end-of-document token id, which ends each document (nanoGPT's "
                         "GPT-2 EOT: 50256); -1: none (a Megatron-LM dataset's .idx gives its "
                         "documents)")
          .in(-1, 9.2e18),
      ParamSpec::flag("return_position_ids", false,
                      "position_ids int64 [seq_len]: from 0 at each document's first token in "
                      "the sample, and at the sample's first"),
      ParamSpec::flag("return_cu_seqlens", false,
                      "cu_seqlens int64 [segments + 1]: the sample's document segments' starts, "
                      "then seq_len (FlashAttention's varlen kernels')"),
      ParamSpec::flag("mask_boundary_labels", false,
                      "labels -100 (PyTorch's ignore_index) where they would cross into the "
                      "next document"),
      ParamSpec::flag("return_document_mask", false,
                      "document_mask uint8 [seq_len, seq_len]: 1 where a query token may attend "
                      "to a key token, the key at or before it in the same document segment"),
      ParamSpec::choice("packing", "none", {"none", "first_fit", "best_fit"},
                        "none: concatenate and split; first_fit, best_fit: whole documents "
                        "packed into padded rows of seq_len (Grain's packing), each row with "
                        "position_ids and segment_ids"),
      ParamSpec::integer("packing_bins", 64,
                         "rows open at a time while packing (Grain's num_packing_bins)")
          .in(1, 65536),
      ParamSpec::integer("pad_id", 0, "the token id that pads a packed row's input_ids")
          .in(0, 9.2e18),
      ParamSpec::flag("return_attention_mask", false,
                      "attention_mask int64 [seq_len] of a packed row: 1 on its tokens, 0 on "
                      "its padding (Hugging Face's)"),
      ParamSpec::integer("prompt_end_id", -1,
                         "the token id that ends each document's prompt (its first in the "
                         "document): labels -100 where they predict prompt tokens; -1: none")
          .in(-1, 9.2e18),
      ParamSpec::integer("vocab_size", -1,
                         "the vocabulary's size: a token id at or above it fails its batch, and "
                         "eos_id, pad_id or prompt_end_id at or above it the opening; -1: none")
          .in(-1, 9.2e18),
      ParamSpec::text("column", "input_ids",
                      "of Parquet or Arrow files: the column of token id lists, one row per "
                      "document (Hugging Face's tokenized input_ids)"),
  };
  spec.auto_rank = 40;
  spec.recognises = [](const std::string& location, const std::function<bool()>&) {
    return !is_remote_url(location) && TokenSource::recognises(location);
  };
  spec.open = open_tokens;
  return spec;
}

}  // namespace stoker::sources
