// "per_record": each record K samples an epoch, spread over it (a video's K clips, as
// torchvision's RandomClipSampler spreads them): the "global" (or, with `window`, the
// "shard_window") order of a dataset whose every record is K records in a row, record r's
// occurrence k being sample r K + k (GlobalOrder::samples_per_record). A video folder of
// clips_per_video(K) (video/clips_per_video.h) numbers clip k of video r so: the same positions
// and, each sample drawing from sample r K + k's stream (SampleInput::index), the same clips.
// docs/DESIGN.md contract 13 states it.

#include <fmt/format.h>

#include "stoker/pipeline/order_registry.h"

namespace stoker::orders {
namespace {

class PerRecord : public GlobalOrder {
 public:
  PerRecord(std::shared_ptr<const GlobalOrder> samples, int64_t per_record)
      : samples_(std::move(samples)), per_record_(per_record) {}
  int64_t epoch_size() const override { return samples_->epoch_size(); }
  std::vector<int64_t> order(int64_t epoch) const override { return samples_->order(epoch); }
  int64_t samples_per_record() const override { return per_record_; }

 private:
  std::shared_ptr<const GlobalOrder> samples_;  // over the records, each per_record_ times
  int64_t per_record_;
};

}  // namespace

OrderSpec per_record() {
  OrderSpec spec;
  spec.name = "per_record";
  spec.doc =
      "each record `samples` samples an epoch, shuffled among all (a video's clips): the global "
      "(or shard-window) order of every record `samples` times";
  spec.params = {
      ParamSpec::integer("samples", 1, "samples each record gives an epoch").in(1, 65536),
      ParamSpec::integer("window", 0, "shards read at a time (shard_window's); 0: all")
          .at_least(0)};
  spec.make = [](const OrderInput& input,
                 const Params& params) -> Result<std::shared_ptr<const GlobalOrder>> {
    const int64_t k = params.integer("samples");
    if (input.parts.size() != 1)
      return invalid_argument(fmt::format(
          "order 'per_record': one dataset, not a mixture of {} sources", input.parts.size()));
    OrderInput scaled = input;
    for (int64_t& records : scaled.parts[0]) {
      if (records > (int64_t{1} << 40) / k)
        return invalid_argument("order 'per_record': an epoch of more than 2^40 samples");
      records *= k;
    }
    const int64_t window = params.integer("window");
    Result<std::shared_ptr<const GlobalOrder>> samples =
        window > 0 && input.shuffle ? make_order("shard_window", scaled, {{"window", window}})
                                    : make_order("global", scaled);
    if (!samples.is_ok())
      return invalid_argument("order 'per_record': " + samples.status().message());
    return std::shared_ptr<const GlobalOrder>(
        std::make_shared<PerRecord>(std::move(samples).value(), k));
  };
  return spec;
}

}  // namespace stoker::orders
