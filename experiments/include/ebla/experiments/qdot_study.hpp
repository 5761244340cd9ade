// The qdot experiments of seed 002, section 4.1, on the data of qdot_data.hpp: one run, or
// a sweep over (distribution, t, n) x samples x tolerances x policies that gives
//  - tightness (Fig. 1): the gap bound/|x^T y| - relerr at tolerance 1e-16;
//  - effectiveness (Fig. 2): relerr against the tolerance, and the levels used;
//  - speedup (Fig. 3) t_dot / t_compute and efficiency t_dot / (t_select + t_dot)
//    (Definition 2.1), t_dot the time of KokkosBlas::dot on the same vectors;
//  - compare-policies: both selection policies on the same data.
//
// Errors are measured against the exact dot product (ebla::ExactSum), not against a double
// dot product as in the seed: the bound certifies the exact value, and at tolerance 1e-16
// the error of a double dot product would dominate the comparison. The seed's measure
// (relative to the plain double dot product) is recorded too.
//
// run_qdot_study and qdot_study_levels need Kokkos initialised (qdot and KokkosBlas::dot run
// on it).
#pragma once

#include <ebla/core/hdf5.hpp>
#include <ebla/experiments/progress.hpp>
#include <ebla/experiments/qdot_data.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/kernels/qdot.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ebla::experiments {

enum class QdotStudyKind { run, tightness, effectiveness, speedup, compare_policies };

/// "run", "tightness", "effectiveness", "speedup", "compare_policies" (the HDF5 group).
const char* to_string(QdotStudyKind kind);

/// What to run. qdot_study_defaults() gives the seed's parameters of each kind.
struct QdotStudySpec {
  QdotStudyKind kind = QdotStudyKind::run;
  std::vector<QdotDist> dists;
  std::vector<double> t_given;  ///< empty: the defaults of each distribution (t_for)
  std::vector<std::int64_t> sizes;
  std::vector<double> tolerances;
  std::vector<QdotPolicy> policies;  ///< one, or both for compare_policies
  std::vector<QdotLevel> ladder;     ///< empty: the default ladder of the input type
  std::int64_t seed = 1;
  int samples = 1;              ///< vector pairs per (dist, t, n)
  int reps = 0;                 ///< timed calls per measurement (best kept); 0: qdot_auto_reps(n)
  bool use_float = false;       ///< float vectors (the values rounded to float)
  Progress progress;            ///< a sweep reports each vector pair done (a run reports nothing)

  /// Whether times are measured: one run and speedup.
  bool timed() const { return kind == QdotStudyKind::run || kind == QdotStudyKind::speedup; }
  /// Timed calls per measurement at length n (0 when not timed).
  int reps_for(std::int64_t n) const;
  /// The t values of distribution d: t_given, or the kind's defaults.
  std::vector<double> t_for(QdotDist d) const;
  /// "float" or "double".
  std::string input() const { return use_float ? "float" : "double"; }
};

/// The defaults of a kind. One run: B, t = 9, n = 1e6, tolerance 1e-8. Tightness: A with
/// t = 10..100 step 5 and B with t = 2..30 step 2 (Fig. 1), n = 1e2..1e5, tolerance 1e-16,
/// 5 samples. Effectiveness: A, B with t = 5, 9, 13, n = 1e3..1e5, tolerances 1e-15..1e-1,
/// 5 samples. Speedup: the same with n = 1e4..1e6, 3 samples. Compare-policies: B,
/// t = 5, 9, 13, n = 1e5, tolerances 1e-15..1e-1, 5 samples, budget and paper. The policy
/// is budget; the seed 1.
QdotStudySpec qdot_study_defaults(QdotStudyKind kind);

/// A study as a user states it: names and numbers as text (empty lists: the kind's
/// defaults). Messages name a field through `name` ("--n" -> "ebla qdot --n"; by default
/// "ebla::QdotStudyChoice --n").
struct QdotStudyChoice {
  std::string experiment;  ///< tightness, effectiveness, speedup, compare-policies; empty: one run
  bool compare_policies = false;  ///< the same as experiment compare-policies
  std::vector<std::string> dists, t_values, sizes, tolerances;
  std::string policy = "budget";
  std::string ladder;  ///< comma-separated level names; empty: the input type's default
  std::int64_t seed = 1;
  static constexpr int default_samples = std::numeric_limits<int>::min();
  int samples = default_samples;  ///< default_samples: the kind's default
  int reps = 0;        ///< 0..100000; 0: qdot_auto_reps
  bool use_float = false;
  std::function<std::string(const std::string& option)> name;
  std::string named(const std::string& option) const;
};

