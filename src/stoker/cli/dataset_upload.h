#pragma once
// Uploading from the command line: `stoker push DIR URL` and `convert ... --out s3://...` (which
// converts into a temporary directory, pushes it, and removes it, on failure too). The store
// comes from the usual AWS settings (net/aws_credentials.h); access/dataset_push.h does the
// upload; one summary line on stdout. Errors throw Error (one line naming the file or URL).

#include <functional>
#include <memory>
#include <string>

#include "stoker/net/object_store.h"
#include "stoker/net/remote_url.h"

namespace stoker::cli {

// Where a push goes: an s3:// URL and its store.
struct PushTarget {
  remote::RemoteUrl url;
  std::unique_ptr<remote::ObjectStore> store;
};

// Parses `url_text`, opens its store and checks that a push can start (remote::check_push_target:
// an http(s):// URL is refused, read-only; a wrong key or a missing bucket fails here).
PushTarget open_push_target(const std::string& url_text);

// Pushes the dataset(s) at `dir` to `target` and prints what was sent: "pushed DIR to URL: ...".
void push_and_report(const std::string& dir, const PushTarget& target, bool prune,
                     const std::function<bool()>& stop_requested = {});

// A convert's --out: a directory, used as it is, or an s3:// URL, for which the conversion goes
// into a fresh temporary directory that is pushed by finish() and removed when this goes.
class ConvertOutput {
 public:
  // Checks a URL now (open_push_target), before anything is converted: a wrong key or a missing
  // bucket fails here, not after an hour's conversion.
  explicit ConvertOutput(const std::string& out);
  ConvertOutput(const ConvertOutput&) = delete;
  ConvertOutput& operator=(const ConvertOutput&) = delete;
  ~ConvertOutput();

  // Where the conversion writes (absent before it).
  const std::string& dir() const { return dir_; }
  // After the conversion: pushes dir() to the URL, if --out was one.
  void finish(const std::function<bool()>& stop_requested) const;

 private:
  std::unique_ptr<PushTarget> target_;  // null for a directory
  std::string temporary_;               // the temporary directory holding dir_, if any
  std::string dir_;
};

}  // namespace stoker::cli
