#pragma once
// What a data path names, the same way for every command (`--data`, `inspect DIR`, `verify
// DIR`): one dataset directory (it holds manifest.json), or a folder of datasets such as the
// converted Fashion-MNIST, whose train/ is trained on and whose test/ (else val/) is evaluated.

#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

struct DataLocation {
  std::string path;                   // as given
  bool folder = false;                // a folder of datasets rather than one dataset
  std::vector<std::string> datasets;  // path itself, or the folder's datasets sorted by name
  std::string train;                  // path itself, or path/train; "" if the folder has none
  std::string eval;                   // path/test, else path/val; "" if none (or one dataset)
};

// Finds the dataset(s) at `path`. kNotFound naming the path if it is neither a dataset nor a
// folder holding one (a dataset is a directory with a manifest.json; whether that is valid is
// Dataset::open's business). Paths the system cannot resolve count as a dataset, for
// Dataset::open to report.
Result<DataLocation> locate_data(const std::string& path);

// "train/ and test/ of DIR", "DIR": which dataset(s) of `where` a command uses, for its messages.
std::string describe_splits(const DataLocation& where);

}  // namespace stoker
