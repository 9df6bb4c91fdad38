#include "stoker/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <torch/serialize.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "stoker/train/torch_archive.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLatestName = "LATEST";
constexpr const char* kMetaName = "meta.json";
constexpr const char* kModelName = "model.pt";
constexpr const char* kOptimizerName = "optimizer.pt";
constexpr const char* kRngName = "rng.pt";
constexpr const char* kSubdirPrefix = "step-";

std::string meta_json(const CheckpointState& s) {
  nlohmann::json j = {
      {"format_version", kCheckpointFormatVersion},
      {"model", s.model},
      {"step", s.step},
      {"loader",
       {{"seed", s.loader.seed}, {"epoch", s.loader.epoch}, {"position", s.loader.position}}},
      {"scaler", {{"scale", s.scaler.scale}, {"good_steps", s.scaler.good_steps}}},
      {"epoch_loss_sum", s.epoch_loss_sum},
      {"epoch_samples", s.epoch_samples},
      {"run_steps", s.run_steps}};
  return j.dump(2) + "\n";
}

Result<CheckpointState> parse_meta(const std::string& text, const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.at("format_version").get<int>() != kCheckpointFormatVersion) {
      return unsupported(path + ": checkpoint format version " + j.at("format_version").dump() +
                         " is not " + std::to_string(kCheckpointFormatVersion));
    }
    CheckpointState s;
    s.model = j.at("model").get<std::string>();
    s.step = j.at("step").get<int64_t>();
    s.loader.seed = j.at("loader").at("seed").get<uint64_t>();
    s.loader.epoch = j.at("loader").at("epoch").get<int64_t>();
    s.loader.position = j.at("loader").at("position").get<int64_t>();
    s.scaler.scale = j.at("scaler").at("scale").get<double>();
    s.scaler.good_steps = j.at("scaler").at("good_steps").get<int64_t>();
    s.epoch_loss_sum = j.at("epoch_loss_sum").get<double>();
    s.epoch_samples = j.at("epoch_samples").get<int64_t>();
    s.run_steps = j.value("run_steps", int64_t{0});
    return s;
  } catch (const nlohmann::json::exception& e) {
    return corrupt(path + ": not a valid checkpoint description: " + e.what());
  }
}

// Writes every file of a checkpoint into the existing directory `sub`, the description last.
Status write_checkpoint_files(const std::string& sub, const CheckpointState& state, Model& model,
                              torch::optim::Optimizer& optimizer) {
  STOKER_RETURN_IF_ERROR(model.save(sub + "/" + kModelName));
  STOKER_RETURN_IF_ERROR(save_archive(optimizer, sub + "/" + kOptimizerName, "optimizer state"));
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor rng;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng = generator.get_state();
  }
  STOKER_RETURN_IF_ERROR(save_archive(rng, sub + "/" + kRngName, "RNG state"));
  return write_file_atomically(sub + "/" + kMetaName, meta_json(state));
}

}  // namespace

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

Status save_checkpoint(const std::string& dir, const CheckpointState& state, Model& model,
                       torch::optim::Optimizer& optimizer) {
  std::string sub = fmt::format("{}/{}{:08}-XXXXXX", dir, kSubdirPrefix, state.step);
  if (::mkdtemp(sub.data()) == nullptr) {
    return io_error("cannot create a checkpoint in '" + dir + "': " + std::strerror(errno));
  }
  Status written = write_checkpoint_files(sub, state, model, optimizer);
  const std::string name = fs::path(sub).filename().string();
  if (written.is_ok()) written = write_file_atomically(dir + "/" + kLatestName, name + "\n");
  std::error_code ec;
  if (!written.is_ok()) {
    fs::remove_all(sub, ec);
    return written;
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string other = entry.path().filename().string();
    if (other != name && other.rfind(kSubdirPrefix, 0) == 0) fs::remove_all(entry.path(), ec);
  }
  return Status::ok();
}

Result<CheckpointState> load_checkpoint(const std::string& dir, Model& model,
                                        torch::optim::Optimizer& optimizer) {
  STOKER_ASSIGN_OR_RETURN(std::string sub, latest_checkpoint(dir));
  const std::string meta_path = sub + "/" + kMetaName;
  STOKER_ASSIGN_OR_RETURN(std::string meta_text, read_file(meta_path));
  STOKER_ASSIGN_OR_RETURN(CheckpointState state, parse_meta(meta_text, meta_path));
  if (state.model != model.name()) {
    return invalid_argument("checkpoint " + sub + " was written for model " + state.model +
                            ", not " + model.name());
  }
  STOKER_RETURN_IF_ERROR(model.load(sub + "/" + kModelName));
  STOKER_RETURN_IF_ERROR(load_archive(optimizer, sub + "/" + kOptimizerName, "optimizer state"));
  at::Tensor rng;
  STOKER_RETURN_IF_ERROR(load_archive(rng, sub + "/" + kRngName, "RNG state"));
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  try {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  } catch (const c10::Error& e) {
    return corrupt("cannot restore RNG state from " + sub + "/" + kRngName + ": " +
                   short_message(e));
  }
  return state;
}

}  // namespace stoker
