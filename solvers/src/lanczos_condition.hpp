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
#include <string>
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

  /// How many Ritz values in the upper half of the spectrum seen so far (theta_i >
  /// sqrt(theta_min theta_max)) have converged to semi-orthogonality level, given beta_k (the
  /// step just taken; T_(k+1,k) = sqrt(beta_k) / alpha_k): the Ritz vector y_i of T_k has
  /// ||A y_i - theta_i y_i|| = T_(k+1,k) |s_ki| (s_ki the last component of T_k's i-th
  /// eigenvector), and by Paige's theorem (Linear Algebra Appl. 34, 1980) the next Lanczos
  /// vector has lost about u ||A|| / (T_(k+1,k) |s_ki|) of its orthogonality to y_i. A pair
  /// counts once that loss exceeds sqrt(u), i.e. T_(k+1,k) |s_ki| <= sqrt(u) theta_max (Simon's
  /// semi-orthogonality, Math. Comp. 42, 1984). From then on CG finds y_i again and again,
  /// and every rounding of its coefficients widens the copies (docs/solvers.md, "The
  /// finite-precision regime"). O(k^3): for the first steps only.
  int converged_at_top(double beta_k) const {
    const std::size_t k = d_.size();
    if (k < 2 || !(beta_k >= 0) || !std::isfinite(beta_k)) return 0;
    std::vector<double> theta, last;
    ritz_pairs(theta, last);
    const auto [lo, hi] = std::minmax_element(theta.begin(), theta.end());
    if (!(*lo > 0) || !(*hi > 0)) return 0;
    const double next = std::sqrt(beta_k) / last_alpha_;  // T_(k+1,k)
    const double middle = std::sqrt(*lo * *hi), semi = 0x1p-26 * *hi;  // 2^-26 ~ sqrt(2^-53)
    int count = 0;
    for (std::size_t i = 0; i < k; ++i)
      if (theta[i] > middle && next * std::fabs(last[i]) <= semi) ++count;
    return count;
  }

  /// Whether CG is in the finite-precision regime, where any rounding of its coefficients
  /// costs iterations (docs/solvers.md): by step k <= regime_steps, at least regime_count
  /// Ritz values at the top of the spectrum have converged (converged_at_top). Sets `count`.
  static constexpr std::size_t regime_steps = 64;
  static constexpr int regime_count = 2;
  bool finite_precision_regime(double beta_k, int& count) const {
    count = d_.size() <= regime_steps ? converged_at_top(beta_k) : 0;
    return count >= regime_count;
  }
  /// The event's words: "<count> Ritz values ... converged by step <k> (the finite-precision regime)".
  static std::string regime_reason(int count, int k) {
    return std::to_string(count) + " Ritz values at the top of the spectrum converged by step " + std::to_string(k) +
           " (the finite-precision regime)";
  }

private:
  // The eigenvalues theta_i of T_k and the last components s_ki of its unit eigenvectors:
  // cyclic Jacobi rotations on the dense T_k (Golub and Van Loan, section 8.5), each
  // rotation J applied as T <- J^T T J and, of V <- V J, to V's last row only.
  void ritz_pairs(std::vector<double>& theta, std::vector<double>& last) const {
    const std::size_t k = d_.size();
    std::vector<double> t(k * k, 0.0);
    auto at = [&](std::size_t i, std::size_t j) -> double& { return t[i * k + j]; };
    double frobenius = 0;
    for (std::size_t i = 0; i < k; ++i) {
      at(i, i) = d_[i];
      frobenius += d_[i] * d_[i];
      if (i + 1 < k) {
        at(i, i + 1) = at(i + 1, i) = std::sqrt(e2_[i]);
        frobenius += 2 * e2_[i];
      }
    }
    last.assign(k, 0.0);
    last[k - 1] = 1;  // V = I
    for (int sweep = 0; sweep < 60; ++sweep) {
      double off = 0;
      for (std::size_t p = 0; p < k; ++p)
        for (std::size_t q = p + 1; q < k; ++q) off += 2 * at(p, q) * at(p, q);
      if (off <= 1e-32 * frobenius) break;  // off(T) at the level of roundoff
      for (std::size_t p = 0; p + 1 < k; ++p)
        for (std::size_t q = p + 1; q < k; ++q) {
          const double apq = at(p, q);
          if (apq == 0) continue;
          // tan of the angle that zeroes T_pq: t^2 + 2 zeta t - 1 = 0, the smaller root
          const double zeta = (at(q, q) - at(p, p)) / (2 * apq);
          const double tn = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(zeta * zeta + 1));
          const double c = 1 / std::sqrt(tn * tn + 1), s = tn * c;
          for (std::size_t r = 0; r < k; ++r) {  // columns p and q, then rows p and q
            const double rp = at(r, p), rq = at(r, q);
            at(r, p) = c * rp - s * rq;
            at(r, q) = s * rp + c * rq;
          }
          for (std::size_t r = 0; r < k; ++r) {
            const double pr = at(p, r), qr = at(q, r);
            at(p, r) = c * pr - s * qr;
            at(q, r) = s * pr + c * qr;
          }
          at(p, q) = at(q, p) = 0;
          const double lp = last[p], lq = last[q];
          last[p] = c * lp - s * lq;
          last[q] = s * lp + c * lq;
        }
    }
    theta.resize(k);
    for (std::size_t i = 0; i < k; ++i) theta[i] = at(i, i);
  }

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
