// The subcommands of the `ebla` command. Each registers its options on the CLI11 app
// and returns the callback that runs it; a callback returns the process exit code.
#pragma once

#include <ebla/core/error.hpp>

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace ebla::cli {

using Command = std::function<int()>;

Command add_formats(CLI::App& app);
Command add_round(CLI::App& app);
Command add_bounds(CLI::App& app);
Command add_qdot(CLI::App& app);
Command add_cg(CLI::App& app);
Command add_power(CLI::App& app);
Command add_mac(CLI::App& app);
Command add_gemm(CLI::App& app);
Command add_probe(CLI::App& app);
Command add_weakform(CLI::App& app);
Command add_info(CLI::App& app);

/// Exit code for bad input (unknown names, malformed numbers, invalid options).
constexpr int exit_bad_input = 2;

/// Parses a whole string as a double (decimal, hex float, inf, nan); throws
/// ebla::InvalidArgument naming `what` and the string otherwise.
double parse_double(const std::string& text, const std::string& what);

/// printf into a std::string (any length).
__attribute__((format(printf, 1, 2))) std::string strf(const char* format, ...);

/// Runs f; an ebla::InvalidArgument it throws is rethrown prefixed with the option.
template <class F>
auto under_option(const std::string& option, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    throw_invalid(option, e.what());
  }
}

/// The thread count of Kokkos's host execution space asked for with --kokkos-num-threads
/// (0: Kokkos's own choice: KOKKOS_NUM_THREADS, OMP_NUM_THREADS, or every core). main()
/// sets it before a command runs.
void set_kokkos_threads(int threads);

/// Kokkos for the length of a command: initialised with that thread count (unless Kokkos
/// is already running), finalised at the end of the scope. Serial host spaces always run
/// one thread.
class KokkosSession {
 public:
  KokkosSession();
  ~KokkosSession();
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;

 private:
  bool owner_ = false;
};

/// The check of every --seed: a whole number in 0..2^63 - 1, written in decimal (a sign, a
/// fraction or more digits than that are refused, not wrapped or clamped).
CLI::Validator seed_range();

/// The command line of this process, arguments quoted where needed (for result files);
/// recorded by main().
const std::string& command_line();
void set_command_line(int argc, const char* const* argv);

}  // namespace ebla::cli
