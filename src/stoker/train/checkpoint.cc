#include "stoker/train/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "stoker/train/default_generator.h"
#include "stoker/train/torch_archive.h"
#include "stoker/train/training_setup.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/file_checksum.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLatestName = "LATEST";
constexpr const char* kMarkerName = ".stoker-checkpoint";
constexpr const char* kMetaName = "meta.json";
constexpr const char* kModelName = "model.pt";
constexpr const char* kOptimizerName = "optimizer.pt";
constexpr const char* kRngName = "rng.pt";
constexpr const char* kPartialPrefix = ".partial-";
// The files of a checkpoint that LibTorch reads, bound to its meta.json by their checksums.
constexpr const char* kTensorFiles[] = {kModelName, kOptimizerName, kRngName};

nlohmann::json data_files_json(const std::vector<FileBlock>& blocks) {
  nlohmann::json out = nlohmann::json::array();
  for (const FileBlock& b : blocks) out.push_back({b.first, b.last, b.digest});
  return out;
}

std::string meta_json(const CheckpointState& s) {
  const RunIdentity& r = s.run;
  nlohmann::json j = {{"format_version", kCheckpointFormatVersion},
                      {"run",
                       {{"data", r.data},
                        {"data_files", data_files_json(r.data_files)},
                        {"model", r.model},
                        {"optimizer", r.optimizer},
                        {"schedule", r.schedule},
                        {"batch_size", r.batch_size},
                        {"accum", r.accum},
                        {"seed", r.seed},
                        {"shuffle_window", r.shuffle_window},
                        {"ra_reps", r.ra_reps},
                        {"mean", r.mean},
                        {"std", r.std}}},
                      {"step", s.step},
                      {"loader",
                       {{"seed", s.loader.seed},
                        {"epoch", s.loader.epoch},
                        {"position", s.loader.position},
                        {"shuffle_window", s.loader.shuffle_window},
                        {"ra_reps", s.loader.ra_reps}}},
                      {"scaler", {{"scale", s.scaler.scale}, {"good_steps", s.scaler.good_steps}}},
                      {"epoch_loss_sum", s.epoch_loss_sum},
                      {"epoch_samples", s.epoch_samples},
                      {"run_steps", s.run_steps},
                      {"settings", s.settings}};
  for (const auto& [name, checksum] : s.file_checksums)
    j["files"][name] = fmt::format("{:016x}", checksum);
  return j.dump(2) + "\n";
}

// The values a checkpoint of a sane run can hold; "" or what is out of range.
std::string out_of_range(const CheckpointState& s) {
  if (s.step < 0) return "step " + std::to_string(s.step);
  if (s.loader.epoch < 0) return "loader epoch " + std::to_string(s.loader.epoch);
  if (s.loader.position < 0) return "loader position " + std::to_string(s.loader.position);
  if (s.loader.shuffle_window < 0 || s.loader.shuffle_window != s.run.shuffle_window)
    return fmt::format("loader shuffle_window {} (the run's: {})", s.loader.shuffle_window,
                       s.run.shuffle_window);
  if (s.loader.ra_reps < 1 || s.loader.ra_reps != s.run.ra_reps)
    return fmt::format("loader ra_reps {} (the run's: {})", s.loader.ra_reps, s.run.ra_reps);
  if (!std::isfinite(s.scaler.scale) || s.scaler.scale <= 0)
    return "loss scale " + fmt::format("{}", s.scaler.scale);
  if (s.scaler.good_steps < 0) return "scaler good_steps " + std::to_string(s.scaler.good_steps);
  if (!std::isfinite(s.epoch_loss_sum) || s.epoch_loss_sum < 0)
    return "epoch_loss_sum " + fmt::format("{}", s.epoch_loss_sum);
  if (s.epoch_samples < 0 || s.epoch_samples > s.loader.position)
    return "epoch_samples " + std::to_string(s.epoch_samples) + " (loader position " +
           std::to_string(s.loader.position) + ")";
  if (s.run_steps < 0) return "run_steps " + std::to_string(s.run_steps);
  if (s.run.batch_size < 1) return "batch_size " + std::to_string(s.run.batch_size);
  if (s.run.accum < 1) return "accum " + std::to_string(s.run.accum);
  if (s.run.mean.size() != s.run.std.size()) return "mean and std of different lengths";
  for (size_t c = 0; c < s.run.mean.size(); ++c) {
    if (!std::isfinite(s.run.mean[c]) || !std::isfinite(s.run.std[c]) || s.run.std[c] <= 0)
      return fmt::format("input normalisation mean {} std {}", s.run.mean[c], s.run.std[c]);
  }
  return "";
}

