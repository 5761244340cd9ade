// ebla mma --cases: many dot products through one unit, a row of a text file each, computed
// together by ebla::unit_dot_rows and written as bit patterns of the unit's result format,
// optionally compared with the results a device gave.
#pragma once

#include <ebla/kernels/matrix_unit.hpp>

#include <string>

namespace ebla::cli {

/// Exit codes of `ebla mma --cases` besides 0 and exit_bad_input (a malformed row).
constexpr int exit_cases_differ = 1;   ///< --compare found results that differ
constexpr int exit_cases_skipped = 3;  ///< --keep-going skipped malformed rows

struct CasesOptions {
  std::string path;  ///< the file of rows; "-" is standard input
  bool values = false;      ///< a, b, c (and d) are numbers, not bit patterns
  bool compare = false;     ///< the fourth column is the expected d
  bool keep_going = false;  ///< a malformed row is reported and skipped, not the end
};

/// Reads the rows of o.path (a, b, c[, d]: docs/matrix-units.md), computes d for each through
/// the unit, prints one line per row on stdout and returns the exit code. Throws
/// InvalidArgument naming file:line:column for a malformed row (without keep_going) and for
/// a file that cannot be read.
int run_mma_cases(const MatrixUnit& unit, const CasesOptions& o);

}  // namespace ebla::cli
