#include "stoker/pipeline/order_registry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stoker/pipeline/sampler.h"

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

}  // namespace
}  // namespace stoker