// A value of meta.json that is not what its key holds; what() names the key and the value.
struct BadValue : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole number under `key` of `object` (named `of` + `key` in the error): a JSON integer
// within T's range. nlohmann's get<T>() would turn 1e30 or -1 into some T silently.
template <typename T>
T whole_number(const nlohmann::json& object, const char* key, const char* of = "") {
  const nlohmann::json& value = object.at(key);
  using limits = std::numeric_limits<T>;
  const bool fits =
      value.is_number_unsigned()  ? value.get<uint64_t>() <= static_cast<uint64_t>(limits::max())
      : value.is_number_integer() ? value.get<int64_t>() >= static_cast<int64_t>(limits::min())
                                  : false;
  if (!fits) {
    throw BadValue(fmt::format("{}{} {} is out of range (a whole number from {} to {})", of, key,
                               value.dump(), limits::min(), limits::max()));
  }
  return value.get<T>();
}

Result<CheckpointState> parse_meta(const std::string& text, const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const int version = whole_number<int>(j, "format_version");
    if (version != kCheckpointFormatVersion) {
      return unsupported(path + ": checkpoint format version " + std::to_string(version) +
                         " is not " + std::to_string(kCheckpointFormatVersion) +
                         ", which this stoker reads: start the run again in another directory");
    }
    CheckpointState s;
    const nlohmann::json& run = j.at("run");
    s.run.data = run.at("data").get<std::string>();
    if (run.contains("data_files")) {
      for (const auto& b : run.at("data_files").get<std::vector<std::vector<std::string>>>()) {
        if (b.size() != 3) throw BadValue("data_files: not [first, last, digest]");
        s.run.data_files.push_back({b[0], b[1], b[2]});
      }
    }
    s.run.model = run.at("model").get<std::string>();
    s.run.optimizer = run.at("optimizer").get<std::string>();
    s.run.schedule = run.at("schedule").get<std::string>();
    s.run.batch_size = whole_number<int64_t>(run, "batch_size");
    s.run.accum = whole_number<int64_t>(run, "accum");
    s.run.seed = whole_number<uint64_t>(run, "seed");
    if (run.contains("shuffle_window"))
      s.run.shuffle_window = whole_number<int64_t>(run, "shuffle_window");
    if (run.contains("ra_reps")) s.run.ra_reps = whole_number<int64_t>(run, "ra_reps");
    if (run.contains("mean")) s.run.mean = run.at("mean").get<std::vector<float>>();
    if (run.contains("std")) s.run.std = run.at("std").get<std::vector<float>>();
    s.step = whole_number<int64_t>(j, "step");
    const nlohmann::json& loader = j.at("loader");
    s.loader.seed = whole_number<uint64_t>(loader, "seed", "loader ");
    s.loader.epoch = whole_number<int64_t>(loader, "epoch", "loader ");
    s.loader.position = whole_number<int64_t>(loader, "position", "loader ");
    if (loader.contains("shuffle_window"))
      s.loader.shuffle_window = whole_number<int64_t>(loader, "shuffle_window", "loader ");
    if (loader.contains("ra_reps"))
      s.loader.ra_reps = whole_number<int64_t>(loader, "ra_reps", "loader ");
    s.scaler.scale = j.at("scaler").at("scale").get<double>();
    s.scaler.good_steps = whole_number<int64_t>(j.at("scaler"), "good_steps", "scaler ");
    s.epoch_loss_sum = j.at("epoch_loss_sum").get<double>();
    s.epoch_samples = whole_number<int64_t>(j, "epoch_samples");
    s.run_steps = whole_number<int64_t>(j, "run_steps");
    if (j.contains("settings")) s.settings = j.at("settings").get<RunSettings>();
    if (j.contains("files")) {
      for (const auto& [name, hex] : j.at("files").items()) {
        const std::string digits = hex.get<std::string>();
        if (digits.size() != 16 ||
            digits.find_first_not_of("0123456789abcdef") != std::string::npos)
          throw BadValue("checksum of " + name + " '" + digits + "' is not 16 hex digits");
        s.file_checksums[name] = std::stoull(digits, nullptr, 16);
      }
    }
    const std::string bad = out_of_range(s);
    if (!bad.empty()) return corrupt(path + ": not a valid checkpoint description: " + bad);
    return s;
  } catch (const BadValue& e) {
    return corrupt(path + ": not a valid checkpoint description: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    return corrupt(path + ": not a valid checkpoint description: " + e.what());
  }
}

// Reads and checks the description of checkpoint subdirectory `sub`.
Result<CheckpointState> read_meta(const std::string& sub) {
  const std::string path = sub + "/" + kMetaName;
  STOKER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_meta(text, path);
}

