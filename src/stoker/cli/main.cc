// The `stoker` command line: subcommands from commands.h; errors become one line on stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "stoker/util/status.h"

int main(int argc, char** argv) {
  CLI::App app{"stoker: keeps accelerators fed. Sharded datasets, a fast loader, a trainer."};
  app.require_subcommand(1);
  stoker::cli::add_bench_command(app);
  stoker::cli::add_convert_command(app);
  stoker::cli::add_inspect_command(app);
  stoker::cli::add_train_command(app);
  stoker::cli::add_verify_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "stoker: %s\n", e.what());
    return e.status().code() == stoker::StatusCode::kCancelled ? 130 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoker: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
