#include "stoker/train/label_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace stoker {
namespace {

// The first record of `data` whose label is outside [0, classes), and that label.
std::optional<std::pair<uint64_t, int64_t>> first_bad_label(const Dataset& data, int64_t classes) {
  const int field = data.schema().find("label");
  std::optional<std::pair<uint64_t, int64_t>> bad;
  const Status walked = data.for_each_record([&](uint64_t i) {
    int64_t label;
    std::memcpy(&label, data.fixed_field(i, field), sizeof(label));
    if (label >= 0 && label < classes) return Status::ok();
    bad = std::make_pair(i, label);
    return Status(StatusCode::kCancelled, "");  // found: the walk stops
  });
  if (!bad) throw_if_error(walked);
  return bad;
}

}  // namespace

void check_labels(const Dataset& data, int64_t classes) {
  if (const auto bad = first_bad_label(data, classes)) {
    throw Error(invalid_argument(
        fmt::format("{}: record {} has label {}, outside the model's {} classes [0, {})",
                    data.dir(), bad->first, bad->second, classes, classes)));
  }
}

void check_batch_labels(const at::Tensor& labels, const Dataset& data, int64_t classes) {
  if (labels.numel() == 0) return;
  // A plain scan of the loader's host labels: two reductions and two item() calls per step
  // cost more than the scan (a few dozen ns for a batch).
  const at::Tensor host = labels.to(at::kCPU, at::kLong).contiguous();
  const int64_t* first = host.data_ptr<int64_t>();
  const auto [lowest, highest] = std::minmax_element(first, first + host.numel());
  const int64_t low = *lowest;
  const int64_t high = *highest;
  if (low >= 0 && high < classes) return;
  if (const auto bad = first_bad_label(data, classes)) {
    throw Error(data.record_error(
        bad->first,
        invalid_argument(fmt::format(
            "label {} is outside the model's {} classes [0, {}): the data changed while the run "
            "read it; check it with stoker verify",
            bad->second, classes, classes))));
  }
  throw Error(invalid_argument(fmt::format(
      "{}: a batch holds label {}, outside the model's {} classes [0, {}): the data changed "
      "while the run read it; check it with stoker verify",
      data.dir(), low < 0 ? low : high, classes, classes)));
}

}  // namespace stoker
