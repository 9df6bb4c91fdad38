#pragma once
// Where `stoker bench train` finds its PyTorch baseline by default: this build's
// bench/torch_train_baseline.py and the Python it was configured with (STOKER_PYTHON). In a file
// of their own because they hold the checkout's path: the one object of the CLI that ccache
// cannot reuse in a fresh clone.

#include <string>

namespace stoker::cli {

std::string default_baseline_script();
std::string default_baseline_python();

}  // namespace stoker::cli
