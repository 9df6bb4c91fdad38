// libFuzzer target for the saved listing of an image folder
// (store/import/image_folder_listing_cache.h), bytes read back from the cache folder, which
// anything may have damaged. For each input, decode_listing either fails with one line
// (kCorrupt) naming the root, or gives a listing whose labels index its classes and which
// encodes back to the same bytes. Any violation is a __builtin_trap(); ASan and UBSan report the
// rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stoker/store/import/image_folder_listing_cache.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const std::string root = "root";
  const Result<ImageFolderListing> decoded = decode_listing({data, size}, root);
  if (!decoded.is_ok()) {
    check(decoded.status().code() == StatusCode::kCorrupt);
    check(decoded.status().message().rfind(root + ": ", 0) == 0);
    check(decoded.status().message().find('\n') == std::string::npos);
    return 0;
  }
  for (const ImageFolderSample& sample : decoded.value().samples)
    check(sample.label >= 0 && static_cast<size_t>(sample.label) < decoded.value().classes.size());
  check(encode_listing(root, decoded.value()) ==
        std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
