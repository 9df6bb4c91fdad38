#pragma once
// Checkpoints: everything needed to continue a training run exactly — model and optimizer
// tensors, loss-scaler and loader state, step counters and the RNG state — written crash-safely
// (docs/DESIGN.md contract 7), and what run they belong to.
//
// A checkpoint directory DIR holds complete checkpoints in subdirectories
// step-<step>-<random>/ and a file DIR/LATEST naming the current one. A new checkpoint is
// written into DIR/.partial-step-<step>-<random>/ (the marker file .stoker-checkpoint first,
// holding the final name, then model.pt, optimizer.pt, rng.pt and last meta.json; each file
// fsynced), renamed to step-<step>-<random> once complete, and only then does LATEST switch to
// it (atomically), so a crash, an error or a kill at any point leaves the previous checkpoint
// current: a failed run never overwrites a good one. After the switch the superseded
// checkpoint and any .partial-* left by a killed run are removed — only directories stoker
// wrote: a partial one by its name, a complete one by its name and its marker, which names the
// directory it was written as (so a user's copy or renamed checkpoint is never deleted).
// Anything else in DIR is left alone.
//
// Thread-safety: the functions may run concurrently on different directories only; they use
// the process-wide default CPU generator. Processes exclude each other with
// lock_checkpoint_dir.

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stoker/pipeline/loader.h"
#include "stoker/store/data_identity.h"
#include "stoker/store/manifest.h"
#include "stoker/train/amp.h"
#include "stoker/train/models.h"
#include "stoker/util/directory_lock.h"
#include "stoker/util/status.h"

