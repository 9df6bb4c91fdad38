#include "stoker/pipeline/order_registry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stoker/pipeline/sampler.h"
#include "stoker/util/cancel_scope.h"

namespace stoker {
namespace {

TEST(OrderRegistry, EveryOrderIsNamedOnceAndDescribed) {
  std::vector<std::string> names;
  for (const OrderSpec& spec : global_orders()) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"global", "mixture", "per_record", "shard_window"}));
  const auto json = nlohmann::json::parse(orders_json());
  ASSERT_EQ(json.size(), 4u);
  EXPECT_EQ(json[3]["params"][0]["name"], "window");
}

TEST(OrderRegistry, AnUnknownOrderOrParameterIsOneLineNamingWhatThereIs) {
  OrderInput input;
  input.parts = {{10}};
  EXPECT_EQ(make_order("random", input).status().message(),
            "order 'random' is not one of global, mixture, per_record, shard_window");
  EXPECT_EQ(make_order("shard_window", input, {{"size", int64_t{2}}}).status().message(),
            "order 'shard_window': unknown parameter 'size' (parameters: window)");
  EXPECT_EQ(make_order("global", OrderInput()).status().message(),
            "order 'global': the dataset has no records");
}

// A Sampler made from options deals the order the registry makes for them.
TEST(OrderRegistry, TheSamplersOrdersAreTheRegistrys) {
  OrderInput input;
  input.seed = 9;
  input.parts = {{5, 7, 3, 9}};
  SamplerOptions options;
  options.seed = 9;
  EXPECT_EQ(Sampler(input.parts[0], options).order(4),
            make_order("global", input).value_or_throw()->order(4));
  options.shuffle_window = 2;
  EXPECT_EQ(Sampler(input.parts[0], options).order(4),
            make_order("shard_window", input, {{"window", int64_t{2}}}).value_or_throw()->order(4));
}

// Each order and the Sampler's plan over it, shuffled and not, under a cancellation turning
// true at its `at`-th poll: kCancelled, polled no more after it, and the build unchanged
// without one. Over 2^20 samples, 16 polls of a loop; single-thread.
TEST(OrderRegistry, EveryOrdersBuildEndsAtTheCancelItPolls) {
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, ParamValue>>>>
      orders = {{"global", {}},
                {"shard_window", {{"window", int64_t{2}}}},
                {"mixture",
                 {{"weights", std::vector<double>{3, 1}}, {"samples_per_epoch", int64_t{1} << 20}}},
                {"per_record", {{"samples", int64_t{4}}}}};
  for (const bool shuffle : {true, false}) {
    for (const auto& [name, params] : orders) {
      OrderInput input;
      input.shuffle = shuffle;
      input.parts = {{1 << 17, 1 << 17}};  // two shards; the mixture's two parts
      if (name == "mixture") input.parts = {{1 << 17}, {1 << 17}};
      const auto order = make_order(name, input, params).value_or_throw();
      const Sampler sampler(order, SamplerOptions{});
      const std::vector<int64_t> whole = order->order(1);
      for (const int at : {1, 3}) {
        int polls = 0;
        const std::function<bool()> cancelled = [&] { return ++polls >= at; };
        CancelScope scope(&cancelled);
        for (const bool plan : {false, true}) {
          polls = 0;
          try {
            if (plan)
              sampler.plan(1);
            else
              order->order(1);
            ADD_FAILURE() << name << " built under a cancel";
          } catch (const Error& e) {
            EXPECT_EQ(e.status().code(), StatusCode::kCancelled) << name;
          }
          EXPECT_EQ(polls, at) << name << (plan ? " plan" : " order") << " shuffle " << shuffle;
        }
      }
      CancelScope none(nullptr);
      EXPECT_EQ(order->order(1), whole) << name;
    }
  }
}

}  // namespace
}  // namespace stoker
