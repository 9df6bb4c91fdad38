#pragma once
// The `stoker` subcommands. Each add_*_command registers a subcommand on `app`; its callback
// throws stoker::Error on failure, which main() turns into a one-line message and exit code.

namespace CLI {
class App;
}

namespace stoker::cli {

void add_bench_command(CLI::App& app);
// Registers `bench train` on the `bench` subcommand.
void add_bench_train_command(CLI::App& bench);
void add_convert_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_verify_command(CLI::App& app);

}  // namespace stoker::cli
