// Progress of a long study on stderr, one line per report, e.g.
//   ebla gemm: narrow-range 12/120 (Fig. 5.1, k = 100), 3.2 s
// Option --progress N: at most one line every N seconds (a line per step when a study has at
// most 10 steps), 0 for none; by default 1 when stderr is a terminal, else a line every 10 s
// once 10 s have passed (a log of a long run shows where it is; a short run prints nothing).
// Only stderr: stdout stays the same with or without it.
#pragma once

#include <ebla/experiments/progress.hpp>
#include <ebla/experiments/statistics.hpp>

#include <CLI/CLI.hpp>

#include <string>

namespace ebla::cli {

/// Registers --progress on `app`, its text kept in `text` ("" when not given).
void add_progress_option(CLI::App& app, std::string& text);

/// The quiet default's seconds between lines when stderr is no terminal.
constexpr double background_interval = 10;

/// The seconds between lines: parsed from `text` (bad input throws InvalidArgument naming
/// `option`), or the default above when `text` is empty: 1, or -background_interval (quiet).
double progress_interval(const std::string& text, const std::string& option);

/// A Progress callback writing lines "<prefix> done/total (step), seconds"; null when
/// `interval` is 0, quiet (nothing in the first -interval s) when it is negative.
experiments::Progress progress_lines(const std::string& prefix, double interval);
/// The same with a line for every step (the runs of `ebla cg|power --experiment auto`).
experiments::Progress progress_each(const std::string& prefix);

}  // namespace ebla::cli
