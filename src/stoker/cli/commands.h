#pragma once
// The `stoker` subcommands. Each add_*_command registers a subcommand on `app`; its callback
// throws stoker::Error on failure, which main() turns into a one-line message and exit code.

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace stoker::cli {

// The arguments main() was given after the program's name (`train --nproc` runs them again).
const std::vector<std::string>& command_arguments();

void add_bench_command(CLI::App& app);
// Registers `bench train` on the `bench` subcommand.
void add_bench_train_command(CLI::App& bench);
void add_convert_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_env_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_push_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_verify_command(CLI::App& app);

}  // namespace stoker::cli
