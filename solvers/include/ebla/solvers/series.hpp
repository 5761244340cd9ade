// What the solvers' runs report per iteration: the share of components computed at each
// rung of the ladder, per dot product and iteration (mean over the iterations in tables),
// the rung of every component (seed 002's Fig. 5 maps), and a run of CG or of the power
// method with those series.
//
// Where it runs: on the host (per-iteration records).
#pragma once

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/power.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ebla {

/// Rows of fractions per rung (NaN for a dot product that was not computed).
struct FractionSeries {
  explicit FractionSeries(std::size_t rung_count = 0) : rungs(rung_count) {}
  std::size_t rungs;
  std::vector<double> values;  ///< rows x rungs, row-major
  std::vector<double> zero;    ///< per row: fraction of zero products
  std::size_t rows() const { return zero.size(); }
  void add(const DotRecord* record);  ///< null: a dot product not computed (a row of NaN)
  std::vector<double> mean() const;   ///< per rung, over the computed rows
  double zero_mean() const;           ///< the same for the zero products
};

/// Per-component rung maps: rows x n, 255 for no bin (zero product or no dot product).
struct LevelSeries {
  explicit LevelSeries(std::size_t length) : n(length) {}
  std::size_t n;
  std::vector<std::uint8_t> values;
  std::size_t rows = 0;
  void add(const std::vector<std::uint8_t>& map);  ///< empty: a row of 255
};

/// A CG run: its result and the fractions of r^T r (r^T z with Jacobi) and p^T q per iteration.
struct CgRun {
  DotPolicy policy;
  std::vector<std::string> rungs;  ///< policy.level_names()
  CgResult result;
  double max_error = std::numeric_limits<double>::quiet_NaN();  ///< max |x - x*| (NaN: x* not known)
  FractionSeries rr, pq;
  double dot_seconds = 0;  ///< every dot product's time, c_0 included
};

/// A power-method run: its result and the fractions of y^T y and x^T y per iteration (row
/// 0: the start, which computes no y^T y).
struct PowerRun {
  DotPolicy policy;
  std::vector<std::string> rungs;
  PowerResult result;
  FractionSeries yy, xy;
  double dot_seconds = 0;
};

CgRun record_run(const DotPolicy& policy, CgResult result);
PowerRun record_run(const DotPolicy& policy, PowerResult result);

inline const CgResult& result_of(const CgResult& r) { return r; }
inline const PowerResult& result_of(const PowerResult& r) { return r; }
inline const CgResult& result_of(const CgRun& r) { return r.result; }
inline const PowerResult& result_of(const PowerRun& r) { return r.result; }

/// |lambda_k - lambda_(k-1)| of the last iteration (NaN without one).
double last_change(const PowerResult& r);

/// A run's numbers by name, in the order of the JSON lines (and as HDF5 attributes). CG:
/// tolerance_used, initial_residual, recursive_residual, true_residual, b_norm, max_error,
/// seconds, dot_seconds; power: eigenvalue, change, residual, seconds, dot_seconds.
using NamedValues = std::vector<std::pair<std::string, double>>;
NamedValues result_values(const CgRun& run);
NamedValues result_values(const PowerRun& run);

/// A run's two dot products by their short names: rr and pq (CG), yy and xy (power).
using NamedSeries = std::array<std::pair<const char*, const FractionSeries*>, 2>;
NamedSeries dot_series(const CgRun& run);
NamedSeries dot_series(const PowerRun& run);

}  // namespace ebla
