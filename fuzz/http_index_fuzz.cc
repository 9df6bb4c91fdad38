// libFuzzer target for an http(s):// folder's index page (parse_http_index_page,
// net/object_store.h): untrusted bytes any web server sends. For each input, the listing either
// fails with one line (kCorrupt) starting with the folder's URL, or gives names sorted, each
// once, each a plain name directly in the folder (not empty, ".", ".." nor holding a '/' or a
// control character) whose URL names that file in that folder again; and the sub-folders
// (parse_http_index_entries) are plain names too, sorted, each once. Any violation is a
// __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "stoker/net/object_store.h"
#include "stoker/net/remote_url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  using namespace stoker::remote;
  using fuzz::check;
  static const RemoteUrl folder =
      parse_remote_url("http://127.0.0.1:8080/data/tars").value_or_throw();
  const std::string where = "http://127.0.0.1:8080/data/tars/";
  const std::string_view page(reinterpret_cast<const char*>(data), size);
  const Result<std::vector<std::string>> listed = parse_http_index_page(page, folder, where);
  if (!listed.is_ok()) {
    check(listed.status().code() == StatusCode::kCorrupt);
    check(listed.status().message().rfind(where + ": ", 0) == 0);
    check(listed.status().message().find('\n') == std::string::npos);
    return 0;
  }
  const std::vector<std::string>& names = listed.value();
  check(std::adjacent_find(names.begin(), names.end(),
                           [](const std::string& a, const std::string& b) { return !(a < b); }) ==
        names.end());
  for (const std::string& name : names) {
    check(!name.empty() && name != "." && name != "..");
    check(name.find('/') == std::string::npos);
    check(std::none_of(name.begin(), name.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }));
    const Result<RemoteUrl> url = parse_remote_url(folder.redacted() + "/" + uri_encode_path(name));
    check(url.is_ok() && url.value().host == folder.host &&
          url.value().path == folder.path + "/" + name);
  }
  const Result<FolderEntries> entries = parse_http_index_entries(page, folder, where);
  check(entries.is_ok() && entries.value().files.size() == names.size());
  const std::vector<std::string>& folders = entries.value().folders;
  check(std::adjacent_find(folders.begin(), folders.end(),
                           [](const std::string& a, const std::string& b) { return !(a < b); }) ==
        folders.end());
  for (const std::string& name : folders) {
    check(!name.empty() && name != "." && name != "..");
    check(name.find('/') == std::string::npos);
  }
  return 0;
}
