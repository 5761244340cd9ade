// The command line of the `ebla` command as one CLI11 app: main() parses argv with it,
// and the option-parser fuzz target (tests/fuzz/fuzz_cli.cpp) parses its inputs with the
// very same setup.
#pragma once

#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <map>

namespace ebla::cli {

/// Makes `app` the `ebla` command: its name and description, --version, the subcommands
/// (exactly one required) with their options, and --kokkos-num-threads (checked to be an
/// integer in 1..1024 during the parse) on the commands that run Kokkos, stored in
/// `kokkos_threads`, which must outlive `app`. Returns the callback of each subcommand:
/// after a parse, run the one whose subcommand parsed(). Registering runs nothing.
std::map<CLI::App*, Command> build_app(CLI::App& app, int& kokkos_threads);

}  // namespace ebla::cli