namespace stoker {

// Version of the checkpoint layout (meta.json's format_version); a checkpoint of another one
// is refused. 2: the run's identity, the marker file.
inline constexpr int kCheckpointFormatVersion = 2;

// How the name of a checkpoint's subdirectory of DIR starts: step-<step>-<random>.
inline constexpr const char* kCheckpointPrefix = "step-";

// The names stoker writes in a checkpoint directory (util/output_set.h patterns: LATEST,
// step-*, .partial-*), which no other output of a run may take.
std::vector<std::string> checkpoint_dir_names();

// What makes a checkpoint this run's: a resume continues only the same run, else its state
// (a loader position, Adam's moments, an lr step) would be applied to another.
struct RunIdentity {
  std::string data;       // data_identity() of the training data
  std::string model;      // Model::name()
  std::string optimizer;  // OptimizerSpec::name
  std::string schedule;   // to_string(ScheduleKind)
  // The global batch (per rank times ranks): the data order and the steps depend on it, not on
  // how it is split, so a checkpoint resumes with any world size that keeps it.
  int64_t batch_size = 0;
  int64_t accum = 0;  // batches per optimizer step
  uint64_t seed = 0;  // data order and initialisation
  // The input normalisation the model learned with (per channel); empty in a checkpoint
  // written before stoker recorded it, and then not compared.
  std::vector<float> mean;
  std::vector<float> std;
  // The data order's shuffle window (LoaderSettings::shuffle_window; all in a checkpoint
  // written before stoker recorded it).
  int64_t shuffle_window = kShuffleAll;
  // Its repeats (LoaderSettings::ra_reps; 1 in a checkpoint written before stoker had them).
  int64_t ra_reps = 1;
  // Data read in place: its files' blocks (store/data_identity.h), which name the file that
  // differs; empty for a stoker dataset (and in a checkpoint written before stoker kept them).
  std::vector<FileBlock> data_files;
};

// The settings of a run that shape its updates beside its identity, by the option of `stoker
// train` that sets each and its value as text: {"--lr": "0.001", "--amp": "off", ...}. A resume
// with other values would silently train another run: refused unless overridden
// (TrainerOptions::override_settings).
using RunSettings = std::map<std::string, std::string>;

// "" if every setting both hold has the same value, else each that differs, e.g. "--lr 0.001
// (this run: 0.5)". A setting only one of them holds is not compared (a checkpoint written
// before stoker recorded settings holds none). A saved --augment is read as this build reads
// its calls, so a parameter added since with the default the call had is no difference.
std::string settings_difference(const RunSettings& saved, const RunSettings& current);

// The training data's identity: a digest of its manifest's record count, schema and the shards'
// index checksums (which cover every record's checksum) and, for data read in place, of its
// files' blocks (their sizes and modification times or ETags): the same for a copy of the
// data, different for any other or changed. 16 hex digits.
std::string data_identity(const Manifest& manifest, const std::vector<FileBlock>& files = {});

// "" if `saved` and `current` are the same run, else what differs, e.g. "optimizer sgd (this
// run: adam), global batch size 32 (this run: 64)".
std::string run_difference(const RunIdentity& saved, const RunIdentity& current);

// The non-tensor part of a checkpoint.
struct CheckpointState {
  RunIdentity run;         // the run that wrote it
  int64_t step = 0;        // optimizer steps taken since the run began
  LoaderState loader;      // where the training data continues
  LossScalerState scaler;  // only meaningful with amp fp16
  // The unfinished epoch's training loss summed over its samples so far, and their count
  // (both 0 at an epoch boundary), so its mean loss survives an interruption.
  double epoch_loss_sum = 0;
  int64_t epoch_samples = 0;
  // The optimizer steps of the whole run that wrote it (its lr schedule's length); 0 if unknown.
  int64_t run_steps = 0;
  RunSettings settings;  // of the run that wrote it (empty before stoker recorded them)
  // The checksums (util/file_checksum.h) of its model.pt, optimizer.pt and rng.pt as written,
  // which bind them to this description: a file copied in from another run is refused. Set by
  // save_checkpoint (a caller's values are ignored) and read back by find_checkpoint; empty for
  // a checkpoint written before stoker recorded them, whose files are then not compared.
  std::map<std::string, uint64_t> file_checksums;
};

// Creates `dir` (and its parents) if missing and checks that files can be created in it, so a
// run fails before training rather than at its first checkpoint. kIoError naming `dir`.
Status prepare_checkpoint_dir(const std::string& dir);

// Locks the existing checkpoint directory `dir` for this process (DirectoryLock): a second run
// on it fails at once (kAlreadyExists) instead of deleting the first one's checkpoints.
Result<DirectoryLock> lock_checkpoint_dir(const std::string& dir);

// Removes the .partial-step-* directories of `dir`: checkpoints whose writing was cut short (a
// second interrupt, a kill). Call with the directory's lock held. Returns how many.
int remove_partial_checkpoints(const std::string& dir);

// The current checkpoint's subdirectory of `dir`: kNotFound if `dir` holds no checkpoint,
// kCorrupt if LATEST names a directory that is not there.
Result<std::string> latest_checkpoint(const std::string& dir);

// A checkpoint found to resume from.
struct FoundCheckpoint {
  std::string path;       // its subdirectory
  CheckpointState state;  // its meta.json, range-checked
  // Empty, or why it is not the one LATEST names (LATEST damaged, a complete checkpoint beside).
  std::string note;
};

// The checkpoint of `dir` to resume from: LATEST's; if LATEST is missing or damaged, the newest
// complete checkpoint stoker wrote beside it (with a note saying so). kNotFound if `dir` holds
// none; kCorrupt naming the file if LATEST is damaged with no complete checkpoint beside it, or
// the checkpoint's meta.json is not valid (values out of range included); kUnsupported for
// another format version.
Result<FoundCheckpoint> find_checkpoint(const std::string& dir);

// kInvalidArgument saying what differs (run_difference) if `found` was written by another run.
Status check_same_run(const FoundCheckpoint& found, const RunIdentity& current);

// Reads the tensors of checkpoint `found` into `model` and `optimizer` (built like the saved
// ones: same architecture, same optimizer kind over model.parameters()) and restores the default
// CPU generator's state. kCorrupt in one line naming the checkpoint and the file if one is
// missing, is not the file its meta.json records (file_checksums), or cannot be read.
Status restore_checkpoint(const FoundCheckpoint& found, Model& model,
                          torch::optim::Optimizer& optimizer);

// Writes a new checkpoint of `state`, `model`, `optimizer` and the default CPU generator's state
// into `dir` (which must exist) and makes it the current one. On error the previous checkpoint
// stays current and nothing new is left behind.
Status save_checkpoint(const std::string& dir, const CheckpointState& state, Model& model,
                       torch::optim::Optimizer& optimizer);

// find_checkpoint, then restore_checkpoint into `model` and `optimizer`; returns the state.
// kInvalidArgument if it was written for another model (by name), else find_checkpoint's and
// restore_checkpoint's errors.
Result<CheckpointState> load_checkpoint(const std::string& dir, Model& model,
                                        torch::optim::Optimizer& optimizer);

}  // namespace stoker