// Writes every file of a checkpoint into the existing directory `sub`, the description last,
// with the checksums of the tensor files as written. The marker holds `name`, the checkpoint's
// final directory name.
Status write_checkpoint_files(const std::string& sub, const std::string& name,
                              const CheckpointState& state, Model& model,
                              torch::optim::Optimizer& optimizer) {
  STOKER_RETURN_IF_ERROR(write_file_atomically(sub + "/" + kMarkerName, name));
  STOKER_RETURN_IF_ERROR(model.save_state(sub + "/" + kModelName));
  STOKER_RETURN_IF_ERROR(save_archive(optimizer, sub + "/" + kOptimizerName, "optimizer state"));
  STOKER_RETURN_IF_ERROR(
      save_archive(default_generator_state(), sub + "/" + kRngName, "RNG state"));
  CheckpointState described = state;
  described.file_checksums.clear();
  for (const char* file : kTensorFiles) {
    STOKER_ASSIGN_OR_RETURN(described.file_checksums[file], file_checksum(sub + "/" + file));
  }
  return write_file_atomically(sub + "/" + kMetaName, meta_json(described));
}

// Checks checkpoint `sub`'s tensor file `name` before it is loaded: it is there, and where the
// description recorded its checksum, it is the very file written with the checkpoint (not
// another run's model.pt copied in, nor a damaged one).
Status check_tensor_file(const std::string& sub, const std::string& name,
                         const std::map<std::string, uint64_t>& checksums) {
  Result<uint64_t> checksum = file_checksum(sub + "/" + name);
  if (checksum.status().code() == StatusCode::kNotFound) {
    return corrupt(fmt::format(
        "checkpoint {} has no {} (a checkpoint holds {}, {}, {} and {}): resume from another "
        "checkpoint or start again in another directory",
        sub, name, kMetaName, kModelName, kOptimizerName, kRngName));
  }
  if (!checksum.is_ok()) return checksum.status();
  const auto recorded = checksums.find(name);
  if (recorded != checksums.end() && recorded->second != checksum.value()) {
    return corrupt(fmt::format(
        "checkpoint {}: {} is not the file written with this checkpoint (checksum {:016x}, its "
        "{} records {:016x}): another run's file or a damaged one; resume from another "
        "checkpoint or start again in another directory",
        sub, name, checksum.value(), kMetaName, recorded->second));
  }
  return Status::ok();
}

// Whether `name` is `prefix` followed by step-<digits>-<6 characters>.
bool is_checkpoint_name(const std::string& name, const std::string& prefix) {
  const size_t start = prefix.size() + std::strlen(kCheckpointPrefix);
  const size_t dash = name.rfind('-');
  if (name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(prefix.size(), std::strlen(kCheckpointPrefix), kCheckpointPrefix) != 0 ||
      dash == std::string::npos || dash <= start || name.size() - dash - 1 != 6)
    return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(start),
                     name.begin() + static_cast<std::ptrdiff_t>(dash),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool is_real_directory(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_directory(ec) && !entry.is_symlink(ec);
}

// A complete or superseded checkpoint stoker wrote: a real directory (not a link) named
// step-<digits>-<6 characters> whose marker holds that name. A copy or a renamed checkpoint
// (the marker names another directory) is the user's. A directory without a marker or with an
// empty one comes from a stoker before the marker named its directory (then the name alone
// decides: an empty directory is a crash's before its marker; a copy of such a checkpoint is
// not told apart).
bool is_own_checkpoint(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  if (!is_real_directory(entry) || !is_checkpoint_name(name, "")) return false;
  std::error_code ec;
  if (fs::is_empty(entry.path(), ec)) return true;
  Result<std::string> marker = read_file((entry.path() / kMarkerName).string(), 4096);
  return marker.is_ok() && (marker.value() == name || marker.value().empty());
}

// A checkpoint being written, or left half-written by a run that was killed: a real directory
// named .partial-step-<digits>-<6 characters>, a name only stoker gives.
bool is_partial_checkpoint(const fs::directory_entry& entry) {
  return is_real_directory(entry) &&
         is_checkpoint_name(entry.path().filename().string(), kPartialPrefix);
}

// The newest complete checkpoint stoker wrote in `dir` (largest step, its description valid),
// if any: into `found`'s path and state.
bool newest_complete_checkpoint(const std::string& dir, FoundCheckpoint* found) {
  std::error_code ec;
  bool any = false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!is_own_checkpoint(entry)) continue;
    Result<CheckpointState> state = read_meta(entry.path().string());
    if (state.is_ok() && (!any || state.value().step > found->state.step)) {
      any = true;
      found->path = entry.path().string();
      found->state = std::move(state).value();
    }
  }
  return any;
}

}  // namespace

