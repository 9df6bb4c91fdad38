// busy_wait: a synthetic field for benchmarks and tests (sample_cost.h).
#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/sample_cost.h"

namespace stoker::ops {

OpSpec busy_wait() {
  OpSpec op;
  op.name = "busy_wait";
  op.role = OpRole::kSource;
  op.output = SampleType{Layout::kArray, DType::kInt64, false};
  op.backend = OpBackend::kBoth;
  op.doc =
      "A synthetic field: busy-waits per sample and writes the sample's index (int64), "
      "to make a loader as slow as a decoder would";
  op.params = {
      ParamSpec::integer("microseconds", 0, "the wait per sample").in(0, 10'000'000),
  };
  op.make_source = [](const Params& p,
                      const SourceContext&) -> Result<std::shared_ptr<const Transform>> {
    return busy_wait_transform(std::chrono::microseconds(p.integer("microseconds")));
  };
  return op;
}

}  // namespace stoker::ops
