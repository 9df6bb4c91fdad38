#pragma once
// `--augment NAME[:key=value,...]`, repeatable: the operations applied to each training image
// after the crop (`train`, `doctor`, `bench loader`). Each is checked by the operation registry
// as it is parsed, a wrong one a usage error with the registry's message (the one Python gives),
// and kept as text with every parameter. Stateless.

#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stoker::cli {

CLI::Option* add_augment_option(CLI::App& command, std::vector<std::string>& ops);

}  // namespace stoker::cli
