#include "cli/dataset_upload.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>

#include "stoker/access/dataset_push.h"
#include "stoker/util/utf8.h"

namespace stoker::cli {

namespace fs = std::filesystem;

PushTarget open_push_target(const std::string& url_text) {
  PushTarget target;
  target.url = remote::parse_remote_url(url_text).value_or_throw();
  std::shared_ptr<remote::HttpClient> client = remote::HttpClient::create().value_or_throw();
  target.store =
      remote::open_object_store(target.url, client, remote::process_environment()).value_or_throw();
  throw_if_error(remote::check_push_target(target.url, *target.store));
  return target;
}

void push_and_report(const std::string& dir, const PushTarget& target, bool prune,
                     const std::function<bool()>& stop_requested) {
  remote::PushOptions options;
  options.prune = prune;
  options.stop_requested = stop_requested;
  const remote::PushSummary s =
      remote::push_dataset(dir, target.url, *target.store, options).value_or_throw();
  fmt::print(
      "pushed {} to {}: {} records in {} shard{}, {} uploaded ({:.1f} MB), {} there already; "
      "manifest{} last{}\n",
      printable(dir), target.url.redacted(), s.records, s.shards, s.shards == 1 ? "" : "s",
      s.uploaded, s.uploaded_bytes / 1e6, s.present, s.datasets.size() == 1 ? "" : "s",
      prune
          ? fmt::format("; pruned {} shard{} it does not name", s.pruned, s.pruned == 1 ? "" : "s")
          : "");
}

ConvertOutput::ConvertOutput(const std::string& out) : dir_(out) {
  if (!remote::is_remote_url(out)) return;
  target_ = std::make_unique<PushTarget>(open_push_target(out));
  std::string pattern = (fs::temp_directory_path() / "stoker-convert-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw Error(io_error(fmt::format("{}: cannot create a temporary directory to convert into: {}",
                                     printable(pattern), std::strerror(errno))));
  temporary_ = pattern;
  dir_ = temporary_ + "/dataset";
}

ConvertOutput::~ConvertOutput() {
  if (temporary_.empty()) return;
  std::error_code ec;
  fs::remove_all(temporary_, ec);
}

void ConvertOutput::finish(const std::function<bool()>& stop_requested) const {
  if (target_ != nullptr) push_and_report(dir_, *target_, /*prune=*/false, stop_requested);
}

}  // namespace stoker::cli
