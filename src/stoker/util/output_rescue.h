#pragma once
// write_or_rescue: the result of a long run is never lost to an output location that fails at
// the very end (a full disk, a directory removed or made read-only while the run went on).
// Outputs are checked before the work starts (check_writable); this is the last line behind it.
//
//   Status saved = write_or_rescue("the trained model", "out/model.pt",
//                                  [&](const std::string& p) { return model.save(p); });
//   // on failure: "out/model.pt: cannot create: Read-only file system; the trained model was
//   //             saved to /tmp/stoker-rescue-x1Y2z3/model.pt instead"
//
// Thread-safe if `write` is.

#include <functional>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

// Runs `write(path)`. If that fails, runs `write(rescue)`, where `rescue` has `path`'s file name
// inside a new directory stoker-rescue-XXXXXX of the system's temporary directory ($TMPDIR or
// /tmp). Ok if the first write succeeded; else the first write's error (its code) with, in the
// same line, where `what` was saved instead or that saving it there failed too. `*written_to`
// (if given) is set to where the output is: `path`, the rescue path, or "" if nowhere.
Status write_or_rescue(const std::string& what, const std::string& path,
                       const std::function<Status(const std::string&)>& write,
                       std::string* written_to = nullptr);

}  // namespace stoker
