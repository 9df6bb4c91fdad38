#pragma once
// The outputs a command was given, checked before it does any work: no output may be or go
// into one of the command's inputs (the datasets it reads, the model it loads, the checkpoint it
// resumes, the source it converts), compared by the file system's identity (util/input_set.h),
// and each output file must be writable now (util/atomic_file.h, check_writable), so a long run
// never ends by destroying its data or losing its result. Stateless functions; they throw Error.

#include <string>
#include <vector>

#include "stoker/train/trainer.h"
#include "stoker/util/input_set.h"
#include "stoker/util/output_set.h"

namespace stoker::cli {

// The inputs of a training run: the data folder (`options.data_dir`, or the default data's), a
// TorchScript model file, and with --resume the checkpoints in --checkpoint-dir.
InputSet training_inputs(const TrainerOptions& options);

// `path` of option `flag` (nothing if empty): a file to write, neither an input nor inside one,
// in a directory that takes a new file now.
void check_output_file(const InputSet& inputs, const std::string& flag, const std::string& path);

// `path` of option `flag` (nothing if empty): a directory to write into, neither an input nor
// inside one. The files it will hold are checked by the command that writes them.
void check_output_dir(const InputSet& inputs, const std::string& flag, const std::string& path);

// The outputs of one command, each checked as it is added: against the command's inputs (as
// above) and against the outputs added before it (util/output_set.h), so that no two outputs
// are one file. Throws Error naming both.
class CommandOutputs {
 public:
  explicit CommandOutputs(InputSet inputs) : inputs_(std::move(inputs)) {}
  void file(const std::string& flag, const std::string& path);
  // A directory into which the command writes the files `writes` names (util/output_set.h).
  void dir(const std::string& flag, const std::string& path, std::vector<std::string> writes);

 private:
  InputSet inputs_;
  OutputSet outputs_;
};

}  // namespace stoker::cli
