#pragma once
// Fashion-MNIST: the embedded default dataset, from the files Debian's dataset-fashion-mnist
// package installs.

#include <functional>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

// Where Debian's dataset-fashion-mnist installs the four .gz files.
constexpr const char* kFashionMnistDebianDir = "/usr/share/datasets/fashion-mnist";

// The data root: $STOKER_DATA if set, else ~/.cache/stoker.
std::string default_data_root();
// The default converted location: <data root>/fashion-mnist (holding train/ and test/).
std::string default_fashion_mnist_dir();

// True if `out` holds both splits as datasets (convert_fashion_mnist's output, or any train/
// and test/ with readable manifests).
bool fashion_mnist_converted(const std::string& out);

// Converts the IDX files in `src` into `out`/train (60000 records) and `out`/test (10000).
// kAlreadyExists if either exists and `skip_existing` is false, unless it is a split converted
// from the same files and the other is missing (a conversion killed between its splits
// resumes); with `skip_existing`, a split that is already a readable dataset is kept and only
// missing ones are converted. Without `skip_existing`, `out` is locked for the conversion: a
// second one into it meanwhile is kAlreadyExists at the start. `stop_requested` (optional) is
// polled before each record: true stops the conversion (kCancelled) and removes the split
// being written (a split finished before stays).
Status convert_fashion_mnist(const std::string& src, const std::string& out, bool skip_existing,
                             const std::function<bool()>& stop_requested = {});

}  // namespace stoker
