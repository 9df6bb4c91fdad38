#pragma once
// The order registry: every global order (global_order.h) described once, by its name, its
// parameters (ParamSpecs: a mixture's `weights`) and its factory, as operations and sources are.
// An order is one file, orders/NAME.cc, defining `OrderSpec stoker::orders::NAME()`; the build
// lists the files of orders/ itself (cmake/StokerRegistry.cmake). docs/DESIGN.md states each
// order's contract.
//
// The table is built on first use and immutable after: thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/pipeline/global_order.h"
#include "stoker/util/param_spec.h"
#include "stoker/util/status.h"

namespace stoker {

struct OrderSpec {
  std::string name;  // "mixture"
  std::string doc;   // one line: the order it makes
  std::vector<ParamSpec> params;
  // The order over `input` with checked `params`; kInvalidArgument, one line naming the
  // parameter, for an input its parameters do not fit (three weights for two parts).
  std::function<Result<std::shared_ptr<const GlobalOrder>>(const OrderInput& input,
                                                           const Params& params)>
      make;
};

// Every order, by name.
const std::vector<OrderSpec>& global_orders();
// The order `name` over `input` with `given` parameters, checked (bind_params); kInvalidArgument
// naming the orders for an unknown name.
Result<std::shared_ptr<const GlobalOrder>> make_order(
    const std::string& name, const OrderInput& input,
    const std::vector<std::pair<std::string, ParamValue>>& given = {});
// The order `name` with `given` parameters as one text, each parameter checked and in the
// spec's order, defaults filled in ("shard_window:window=8"):
// what a loader's state records of its order.
Result<std::string> order_text(const std::string& name,
                               const std::vector<std::pair<std::string, ParamValue>>& given);
// The registry as JSON: [{"name", "doc", "params": [ParamSpec as param_json.h]}].
std::string orders_json();

}  // namespace stoker
