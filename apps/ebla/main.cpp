// ebla: error-bounded linear algebra from the command line.
#include "cli_app.hpp"
#include "commands.hpp"
#include "distributed.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/core/temporary.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

namespace ebla::cli {

std::function<bool(const std::string&)> given_among(const std::vector<const CLI::Option*>& options) {
  return [&options](const std::string& long_name) {
    for (const CLI::Option* o : options)
      if (o->check_lname(long_name)) return o->count() > 0;
    return false;
  };
}

CLI::Validator seed_range() {
  return CLI::Validator(
      [](const std::string& text) {
        const bool digits = !text.empty() && text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
        // 19 digits reach past 2^63 - 1 = 9223372036854775807: compare as text of equal length
        const bool fits = digits && (text.size() < 19 || text <= "9223372036854775807");
        return fits ? std::string() : "'" + text + "' is not a seed: give a whole number in 0..9223372036854775807";
      },
      "INT in 0..2^63-1");
}

CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) {
        if (text.find_first_of(".eE") == std::string::npos) return std::string();
        double v = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (r.ec == std::errc() && r.ptr == text.data() + text.size() && v == std::floor(v) && std::fabs(v) < 0x1p53)
          text = std::to_string(static_cast<long long>(v));
        return std::string();
      },
      "");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](const std::string& text) {
        return text.empty() ? std::string("the file name is empty: give a path to write, or leave the option out")
                            : std::string();
      },
      "FILE");
}

namespace {
std::string recorded_command_line;

// Single quotes around an argument a shell would split or expand.
std::string shell_quoted(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                            "-_.,:/=+@%") == std::string::npos)
    return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

const std::string& command_line() { return recorded_command_line; }

void set_command_line(int argc, const char* const* argv) {
  recorded_command_line.clear();
  for (int i = 0; i < argc; ++i) recorded_command_line += (i ? " " : "") + shell_quoted(argv[i]);
}

}  // namespace ebla::cli

namespace {
// Every signal whose default action ends the process and that a handler may catch: SIGINT,
// SIGTERM (also how mpirun ends the other ranks when one aborts), SIGHUP, and the rest of
// POSIX's (a file size limit, a timer, a user signal, a closed pipe...): remove the output
// files being written, then die of the signal as if unhandled (exit status 128 + signal
// in a shell). The faults of the program itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL) are left
// to their default (and to the sanitizers' reports).
extern "C" void remove_temporaries_and_die(int signal) {
  ebla::remove_pending_temporaries();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// A signal that the process was started ignoring (nohup, a background job) stays ignored.
void remove_temporaries_on_signals() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU,
                     SIGXFSZ, SIGVTALRM, SIGPROF, SIGPOLL, SIGSYS}) {
    struct sigaction now {};
    if (sigaction(signal, nullptr, &now) != 0 || now.sa_handler == SIG_IGN) continue;
    struct sigaction handler {};
    handler.sa_handler = remove_temporaries_and_die;
    sigemptyset(&handler.sa_mask);
    sigaction(signal, &handler, nullptr);
  }
}

// A message for the terminal: control bytes other than a line end or a tab (an escape
// sequence from a file's text, quoted in a message) written as \xNN, never sent raw.
std::string printable(const char* message) {
  std::string s;
  for (const char* c = message; *c != '\0'; ++c) {
    const auto byte = static_cast<unsigned char>(*c);
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f)
      s += fmt::format("\\x{:02x}", byte);
    else
      s += *c;
  }
  return s;
}

// An allocation that failed: std::bad_alloc, or Kokkos's report of it, a runtime_error
// ("Kokkos failed to allocate memory" in 3.4, "... space failed to allocate" in 4.x).
bool out_of_memory(const std::exception& e) {
  return dynamic_cast<const std::bad_alloc*>(&e) != nullptr ||
         std::string(e.what()).find("failed to allocate") != std::string::npos;
}

// The first word of the command line where a command belongs that is none (empty if it is
// one, or there is none): "formt" in `ebla formt`.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == word) return "";
    return word;
  }
  return "";
}

// "'formt' is not an ebla command (did you mean 'formats'?)", or empty.
std::string unknown_command_message(const CLI::App& app, int argc, char** argv) {
  const std::string word = unknown_command(app, argc, argv);
  if (word.empty()) return "";
  std::string nearest, names;
  std::size_t best = 3;  // suggest only a command within two edits
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    const std::size_t d = ebla::edit_distance(word, sub->get_name());
    if (d < best) best = d, nearest = sub->get_name();
  }
  return "'" + word + "' is not an ebla command" + (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") +
         "; the commands are " + names;
}

