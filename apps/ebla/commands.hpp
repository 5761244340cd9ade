// The subcommands of the `ebla` command. Each registers its options on the CLI11 app
// and returns the callback that runs it; a callback returns the process exit code.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>  // parse_double

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // fmt::format: numbers into text

#include <functional>
#include <string>
#include <vector>

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
Command add_tune(CLI::App& app);
Command add_probe(CLI::App& app);
Command add_mma(CLI::App& app);
Command add_weakform(CLI::App& app);
Command add_info(CLI::App& app);

/// Exit code for bad input (unknown names, malformed numbers, invalid options).
constexpr int exit_bad_input = 2;

/// Whether an option among `options` was given, by its long name ("nx" for --nx): the
/// `given` of a library choice (solver_choice.hpp, gemm_choice.hpp).
std::function<bool(const std::string& long_name)> given_among(const std::vector<const CLI::Option*>& options);

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

/// For whole-number options of type int: a whole number written as a float ("1e3", "2.5e2")
/// becomes its digits ("1000", "250"), so that every size takes the same forms; any other
/// text is left for the option's own conversion to accept or refuse.
CLI::Validator whole_number();

/// The check of every --output: a file name that is not empty (an empty one would write
/// nothing and say nothing).
CLI::Validator output_file();

/// The command line of this process, arguments quoted where needed (for result files);
/// recorded by main().
const std::string& command_line();
void set_command_line(int argc, const char* const* argv);

}  // namespace ebla::cli