std::string data_identity(const Manifest& manifest, const std::vector<FileBlock>& files) {
  std::string text = std::to_string(manifest.records) + "\n" + manifest.schema.to_json() + "\n";
  for (const ShardInfo& shard : manifest.shards)
    text += fmt::format("{} {:016x}\n", shard.records, shard.index_checksum);
  text += file_blocks_digest(files);  // "" for a stoker dataset: its identity as before
  return fmt::format("{:016x}", xxh3_64(text.data(), text.size()));
}

std::string run_difference(const RunIdentity& saved, const RunIdentity& current) {
  std::vector<std::string> differences;
  auto compare = [&](const std::string& what, const auto& a, const auto& b) {
    if (a != b) differences.push_back(fmt::format("{} {} (this run: {})", what, a, b));
  };
  if (saved.data != current.data) {
    const std::string files = file_blocks_difference(saved.data_files, current.data_files);
    differences.push_back(!saved.data_files.empty() && !files.empty()
                              ? "other training data: " + files
                              : "other training data (identity " + saved.data + ", this run's " +
                                    current.data + ")");
  }
  compare("model", saved.model, current.model);
  compare("optimizer", saved.optimizer, current.optimizer);
  compare("lr schedule", saved.schedule, current.schedule);
  compare("global batch size", saved.batch_size, current.batch_size);
  compare("accumulation", saved.accum, current.accum);
  compare("seed", saved.seed, current.seed);
  compare("--shuffle-window", shuffle_window_text(saved.shuffle_window),
          shuffle_window_text(current.shuffle_window));
  compare("--ra-reps", saved.ra_reps, current.ra_reps);
  if (!saved.mean.empty() && (saved.mean != current.mean || saved.std != current.std)) {
    differences.push_back(
        fmt::format("input normalisation --mean {} --std {} (this run: --mean {} --std {})",
                    fmt::join(saved.mean, " "), fmt::join(saved.std, " "),
                    fmt::join(current.mean, " "), fmt::join(current.std, " ")));
  }
  std::string out;
  for (const std::string& d : differences) out += (out.empty() ? "" : ", ") + d;
  return out;
}