// The first --word of the command line that is no option of the command named (nor of
// ebla's), with the command's nearest option within two edits: "'--qdot-toll' is not an
// option of ebla cg (did you mean '--qdot-tol'?)"; empty if there is none.
std::string unknown_option_message(const CLI::App& app, int argc, char** argv) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  if (parsed.empty()) return "";
  const CLI::App* sub = parsed.front();
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2) continue;
    const std::string name = word.substr(0, word.find('='));
    if (sub->get_option_no_throw(name) != nullptr || app.get_option_no_throw(name) != nullptr) continue;
    std::string nearest;
    std::size_t best = 3;
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& l : o->get_lnames()) {
        const std::size_t d = ebla::edit_distance(name, "--" + l);
        if (d < best) best = d, nearest = "--" + l;
      }
    return "'" + name + "' is not an option of ebla " + sub->get_name() +
           (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)");
  }
  return "";
}

// Ends a run whose parse stopped it: help, version, or a parse error (exit code 2). A word
// that is no command is an error even next to --help (`ebla mpfma --help` would otherwise
// print the top-level help and succeed).
int end_of_parse(const CLI::App& app, const std::exception_ptr& stop, int argc, char** argv) {
  const std::string unknown = unknown_command_message(app, argc, argv);
  try {
    std::rethrow_exception(stop);
  } catch (const CLI::CallForHelp& e) {
    if (unknown.empty()) return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    if (unknown.empty()) return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    if (unknown.empty()) return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const std::string option = unknown_option_message(app, argc, argv);
    if (unknown.empty()) spdlog::error("{}", printable(option.empty() ? e.what() : option.c_str()));
  } catch (const CLI::ParseError& e) {
    if (unknown.empty()) spdlog::error("{}", printable(e.what()));
  }
  if (!unknown.empty()) spdlog::error("{}", printable(unknown.c_str()));
  spdlog::error("run 'ebla --help' for the commands, 'ebla COMMAND --help' for their options");
  return ebla::cli::exit_bad_input;
}
}  // namespace

int main(int argc, char** argv) {
  ebla::cli::set_command_line(argc, argv);
  // messages go to stderr, so that stdout carries only results
  auto logger = spdlog::stderr_color_mt("ebla");
  logger->set_pattern("ebla: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  remove_temporaries_on_signals();
  // under mpirun every rank joins MPI first, whatever its options, so that the check below
  // finds every rank (one that stopped at --help or a parse error included)
  const ebla::cli::Processes& processes = ebla::cli::start_processes();

  CLI::App app;
  int kokkos_threads = 0;  // --kokkos-num-threads
  const std::map<CLI::App*, ebla::cli::Command> commands = ebla::cli::build_app(app, kokkos_threads);
#ifdef EBLA_GIT_DESCRIBE  // built from a git checkout other than the release's tag: name the commit
  app.set_version_flag("--version", "ebla " EBLA_VERSION " (git " EBLA_GIT_DESCRIBE ")");
#endif

  std::exception_ptr stop;  // help, version or a parse error
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError&) {
    stop = std::current_exception();
  }
  // under mpirun: ranks given different options would meet in different collectives
  if (!ebla::cli::same_options_on_every_rank(argc, argv)) return ebla::cli::exit_bad_input;
  if (stop) {
    if (processes.rank > 0) spdlog::set_level(spdlog::level::off);  // rank 0 says it for all
    return end_of_parse(app, stop, argc, argv);
  }
  ebla::cli::set_kokkos_threads(kokkos_threads);
  // only cg and power are distributed: any other command runs on rank 0 alone
  if (processes.ranks > 1 && !app.get_subcommand("cg")->parsed() && !app.get_subcommand("power")->parsed()) {
    if (processes.rank > 0) return 0;
    ebla::cli::run_on_rank0_alone();
  }
  try {
    for (const auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const ebla::InvalidArgument& e) {
    spdlog::error("{}", printable(e.what()));
    return ebla::cli::finish_with(ebla::cli::exit_bad_input);  // under mpirun: ends every rank
  } catch (const ebla::Hdf5Error& e) {
    // an output that could not be written (a full disk): the target as it was, no temporary
    spdlog::error("{}", printable(e.what()));
    return ebla::cli::finish_with(ebla::cli::exit_bad_input);
  } catch (const std::exception& e) {
    if (out_of_memory(e)) {
      // what the checks before the run did not foresee; an output's temporary file went with
      // its writer as the stack unwound
      spdlog::error("out of memory in '{}' ({} available now: give smaller sizes or inputs): {}",
                    ebla::cli::command_line(),
                    ebla::detail::memory_text(static_cast<double>(ebla::detail::available_memory())),
                    printable(e.what()));
      return ebla::cli::finish_with(ebla::cli::exit_bad_input);
    }
    spdlog::critical("{}", printable(e.what()));
    return ebla::cli::finish_with(1);
  }
  return 0;
}
