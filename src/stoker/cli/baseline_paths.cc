#include "cli/baseline_paths.h"

namespace stoker::cli {

std::string default_baseline_script() { return STOKER_BENCH_DIR "/torch_train_baseline.py"; }
std::string default_baseline_python() { return STOKER_PYTHON; }

}  // namespace stoker::cli
