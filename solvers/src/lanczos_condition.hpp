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
  /// finite-precision regime"). O(k^2) (ritz_pairs): for the first steps only.
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

  // The eigenvalues theta_i of T_k and the last components s_ki of its unit eigenvectors:
  // implicit symmetric QR steps with the Wilkinson shift on the tridiagonal T_k itself (Golub
  // and Van Loan, Matrix Computations, 4th ed., algorithms 8.3.2 and 8.3.3), each rotation
  // R on rows and columns (j, j + 1) applied as T <- R T R^T and, of the eigenvector matrix
  // V <- V R^T, to V's last row only: O(k) per step and O(k^2) in all (a dense Jacobi
  // method took O(k^3) per sweep, which on small matrices cost more than CG itself).
  void ritz_pairs(std::vector<double>& theta, std::vector<double>& last) const {
    const std::size_t k = d_.size();
    std::vector<double> a(d_), b(k, 0.0);  // T's diagonal and off-diagonal T_(j,j+1)
    for (std::size_t j = 0; j + 1 < k; ++j) b[j] = std::sqrt(e2_[j]);
    last.assign(k, 0.0);
    last[k - 1] = 1;  // V = I
    constexpr double eps = std::numeric_limits<double>::epsilon();
    auto negligible = [&](std::size_t j) { return std::fabs(b[j]) <= eps * (std::fabs(a[j]) + std::fabs(a[j + 1])); };
    std::size_t hi = k - 1;  // the active block is [lo, hi]; below hi, T is diagonal
    for (std::size_t steps = 0; hi > 0 && steps < 30 * k; ++steps) {
      if (negligible(hi - 1)) {  // deflate: a[hi] is an eigenvalue
        b[hi - 1] = 0;
        --hi;
        continue;
      }
      std::size_t lo = hi - 1;
      while (lo > 0 && !negligible(lo - 1)) --lo;
      if (lo > 0) b[lo - 1] = 0;  // the block's upper neighbour, negligible
      qr_step(a, b, last, lo, hi);
    }
    theta = a;
  }

  // sqrt(x^2 + z^2): from the squares where they cannot overflow or underflow (|x|, |z| within
  // 2^+-500, nearly always so here), else by std::hypot, whose care for the extremes made it
  // the most of an automatic CG step on small matrices (HB/nos4: 40% of the time).
  static double length(double x, double z) {
    const double m = std::max(std::fabs(x), std::fabs(z));
    return m < 0x1p500 && m > 0x1p-500 ? std::sqrt(x * x + z * z) : std::hypot(x, z);
  }

  // One implicit QR step on the unreduced block [lo, hi] of the tridiagonal (a, b): the shift
  // mu is the eigenvalue of the trailing 2 x 2 block nearer a[hi]; the first rotation takes
  // (a[lo] - mu, b[lo]) to (r, 0), and each next one chases the bulge it leaves one row down.
  static void qr_step(std::vector<double>& a, std::vector<double>& b, std::vector<double>& last, std::size_t lo,
                      std::size_t hi) {
    const double half = (a[hi - 1] - a[hi]) / 2, bh = b[hi - 1];
    const double mu = a[hi] - bh * bh / (half + std::copysign(length(half, bh), half));
    double x = a[lo] - mu, z = b[lo];
    for (std::size_t j = lo; j < hi; ++j) {
      const double r = length(x, z);
      const double c = r > 0 ? x / r : 1, s = r > 0 ? z / r : 0;  // rows j, j + 1: (x, z) -> (r, 0)
      if (j > lo) b[j - 1] = r;                                    // the bulge gone
      const double aj = a[j], aj1 = a[j + 1], bj = b[j];
      a[j] = c * c * aj + 2 * c * s * bj + s * s * aj1;
      a[j + 1] = s * s * aj - 2 * c * s * bj + c * c * aj1;
      b[j] = c * s * (aj1 - aj) + (c * c - s * s) * bj;
      if (j + 1 < hi) {  // the new bulge at (j + 2, j)
        x = b[j];
        z = s * b[j + 1];
        b[j + 1] *= c;
      }
      const double lj = last[j], lj1 = last[j + 1];  // V <- V R^T, its last row
      last[j] = c * lj + s * lj1;
      last[j + 1] = -s * lj + c * lj1;
    }
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
