// The condition number CG has seen so far: kappa(T_k) of the Lanczos tridiagonal matrix that
// the CG coefficients define (Golub and Van Loan, Matrix Computations, 4th ed., section 11.3.5;
// Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., section 6.7.3):
//   T_00 = 1 / alpha_0,  T_jj = 1 / alpha_j + beta_(j-1) / alpha_(j-1),
//   T_j,j+1 = sqrt(beta_j) / alpha_j.
// Its eigenvalues (Ritz values) lie inside the spectrum of the (preconditioned) matrix and
// spread toward its ends as k grows, so lambda_max(T_k) / lambda_min(T_k) is a lower bound
// of kappa that grows toward it. The extreme eigenvalues are found by bisection on Sturm
// counts (O(k) each), from the last ones (interlacing: lambda_max only grows, lambda_min only
// falls), to a relative accuracy of about 1e-3.
//
// The rule of DotPolicy::automatic (dot_rule.hpp, PhasedAccuracy) also asks whether kappa(T_k)
// is still climbing, i.e. whether CG is still finding the ends of the spectrum:
//   growth()    = kappa(T_k) / kappa(T_(k-w)), w = max(10, k/4) (infinite before step 11),
// and, since kappa(T_k) falls short of kappa by orders of magnitude while it climbs (on
// HB/1138_bus with Jacobi: 6e2 after 25 steps, 1e4 after 100, 4.9e5 from about 400 on),
//   projected() = kappa(T_k) * sqrt(max(1, kappa(T_k) / kappa(T_(k/2)))),
// which runs ahead of kappa(T_k) while it climbs and equals it once it has settled.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ebla::detail {

class LanczosCondition {
public:
  /// Step j of CG: its alpha_j, and beta_(j-1) (ignored for j = 0).
  void add(double alpha, double beta_before) {
    if (!(alpha > 0) || !std::isfinite(alpha)) return;
    if (d_.empty()) {
      d_.push_back(1 / alpha);
    } else {
      if (!(beta_before >= 0) || !std::isfinite(beta_before)) return;
      e2_.push_back(beta_before / (last_alpha_ * last_alpha_));  // (sqrt(beta) / alpha)^2
      d_.push_back(1 / alpha + beta_before / last_alpha_);
    }
    last_alpha_ = alpha;
    stale_ = true;
  }

  /// kappa(T_k) (1 before the first step). Recomputed at every step up to 64, then about 32
  /// times per doubling of k (each update costs O(k)).
  double estimate() {
    if (d_.empty()) return 1;
    const std::size_t k = d_.size();
    if (stale_ && (k <= 64 || k % (k / 32) == 0)) update();
    const double kappa = high_ > 0 && low_ > 0 ? std::max(1.0, high_ / low_) : 1.0;
    seen_.resize(k + 1, kappa);  // kappa(T_j) for every j up to k (the last value where skipped)
    seen_[k] = kappa;
    return kappa;
  }

  /// kappa(T_k) / kappa(T_(k-w)) (above).
  double growth() {
    const double kappa = estimate();
    const std::size_t k = d_.size();
    const std::size_t w = std::max<std::size_t>(10, k / 4);
    return k > w ? kappa / seen_[k - w] : std::numeric_limits<double>::infinity();
  }

  /// kappa(T_k) extrapolated while it grows (above).
  double projected() {
    const double kappa = estimate();
    const std::size_t k = d_.size();
    return k < 2 ? kappa : kappa * std::sqrt(std::max(1.0, kappa / seen_[k / 2]));
  }

private:
  // Eigenvalues of T below x (Sturm sequence of the LDL^T pivots).
  std::size_t below(double x) const {
    std::size_t count = 0;
    double q = 1;
    for (std::size_t i = 0; i < d_.size(); ++i) {
      q = d_[i] - x - (i > 0 ? e2_[i - 1] / q : 0.0);
      if (q == 0) q = -1e-300;  // a zero pivot: perturbed, as LAPACK's dstebz does
      if (q < 0) ++count;
    }
    return count;
  }

  // Geometric bisection of [lo, hi] (0 < lo < hi) for the point where below() passes n.
  double bisect(double lo, double hi, std::size_t n) const {
    for (int step = 0; step < 12 && hi > lo * 1.001; ++step) {
      const double mid = std::sqrt(lo * hi);
      if (below(mid) >= n) hi = mid;
      else lo = mid;
    }
    return std::sqrt(lo * hi);
  }

  void update() {
    const std::size_t k = d_.size();
    if (high_ <= 0) high_ = low_ = d_[0];
    // lambda_max: the least x with every eigenvalue below it
    double hi = high_ * 1.001;
    for (int i = 0; i < 200 && below(hi) < k; ++i) hi *= 2;
    high_ = bisect(high_ / 2, hi, k);
    // lambda_min: the largest x with none below it
    double lo = low_ / 1.001;
    for (int i = 0; i < 200 && below(lo) > 0 && lo > 1e-300; ++i) lo /= 2;
    low_ = bisect(lo, low_ * 2, 1);
    stale_ = false;
  }

  std::vector<double> d_, e2_;
  std::vector<double> seen_{1.0};  // kappa(T_j), j = 0..k
  double last_alpha_ = 0;
  double high_ = 0, low_ = 0;
  bool stale_ = false;
};

}  // namespace ebla::detail
