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
// The default for CG, PhasedAccuracy, follows what CG is doing (the derivation and the
// measurements behind it are in docs/solvers.md, "Choosing the tolerance"):
//  - While the Lanczos process behind CG is still finding the ends of the spectrum (the
//    condition number kappa_k of its tridiagonal matrix T_k still climbs), CG builds the
//    superlinear part of its convergence, and an error in alpha or beta there is paid for
//    later: it leaves a component of about delta ||r|| that the short recurrence no longer
//    knows how to remove quickly, and it spreads every eigenvalue into a cluster of width
//    about delta ||A|| (Greenbaum, LAA 113, 1989; Greenbaum and Strakos, SIMAX 13(1), 1992).
//    So: delta <= eta tau / (rho_k sqrt(kappa^_k)) (rho_k the largest residual so far: the
//    component, times the sqrt(kappa) iterations CG takes to damp it again, must stay a
//    multiple of the target) and delta <= theta / kappa^_k (the clusters must stay narrow
//    next to the smallest eigenvalue; kappa^_k runs ahead of kappa_k, which still
//    underestimates). eta and theta are calibrated on the problems of docs/solvers.md.
//  - Once kappa_k has settled, the iterations left converge at the rate CG has found, and
//    the dot products may follow the relaxation of inexact Krylov methods (Bouras and
//    Fraysse, SIMAX 26(3), 2005; Simoncini and Szyld, SISC 25(2), 2003; van den Eshof and
//    Sleijpen, SIMAX 26(1), 2004): delta may grow as eta_late tau / ||r_k||.
//  - Power method (DecisionAccuracy): the iterate's direction does not depend on the
//    normalisation or on lambda, so dot product errors move only lambda_k itself, by at
//    most about (delta_yy + delta_xy) |lambda|. Its value matters twice: at the end (within
//    tau of the exact power method's) and in each stopping decision |lambda_k - lambda_(k-1)|
//    <= tau, which must come out as the exact method's. So the dot products may be rough
//    while the change stays far from tau (delta ~ eta margin / |lambda|), and are exact in a
//    near tie (the next two changes predicted within tie tau of tau).
// Safeguards in the solvers multiply the rule's answer by a tightening factor (CgResult
// and PowerResult record when and why).
//
// Where it runs: on the host; a rule answers between kernels, once per dot product.
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
  double peak = 0;      ///< CG: the largest ||r_j||, j <= k; power: |lambda_k|
  /// CG: kappa_k, the condition number of the (preconditioned) matrix as the iteration has
  /// seen it so far: lambda_max / lambda_min of the Lanczos matrix T_k that the CG
  /// coefficients alpha_j, beta_j define (a lower bound of the true one, growing with k); 1
  /// before the first step and for the power method.
  double condition = 1;
  /// CG: kappa_k extrapolated while it climbs, kappa_k sqrt(kappa_k / kappa_(k/2)) (1 for
  /// the power method).
  double condition_ahead = 1;
  /// CG: kappa_k / kappa_(k-w), w = max(10, k/4): how much kappa_k still climbs (infinite
  /// for k < 11; 1 for the power method).
  double condition_growth = 1;
  /// Power method: how far the next two changes |lambda_(j+1) - lambda_j| are predicted to be
  /// from tau (0: not known yet).
  double margin = 0;
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

/// CG's default: while kappa_k climbs (condition_growth > settle),
///   delta = min(delta_max, eta tau / (rho_k sqrt(kappa^_k)), theta / kappa^_k);
/// once it has settled,
///   delta = min(delta_max, max(eta tau / (rho_k sqrt(kappa_k)), theta / kappa_k,
///                              eta_late tau / ||r_k||)),
/// with rho_k = peak, kappa^_k = condition_ahead (see above).
class PhasedAccuracy final : public DotRule {
public:
  /// Throws InvalidArgument unless eta, theta, eta_late > 0, settle >= 1 and
  /// 0 < delta_max <= 1 (all finite).
  explicit PhasedAccuracy(double eta = 500, double theta = 1e-4, double eta_late = 1e-3, double settle = 1.05,
                          double delta_max = 1e-2);
  double accuracy(const DotRequest& request) const override;
  std::string to_string() const override;

private:
  double eta_, theta_, eta_late_, settle_, delta_max_;
};

/// The power method's default: the dot products matter only where the stopping decision is
/// made and for the final lambda (above), so
///   delta = min(delta_max, eta margin / |lambda_k|),
/// 0 (exact dot products) where the margin is below tie tau (a near tie) or lambda_k is 0,
/// and delta_max before a margin is known (the first steps, lambda_1 included). The solver
/// checks each decision against the certified deviation of lambda_k and repeats a step
/// exactly where the bound leaves it open.
class DecisionAccuracy final : public DotRule {
public:
  /// Throws InvalidArgument unless eta, tie > 0 and 0 < delta_max <= 1 (all finite).
  explicit DecisionAccuracy(double eta = 0.25, double tie = 0.1, double delta_max = 1e-2);
  double accuracy(const DotRequest& request) const override;
  std::string to_string() const override;

private:
  double eta_, tie_, delta_max_;
};

/// A safeguard that fired, or a dot product that was repeated (what and why, in words).
struct SolverEvent {
  int iteration = 0;
  std::string what;
};

/// The default rule for a solver: PhasedAccuracy() for CG, DecisionAccuracy() for the power
/// method (see above).
std::shared_ptr<const DotRule> default_cg_rule();
std::shared_ptr<const DotRule> default_power_rule();

}  // namespace ebla
