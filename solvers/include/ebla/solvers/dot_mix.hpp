// What the dot products of a solver run gave away, and how a run with DotPolicy::automatic
// compares with fixed tolerances (`ebla cg --experiment auto`, `ebla power --experiment auto`).
//
// Per dot product of a run (r^T z and p^T q of CG, say):
//  - below: the share of the n components computed below the first rung of the ladder
//    (binary64 for double vectors; perforated components included), averaged over the calls;
//  - bytes: the bytes the calls read, modelled from the rungs: each factor of a component costs
//    its format's width (binary64 8 bytes, binary32 4, binary16 and bfloat16 2, an 8-bit
//    format 1), 0 where perforated; a component whose product is zero (it has no bin) counts
//    at the first rung's width. Summed over the calls and divided by the same calls read in
//    the first rung: 1 for exact dot products, 0.5 for all binary32.
//
// Where it runs: on the host (per-iteration records).
#pragma once

#include <ebla/solvers/dots.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace ebla {

/// Bytes of one factor at each rung (names as DotPolicy::level_names() gives them): the
/// format's encoding width / 8, 0 for "perforate". Throws InvalidArgument for a name that
/// is not a catalogue format, or a format without a standard encoding.
std::vector<double> rung_bytes(const std::vector<std::string>& rungs);

struct DotMix {
  std::size_t calls = 0;
  double below = 0;  ///< mean over the calls of the share of components below the first rung
  double bytes = 1;  ///< modelled bytes read / the same calls at the first rung
};

/// Sums the records of one dot product of a run into its DotMix.
class DotMixCounter {
public:
  explicit DotMixCounter(const std::vector<std::string>& rungs);
  void add(const DotRecord& d);
  DotMix mix() const;

private:
  std::vector<double> width_;
  std::size_t calls_ = 0;
  double below_ = 0, bytes_ = 0;
};

/// One run of a comparison: exact, a fixed qdot tolerance, or automatic.
struct PolicyOutcome {
  double tolerance = 0;  ///< the fixed tolerance (0 for exact and automatic runs)
  int iterations = 0;
  bool ok = false;       ///< CG: converged; power method: converged and lambda within tau of PM's
  double below = 0;      ///< the mean of the runs' DotMix::below over its dot products
  double bytes = 1;      ///< the same for DotMix::bytes
};

/// The target of the automatic policy on one problem:
///  - iterations: at most `slack` times the exact run's (both runs ok);
///  - share: `below` at least that of the best fixed tolerance with the exact run's
///    iteration count (the ok fixed run with exactly as many iterations and the largest
///    `below`; met if no fixed run keeps the count).
/// For reference, also the best fixed run with at most the automatic run's iterations.
struct AutoVerdict {
  double iteration_ratio = 0;  ///< automatic / exact
  bool iterations_met = false;
  int same_count = -1;         ///< index into the fixed runs (-1: none keeps the count)
  bool share_met = false;
  int within = -1;             ///< the best fixed run with iterations <= the automatic run's
  bool met() const { return iterations_met && share_met; }
};

AutoVerdict judge_automatic(const PolicyOutcome& exact, const std::vector<PolicyOutcome>& fixed,
                            const PolicyOutcome& automatic, double slack = 1.03);

}  // namespace ebla
