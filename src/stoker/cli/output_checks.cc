#include "cli/output_checks.h"

#include <filesystem>

#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/checkpoint.h"
#include "stoker/util/atomic_file.h"

namespace stoker::cli {

InputSet training_inputs(const TrainerOptions& options) {
  InputSet inputs;
  inputs.add_datasets(options.data_dir.empty() ? default_fashion_mnist_dir() : options.data_dir,
                      "the training data");
  const std::string& model = options.model;
  if (model.size() > 3 && model.compare(model.size() - 3, 3, ".pt") == 0)
    inputs.add_file(model, "the model");
  if (options.resume && !options.checkpoint_dir.empty()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options.checkpoint_dir, ec)) {
      if (entry.is_directory(ec) &&
          entry.path().filename().string().rfind(kCheckpointPrefix, 0) == 0)
        inputs.add_tree(entry.path().string(), "a checkpoint being resumed");
    }
  }
  return inputs;
}

void check_output_file(const InputSet& inputs, const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  throw_if_error(inputs.check_output(flag, path));
  const Status writable = check_writable(path);
  if (!writable.is_ok()) throw Error(Status(writable.code(), flag + ": " + writable.message()));
}

void check_output_dir(const InputSet& inputs, const std::string& flag, const std::string& path) {
  if (!path.empty()) throw_if_error(inputs.check_output(flag, path));
}

// Collisions first: two outputs that are one file say so even where neither can be made yet
// (a --report directory not yet there, and a file inside it).
void CommandOutputs::file(const std::string& flag, const std::string& path) {
  throw_if_error(outputs_.add_file(flag, path));
  check_output_file(inputs_, flag, path);
}

void CommandOutputs::dir(const std::string& flag, const std::string& path,
                         std::vector<std::string> writes) {
  throw_if_error(outputs_.add_dir(flag, path, std::move(writes)));
  check_output_dir(inputs_, flag, path);
}

}  // namespace stoker::cli
