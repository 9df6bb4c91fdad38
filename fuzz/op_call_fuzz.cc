// libFuzzer target for the operation-call parser (pipeline/op_registry.h): the text of
// `--augment NAME:key=value,...` and of Python's calls, untrusted. For each input:
//   - parse_op_call either fails with one line (kInvalidArgument), or gives a call;
//   - a call's text parses back to the same text (the round trip the CLI's logs rely on);
//   - a pixel or float operation is made for a [3, 5, 7] image (or refused in one line) and
//     applied to one, a batch operation to a batch of three such float images and labels 0-2
//     (a label past num_classes refused in one line): every operation runs on whatever
//     parameters the registry lets through.
// Any violation is a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool one_line(const stoker::Status& s) {
  return s.code() == stoker::StatusCode::kInvalidArgument &&
         s.message().find('\n') == std::string::npos && !s.message().empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Result<OpCall> call = parse_op_call(text);
  if (!call.is_ok()) {
    check(one_line(call.status()));
    return 0;
  }
  const std::string written = to_text(call.value());
  const Result<OpCall> again = parse_op_call(written);
  check(again.is_ok() && to_text(again.value()) == written);

  const OpSpec& op = *call.value().op;
  const std::vector<int64_t> shape = {3, 5, 7};
  SampleInput input;
  input.index = static_cast<int64_t>(size);
  input.step = 1;
  if (op.role == OpRole::kPixel) {
    const auto made = op.make_pixel(call.value().params, {"image", shape});
    if (!made.is_ok()) return check(one_line(made.status())), 0;
    std::vector<uint8_t> image(3 * 5 * 7);
    for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 37 + size);
    check(made.value()->apply(input, image.data()).is_ok());
  } else if (op.role == OpRole::kFloat) {
    const auto made = op.make_float(call.value().params, {"image", shape});
    if (!made.is_ok()) return check(one_line(made.status())), 0;
    std::vector<float> image(3 * 5 * 7, 0.5f);
    check(made.value()->apply(input, image.data()).is_ok());
  } else if (op.role == OpRole::kBatch) {
    const auto made = op.make_batch(call.value().params);
    if (!made.is_ok()) return check(one_line(made.status())), 0;
    const std::vector<BatchFieldType> fields = {{"image", DType::kFloat32, shape},
                                                {"label", DType::kInt64, {}}};
    const auto outputs = made.value()->outputs(fields);
    if (!outputs.is_ok()) return check(one_line(outputs.status())), 0;
    const int64_t classes = outputs.value()[1].sample_shape.at(0);
    if (classes > 4096) return 0;  // a large but valid target row: nothing more to find
    std::vector<float> images(3 * 3 * 5 * 7);
    for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i % 11) - 5;
    const size_t slot = std::max<size_t>(8, 4 * static_cast<size_t>(classes));
    std::vector<uint8_t> labels(3 * slot);
    for (int64_t k = 0; k < 3; ++k) std::memcpy(labels.data() + k * slot, &k, sizeof k);
    BatchInput batch;
    batch.size = 3;
    batch.position = static_cast<int64_t>(size);
    batch.fields = {{&fields[0], reinterpret_cast<uint8_t*>(images.data()), 3 * 5 * 7 * 4},
                    {&fields[1], labels.data(), slot}};
    const Status applied = made.value()->apply(batch);
    check(applied.is_ok() || (classes < 3 && one_line(applied)));
  }
  return 0;
}
