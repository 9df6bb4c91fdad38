// libFuzzer target for what reads WebDataset tars: a tar's headers (list_tar, tar_members.h)
// and the samples grouped from them (webdataset_samples.h), a tar's saved index read back from
// the cache (decode_tar_index, tar_index.h) and the brace patterns that name tars
// (expand_braces, webdataset_tars.h). For each input, each of them on its bytes: every member
// lies inside the tar and every sample's field names a member; a saved index either fails with
// kCorrupt naming the tar or encodes back to the same bytes; a pattern gives at most the limit
// of names or fails with kInvalidArgument. Any violation is a __builtin_trap(); ASan and UBSan
// report the rest. docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "stoker/store/import/tar_index.h"
#include "stoker/store/import/tar_members.h"
#include "stoker/store/import/webdataset_samples.h"
#include "stoker/store/import/webdataset_tars.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const TarListing listing = list_tar({data, size});
  for (const TarMember& member : listing.members)
    check(member.offset <= size && member.size <= size - member.offset);
  for (const WebDatasetSample& sample : group_samples(listing)) {
    check(!sample.problem.empty() || !sample.fields.empty());
    for (const auto& field : sample.fields) check(field.second < listing.members.size());
  }

  const std::string path = "t.tar";
  const Result<TarIndex> index = decode_tar_index({data, size}, path);
  if (index.is_ok()) {
    check(encode_tar_index(index.value()) ==
          std::string(reinterpret_cast<const char*>(data), size));
  } else {
    check(index.status().code() == StatusCode::kCorrupt);
    check(index.status().message() == path + ": its saved index is damaged");
  }

  const std::string pattern(reinterpret_cast<const char*>(data), std::min<size_t>(size, 256));
  const Result<std::vector<std::string>> names = expand_braces(pattern, 1000);
  if (names.is_ok()) {
    check(names.value().size() <= 1000);
  } else {
    check(names.status().code() == StatusCode::kInvalidArgument);
    check(names.status().message().rfind(pattern + ": ", 0) == 0);
  }
  return 0;
}
