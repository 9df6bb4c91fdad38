#pragma once
// EnvironmentLookup: a variable of the environment, or nullopt if unset. Injected where a
// setting comes from the environment (the cache folder, AWS credentials), so tests need not
// touch the process's environment.

#include <functional>
#include <optional>
#include <string>

namespace stoker {

using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

}  // namespace stoker