/// The checked spec of a choice: the kind, distributions, t in (0, 2000], whole n in
/// [0, 1e9] (0 only for a run), positive finite tolerances, policy, ladder names, samples
/// (one for a run), reps; a run takes one value of each list; x and y of the largest n
/// must fit in memory. Throws InvalidArgument naming the field. Needs no Kokkos (the qdot
/// options themselves are checked by qdot_study_levels).
QdotStudySpec make_qdot_study_spec(const QdotStudyChoice& choice);

/// Repetitions for timing: about 2e6 processed components per measurement, 3 .. 1000.
int qdot_auto_reps(std::int64_t n);

/// Checks the qdot options of every (tolerance, policy) of the spec (ebla::InvalidArgument
/// as qdot_select throws it) and returns the names of the resolved ladder's levels.
std::vector<std::string> qdot_study_levels(const QdotStudySpec& spec);

struct QdotPoint {
  QdotDist dist;
  double t;
  std::int64_t n;
};

/// Statistics over the samples of one (point, tolerance, policy). Errors and bounds are
/// relative to |x^T y| (exact); times in seconds, each the best of reps calls.
struct QdotRow {
  QdotPoint point{};
  double tolerance = 0;
  QdotPolicy policy = QdotPolicy::budget;
  Sample relerr;      ///< |value - x^T y| / |x^T y|
  Sample relerr_dot;  ///< |value - dot| / |dot|, dot = KokkosBlas::dot (the seed's measure)
  Sample bound_rel;   ///< bound / |x^T y|
  Sample gap;         ///< bound_rel - relerr (Fig. 1)
  Sample bins;        ///< bins of the plan
  Sample select_s, compute_s, dot_s;  ///< timed kinds only
  Sample speedup;                     ///< t_dot / t_compute (2.6)
  Sample efficiency;                  ///< t_dot / (t_select + t_dot) (2.5)
  std::vector<Sample> fraction;       ///< fraction of the n components per ladder level
};

/// One qdot on one vector pair, in detail (the single run).
struct QdotSingle {
  QdotResult result;           ///< value, bound, stats (levels, bins, exponents)
  double exact = 0;            ///< x^T y, exact, rounded once
  double relerr = 0;           ///< |value - x^T y| / |x^T y|
  double bound_rel = 0;        ///< bound / |x^T y|
  double dot = 0;              ///< KokkosBlas::dot
  double dot_relerr = 0;       ///< |dot - x^T y| / |x^T y|
  double select_seconds = 0, compute_seconds = 0, dot_seconds = 0;  ///< best of reps calls
  int reps = 0;
  double speedup = 0, efficiency = 0;
  std::vector<double> fraction;  ///< per ladder level
};

/// The result of a study: its spec, the ladder's level names, one row per (point,
/// tolerance, policy) in the order dist, t, n, tolerance, policy, and for a run the run.
struct QdotStudy {
  QdotStudySpec spec;
  std::vector<std::string> levels;
  std::vector<QdotRow> rows;
  QdotSingle single;  ///< kind run only

  /// The level names, comma-separated.
  std::string ladder() const;
};

/// Runs the study: every sample drawn with qdot_data, its exact x^T y and KokkosBlas::dot,
/// then qdot at each tolerance and policy.
QdotStudy run_qdot_study(const QdotStudySpec& spec);

/// [first, last) ranges of rows of the same (dist, t, n), in order.
std::vector<std::pair<std::size_t, std::size_t>> qdot_point_blocks(const std::vector<QdotRow>& rows);

/// Fig. 1 for one distribution and tolerance: per n, every sample over all t.
struct QdotTightness {
  std::int64_t n = 0;
  Sample gap, relerr, bound_rel;
  std::size_t violations = 0;  ///< samples whose error exceeds the bound (gap < 0)
};
std::vector<QdotTightness> qdot_tightness(const QdotStudy& study, QdotDist d, double tolerance);

/// Writes the study as /<kind>/<dist>[/<policy> for compare_policies]/<series> with the
/// parameters as attributes (docs/qdot.md, "Output of `ebla qdot`"); `version` is ebla's.
void write_qdot_study(const Hdf5Writer& out, const QdotStudy& study, const std::string& version);

}  // namespace ebla::experiments
