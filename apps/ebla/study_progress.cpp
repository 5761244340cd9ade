#include "study_progress.hpp"

#include "commands.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

#include <unistd.h>

namespace ebla::cli {

void add_progress_option(CLI::App& app, std::string& text) {
  app.add_option("--progress", text,
                 "Report progress on stderr at most every N seconds (a line per step for short "
                 "lists of steps); 0: none (default 1 when stderr is a terminal; else a line every "
                 "10 s once a run has taken 10 s, so that short runs stay silent and long ones do not)");
}

double progress_interval(const std::string& text, const std::string& option) {
  if (text.empty()) return isatty(STDERR_FILENO) ? 1.0 : -background_interval;
  const double v = parse_double(text, option);
  if (!(v >= 0 && std::isfinite(v))) throw_invalid(option, text + " is not a number of seconds >= 0");
  return v;
}

namespace {

// A line when due: the first, the last, every step of a short list, else after `interval` s;
// not `eager`, none before `interval` s have passed, then one every `interval` s and the last.
experiments::Progress lines(const std::string& prefix, double interval, bool eager) {
  struct State {
    experiments::Stopwatch since_start, since_line;
    bool printed = false;
  };
  auto state = std::make_shared<State>();
  return [=](std::size_t done, std::size_t total, const std::string& step) {
    const bool due = eager ? !state->printed || done == total || total <= 10 || state->since_line.seconds() >= interval
                           : state->since_line.seconds() >= interval || (state->printed && done == total);
    if (!due) return;
    std::fprintf(stderr, "%s %zu/%zu (%s), %.1f s\n", prefix.c_str(), done, total, step.c_str(),
                 state->since_start.seconds());
    std::fflush(stderr);
    state->since_line.restart();
    state->printed = true;
  };
}

}  // namespace

experiments::Progress progress_lines(const std::string& prefix, double interval) {
  if (interval == 0) return nullptr;
  return interval > 0 ? lines(prefix, interval, true) : lines(prefix, -interval, false);
}

experiments::Progress progress_each(const std::string& prefix) { return lines(prefix, 0, true); }

}  // namespace ebla::cli
