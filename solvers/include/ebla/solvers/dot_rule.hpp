// Rules that choose the accuracy of each dot product of a solver (DotPolicy::automatic).
//
// A rule answers one question: how accurate must this dot product be, now? It returns a
// relative accuracy delta, and the solver then computes a value with
//     |value - x^T y| <= delta |x^T y|,
// certified by the dot product's bound (checked after the call; a call that misses is
// repeated more tightly, and below qdot's reach the solver takes the exact dot product).
// The rule sees what the solver knows at that moment (DotRequest); it is a value that can
// be swapped: derive from DotRule and pass it to DotPolicy::automatic.
//
// The default, RelaxedAccuracy, asks for
//     delta = min(delta_max, eta * target / scale, theta / condition),
// where for CG target is tau, scale the current residual norm ||r_k|| and condition the
// condition number kappa_k the iteration has seen, and for the power method target is the
// eigenvalue tolerance tau and scale |lambda_k| (condition 1). Why (the derivation is in
// docs/solvers.md, "Choosing the tolerance"):
//  - CG: x and r are updated with the same alpha, so an error in alpha or beta keeps
//    r = b - A x; it leaves behind a component of size about delta ||r_k|| that the
//    following steps do not remove (the search is no longer exactly A-conjugate). Kept
//    below eta tau, it is invisible to the stopping test ||r|| <= tau. This is the
//    relaxation of inexact Krylov methods (Bouras and Fraysse, SIMAX 26(3), 2005;
//    Simoncini and Szyld, SISC 25(2), 2003; van den Eshof and Sleijpen, SIMAX 26(1),
//    2004): early on, when ||r_k|| >> tau, the dot products must be accurate; as the
//    residual falls toward tau they may be rough.
//  - CG, theta / kappa: perturbations of relative size delta in every step make CG behave
//    like exact CG on a matrix whose eigenvalues are spread into clusters of width about
//    delta ||A|| (Greenbaum, LAA 113, 1989; Greenbaum and Strakos, SIMAX 13(1), 1992).
//    Where delta ||A|| is small next to the smallest eigenvalue, i.e. delta kappa << 1,
//    the clusters are tight and CG converges as on A; where not, it is delayed, which
//    the relaxation term alone does not see on ill-conditioned matrices.
//  - Power method: the iterate's direction does not depend on the normalisation or on
//    lambda, so dot product errors move only lambda_k itself, by at most
//    delta_yy |lambda| + delta_xy |lambda|; with eta = 1/4 each, |lambda_k - lambda_PM,k|
//    stays within tau / 2 and the stopping test |lambda_k - lambda_(k-1)| <= tau is moved
//    by at most tau.
// Safeguards in the solvers multiply the rule's answer by a tightening factor (CgResult
// and PowerResult record when and why).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ebla {

/// Which dot product of which solver asks.
enum class DotRole : std::uint8_t {
  cg_curvature,  ///< p^T A p (alpha's denominator)
  cg_residual,   ///< r^T z (alpha's numerator, beta)
  power_norm,    ///< y^T y (the normalisation)
  power_rayleigh,  ///< x^T A x (the eigenvalue)
};

const char* to_string(DotRole role);

/// What the solver knows when it asks.
struct DotRequest {
  DotRole role = DotRole::cg_residual;
  int iteration = 0;    ///< k, from 0
  double target = 0;    ///< tau: the residual (CG) or eigenvalue change (power) to reach
  double scale = 0;     ///< ||r_k|| (CG) or |lambda_k| (power; 0 before the first)
  /// CG: kappa_k, the condition number of the (preconditioned) matrix as the iteration has
  /// seen it so far: lambda_max / lambda_min of the Lanczos matrix T_k that the CG
  /// coefficients alpha_j, beta_j define (a lower bound of the true one, growing with k); 1
  /// before the first step and for the power method.
  double condition = 1;
};

/// A rule: the relative accuracy delta > 0 a dot product must reach (delta >= 1 allows
/// any value of the right sign and magnitude; the solver caps it).
class DotRule {
public:
  virtual ~DotRule() = default;
  virtual double accuracy(const DotRequest& request) const = 0;
  /// One line, e.g. "relaxed(eta=1, max=0.01)".
  virtual std::string to_string() const = 0;
};

/// delta = min(delta_max, eta * target / scale, theta / condition) (the middle term left
/// out where scale is 0).
class RelaxedAccuracy final : public DotRule {
public:
  /// Throws InvalidArgument unless eta > 0, theta > 0 and 0 < delta_max <= 1 (all finite).
  explicit RelaxedAccuracy(double eta = 1.0, double theta = 1e-2, double delta_max = 1e-2);
  double accuracy(const DotRequest& request) const override;
  std::string to_string() const override;
  double eta() const { return eta_; }
  double theta() const { return theta_; }
  double delta_max() const { return delta_max_; }

private:
  double eta_, theta_, delta_max_;
};

/// A safeguard that fired, or a dot product that was repeated (what and why, in words).
struct SolverEvent {
  int iteration = 0;
  std::string what;
};

/// The default rule for a solver: RelaxedAccuracy(1, 1e-4, 1e-2) for CG, (1/4, 1, 1e-2) for
/// the power method (see above).
std::shared_ptr<const DotRule> default_cg_rule();
std::shared_ptr<const DotRule> default_power_rule();

}  // namespace ebla