namespace {

// A saved --augment as this build writes it: each call read and written again (augment_op,
// to_text), so that a parameter added since, whose default gives the pixels the call gave
// before (color_jitter's backend, the policies' version), is no difference. A call this build
// cannot read stays as it was written.
std::string augment_as_written_now(const std::string& saved) {
  if (saved == "none") return saved;
  std::string out;
  size_t start = 0;
  while (start <= saved.size()) {
    const size_t end = std::min(saved.find(' ', start), saved.size());
    const std::string text = saved.substr(start, end - start);
    Result<OpCall> call = augment_op(text);
    out += (out.empty() ? "" : " ") + (call.is_ok() ? to_text(call.value()) : text);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string settings_difference(const RunSettings& saved, const RunSettings& current) {
  std::string out;
  for (const auto& [option, saved_value] : saved) {
    const auto now = current.find(option);
    const std::string value =
        option == "--augment" ? augment_as_written_now(saved_value) : saved_value;
    if (now != current.end() && now->second != value)
      out += fmt::format("{}{} {} (this run: {})", out.empty() ? "" : ", ", option, value,
                         now->second);
  }
  return out;
}

Status prepare_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return io_error("cannot create checkpoint directory '" + dir +
                    "': " + (ec ? ec.message() : "not a directory"));
  }
  // An AtomicFile destroyed uncommitted removes its temporary: a probe that leaves nothing.
  Result<AtomicFile> probe = AtomicFile::create(dir + "/" + kLatestName);
  if (!probe.is_ok()) {
    return io_error("checkpoint directory '" + dir +
                    "' is not writable: " + probe.status().message());
  }
  return Status::ok();
}

std::vector<std::string> checkpoint_dir_names() {
  return {kLatestName, std::string(kCheckpointPrefix) + "*", std::string(kPartialPrefix) + "*"};
}

Result<DirectoryLock> lock_checkpoint_dir(const std::string& dir) {
  return DirectoryLock::acquire(dir, "checkpoint directory");
}

Result<std::string> latest_checkpoint(const std::string& dir) {
  const std::string latest = dir + "/" + kLatestName;
  if (!fs::exists(latest))
    return not_found("no checkpoint in '" + dir + "' (no " + kLatestName + ")");
  STOKER_ASSIGN_OR_RETURN(std::string name, read_file(latest));
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  const std::string sub = dir + "/" + name;
  if (name.empty() || name.find('/') != std::string::npos || !fs::is_directory(sub)) {
    return corrupt(latest + " names '" + name + "', which is not a checkpoint directory");
  }
  return sub;
}

Result<FoundCheckpoint> find_checkpoint(const std::string& dir) {
  FoundCheckpoint found;
  Result<std::string> latest = latest_checkpoint(dir);
  Status damage = latest.status();
  if (latest.is_ok()) {
    found.path = latest.value();
    Result<CheckpointState> state = read_meta(found.path);
    if (state.is_ok()) {
      found.state = std::move(state).value();
      return found;
    }
    if (state.status().code() == StatusCode::kUnsupported) return state.status();
    damage = state.status();
  }
  // LATEST missing, unreadable, dangling, or naming a checkpoint whose description is damaged:
  // a complete checkpoint beside it is the next best (never deleted, never guessed at).
  const std::string damaged = found.path;
  if (!newest_complete_checkpoint(dir, &found) || found.path == damaged) return damage;
  found.note = fmt::format("{}; resuming from {}, the newest complete checkpoint beside it",
                           damage.message(), found.path);
  return found;
}

Status check_same_run(const FoundCheckpoint& found, const RunIdentity& current) {
  const std::string difference = run_difference(found.state.run, current);
  if (difference.empty()) return Status::ok();
  return invalid_argument("checkpoint " + found.path + " belongs to another run: " + difference +
                          "; resume with the same settings or use another checkpoint directory");
}

Status save_checkpoint(const std::string& dir, const CheckpointState& state, Model& model,
                       torch::optim::Optimizer& optimizer) {
  std::string partial =
      fmt::format("{}/{}{}{:08}-XXXXXX", dir, kPartialPrefix, kCheckpointPrefix, state.step);
  if (::mkdtemp(partial.data()) == nullptr) {
    return io_error("cannot create a checkpoint in '" + dir + "': " + std::strerror(errno));
  }
  const std::string name =
      fs::path(partial).filename().string().substr(std::strlen(kPartialPrefix));
  const std::string sub = dir + "/" + name;
  Status written = write_checkpoint_files(partial, name, state, model, optimizer);
  if (written.is_ok() && ::rename(partial.c_str(), sub.c_str()) != 0)
    written = io_error("cannot rename " + partial + " to " + sub + ": " + std::strerror(errno));
  if (written.is_ok()) written = fsync_directory(dir);
  if (written.is_ok()) written = write_file_atomically(dir + "/" + kLatestName, name + "\n");
  std::error_code ec;
  if (!written.is_ok()) {
    fs::remove_all(partial, ec);
    fs::remove_all(sub, ec);
    return written;
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename() != name &&
        (is_own_checkpoint(entry) || is_partial_checkpoint(entry)))
      fs::remove_all(entry.path(), ec);
  }
  return Status::ok();
}

int remove_partial_checkpoints(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (is_partial_checkpoint(entry) && fs::remove_all(entry.path(), ec) > 0) ++removed;
  }
  return removed;
}

Status restore_checkpoint(const FoundCheckpoint& found, Model& model,
                          torch::optim::Optimizer& optimizer) {
  const std::string& sub = found.path;
  for (const char* file : kTensorFiles)
    STOKER_RETURN_IF_ERROR(check_tensor_file(sub, file, found.state.file_checksums));
  STOKER_RETURN_IF_ERROR(model.load(sub + "/" + kModelName));
  STOKER_RETURN_IF_ERROR(load_archive(optimizer, sub + "/" + kOptimizerName, "optimizer state"));
  at::Tensor rng;
  STOKER_RETURN_IF_ERROR(load_archive(rng, sub + "/" + kRngName, "RNG state"));
  try {
    set_default_generator_state(rng);
  } catch (const c10::Error& e) {
    return corrupt("cannot restore RNG state from " + sub + "/" + kRngName + ": " +
                   short_message(e));
  }
  return Status::ok();
}

Result<CheckpointState> load_checkpoint(const std::string& dir, Model& model,
                                        torch::optim::Optimizer& optimizer) {
  STOKER_ASSIGN_OR_RETURN(FoundCheckpoint found, find_checkpoint(dir));
  if (found.state.run.model != model.name()) {
    return invalid_argument("checkpoint " + found.path + " was written for model " +
                            found.state.run.model + ", not " + model.name());
  }
  STOKER_RETURN_IF_ERROR(restore_checkpoint(found, model, optimizer));
  return found.state;
}

}  // namespace stoker
