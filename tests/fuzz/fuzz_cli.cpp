// Fuzz target: the option parser of the `ebla` command. The input is split into arguments
// at NUL and newline bytes (at most 64 of them), put after argv[0] = "ebla", and parsed by
// the app main() uses (apps/ebla/cli_app.hpp): subcommands, options, their conversions and
// the checks CLI11 runs during the parse. No command runs. The parse must end normally or
// with a CLI::ParseError (help and version requests included); the help text it asks for is
// formatted, and the command line is recorded as main() records it.
#include "cli_app.hpp"
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr std::size_t max_arguments = 64;

std::vector<std::string> arguments(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"ebla"};
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < max_arguments + 1; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty() && args.size() < max_arguments + 1) args.push_back(current);
  return args;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> args = arguments(data, size);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(args.size());

  ebla::cli::set_command_line(argc, argv.data());
  (void)ebla::cli::command_line();

  CLI::App app;
  int kokkos_threads = 0;
  const auto commands = ebla::cli::build_app(app, kokkos_threads);
  try {
    app.parse(argc, argv.data());
  } catch (const CLI::CallForHelp&) {
    (void)app.help();
  } catch (const CLI::CallForAllHelp&) {
    (void)app.help("", CLI::AppFormatMode::All);
  } catch (const CLI::ParseError&) {
  }
  return 0;
}
