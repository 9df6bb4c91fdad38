// Token files read in place (store/import/token_source.h): nanoGPT's .bin, a 1-D .npy or
// Megatron-LM's indexed dataset, split into samples of seq_len tokens with their labels. Local
// files only (a URL is refused in one line). `auto` takes Megatron's datasets and .npy token
// arrays; a headerless .bin only when named (source="tokens"): it could be other data, and its
// dtype is not in it.

#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
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
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<TokenSource> source,
                          TokenSource::open(opening.location, options));
  return Dataset::open(std::move(source));
}

}  // namespace

SourceSpec tokens() {
  SourceSpec spec;
  spec.name = "tokens";
  spec.doc =
      "a flat array of token ids read in place (nanoGPT's .bin, a 1-D .npy, Megatron-LM's "
      ".bin + .idx), split into samples of seq_len tokens: input_ids and labels shifted by one";
  spec.params = {
      ParamSpec::integer("seq_len", 1024,
                         "tokens per sample (nanoGPT's block_size default, 1024); each sample "
                         "reads one more for its labels")
          .in(1, static_cast<double>(kMaxTokenSeqLen)),
      ParamSpec::choice("dtype", "uint16", {"uint16", "uint32"},
                        "the tokens' type in a headerless .bin (a .npy and Megatron's index say "
                        "theirs)"),
  };
  spec.auto_rank = 40;
  spec.recognises = [](const std::string& location, const std::function<bool()>&) {
    return !is_remote_url(location) && TokenSource::recognises(location);
  };
  spec.open = open_tokens;
  return spec;
}

}  // namespace stoker::sources
