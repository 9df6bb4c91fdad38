// `stoker ops [--json]`: the operations a batch field is made with (pipeline/op_registry.h),
// each with its parameters' defaults and bounds; `--augment` takes the pixel ones, Python's
// stoker.transforms builds on the same description (--json prints it as Python reads it).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "stoker/pipeline/op_registry.h"

namespace stoker::cli {
namespace {

// Where an operation is used, by its role.
std::string use_of(const OpSpec& op) {
  switch (op.role) {
    case OpRole::kSource:
      return "makes a field from the record";
    case OpRole::kPixel:
      return fmt::format("pixel: --augment, Python stoker.transforms.{}", op.python_class);
    case OpRole::kNormalize:
      return "uint8 to float32, after the pixel operations";
    case OpRole::kFloat:
      return fmt::format("float: after normalize, Python stoker.transforms.{}", op.python_class);
    case OpRole::kBatch:
      return fmt::format("batch: the loader's batch transform{}",
                         op.python_class.empty() ? "" : ", Python's " + op.python_class);
    case OpRole::kJoint:
      return fmt::format("joint: a detection sample's image, boxes and masks together, Python's {}",
                         op.python_class);
  }
  return "";
}

void run_ops(bool json) {
  if (json) {
    fmt::print("{}\n", nlohmann::ordered_json::parse(operations_json()).dump(2));
    return;
  }
  for (const OpSpec& op : operations()) {
    fmt::print("{} ({})\n  {}.\n", op.name, use_of(op), op.doc);
    for (const ParamSpec& p : op.params)
      fmt::print("  {:<22} {}: {}\n", p.name + "=" + to_text(p.default_value), values_text(p),
                 p.doc);
  }
}

}  // namespace

void add_ops_command(CLI::App& app) {
  CLI::App* ops = app.add_subcommand(
      "ops", "The operations a batch field is made with, their parameters and bounds");
  auto json = std::make_shared<bool>(false);
  ops->add_flag("--json", *json, "Print the description as JSON (what Python reads)");
  ops->callback([json] { run_ops(*json); });
}

}  // namespace stoker::cli
