#pragma once
// Test helpers that read what `stoker train` wrote: a saved model's tensors and a run log's
// records.

#include <ATen/core/Tensor.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/classification.h"
#include "stoker/train/models.h"

namespace stoker::testing {

// Parameters and buffers of the built-in model `name` saved at `path` for the 4x4 images of
// kRowClasses classes of write_rows_dataset.
inline std::vector<at::Tensor> saved_parameters(const std::string& path,
                                                const std::string& name = "mlp") {
  ModelSpec spec;
  spec.height = 4;
  spec.width = 4;
  spec.num_classes = kRowClasses;
  std::unique_ptr<Model> model = make_model(name, spec);
  throw_if_error(model->load(path));
  std::vector<at::Tensor> out;
  for (const auto& [tensor_name, t] : model->named_state()) out.push_back(t.detach().clone());
  return out;
}

// The records of a JSONL log of kind `kind` ("run", "epoch", "step"; "" = all).
inline std::vector<nlohmann::json> log_records(const std::string& path, const std::string& kind) {
  std::ifstream log(path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(log, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (kind.empty() || record["record"] == kind) records.push_back(std::move(record));
  }
  return records;
}

}  // namespace stoker::testing
