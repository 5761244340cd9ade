// The power method with approximate dot products: seed 002, Algorithm 4.2 (APM), with
// its eigenvalue update corrected.
//
//   ebla::PowerResult r = ebla::power_method(A, x0, dots, options);
//
// Cost per iteration: one operator application, two dot products under the policy
// (y^T y for the normalisation, x^T y for the eigenvalue), one vector scaling.
//
// Where it runs: as CG (cg.hpp), in Kokkos' default execution space on Views of its memory,
// on the device in a CUDA or HIP build; the eigenvalue and the stopping decision are taken
// on the host from the dot products' values.
//
// The iteration, with x_k of unit norm and y_k = A x_k:
//   c_k       = y_k^T y_k                 (line 6)
//   x_{k+1}   = y_k / sqrt(c_k)           (line 7)
//   y_{k+1}   = A x_{k+1}                 (line 5 of the next pass)
//   lambda_{k+1} = x_{k+1}^T y_{k+1}      (the Rayleigh quotient of the unit iterate)
// until |lambda_{k+1} - lambda_k| <= tau. Seed 002 prints line 8 as
// lambda_{k+1} = qdot(x_k, x_{k+1}) / c, which is x_k^T A x_k / c^(3/2): off by the
// factor c^(-3/2) = ||A x_k||^-3 (it gives 1/4 instead of 2 for A = diag(2, 1), x = e_1).
// The Rayleigh quotient is what is meant, and what this computes. Line 3 likewise
// starts from lambda_1 = x_1^T A x_1 with x_1 = x_0 / ||x_0||.
//
// Stored iteration (PowerOptions::storage narrow or automatic): one pass per iteration reads
// the stored v_k and writes v_(k+1) = fl_S(2^-e A v_k), taking v^T A v and v^T v on the way,
// so lambda_k = v_k^T A v_k / v_k^T v_k is the Rayleigh quotient of the stored iterate
// itself (its rounding enters no eigenvalue, only the next direction; e, a power of two,
// keeps the sizes steady and changes no direction). The dot products are binary64 sums in
// the pass (the DotPolicy is not used). The residual at exit is of the stored iterate, in
// double-double: the certificate is unchanged (docs/solvers.md, "Stored iterate").
//
// Breakdown: c_k = 0 (A x_k = 0: x_k in the null space, e.g. the constant vector for a
// graph Laplacian), or a NaN/Inf dot product.
#pragma once

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/storage_rule.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ebla {

struct PowerOptions {
  double tolerance = 1e-6;   ///< tau > 0 on |lambda_{k+1} - lambda_k|
  int max_iterations = 300;  ///< >= 1
  bool record_levels = false;
  std::function<void(int, double)> progress;  ///< (k, lambda_k) after every iteration
  /// The format the iterate is stored in (one vector: fixed.p = fixed.r), or automatic:
  /// binary32 while its rounding moves lambda by less than an eighth of the last change (and
  /// of tau), then binary64. Anything but binary64 runs the stored iteration (below).
  StoragePolicy storage;
};

struct PowerIteration {
  double eigenvalue = 0;  ///< lambda_k
  double change = 0;      ///< |lambda_k - lambda_{k-1}|
  DotRecord yy;           ///< c = y^T y (normalisation)
  DotRecord xy;           ///< x^T y (eigenvalue)
  std::vector<std::uint8_t> yy_levels, xy_levels;  ///< only with record_levels
  Storage storage = Storage::binary64;  ///< the stored iteration: the format x_k was read from
  double perturbation = 0;  ///< the stored iteration: ||fl_S(y) - y|| / ||y|| of the next iterate
  double bytes = 0;         ///< the stored iteration: bytes of the pass (model)
};

struct PowerResult {
  double eigenvalue = 0;
  Vector eigenvector;                  ///< unit norm (in the policy's arithmetic)
  int iterations = 0;
  SolverStatus status = SolverStatus::max_iterations;
  std::string stop_reason;
  std::string breakdown;
  double residual = 0;                 ///< ||A x - lambda x|| at exit (double-double, against fl(lambda x))
  std::vector<PowerIteration> history;  ///< entry 0: the start (lambda_1)
  std::vector<SolverEvent> events;      ///< DotPolicy::automatic: dot products repeated
  double seconds = 0;
  std::string storage = "binary64";  ///< the storage policy (to_string)
  double bytes_moved = 0;             ///< the stored iteration: bytes of all passes (model)
};

/// Throws InvalidArgument (naming the function and value) for: x0 of another size than
/// A, x0 = 0, NaN/Inf in x0, tolerance <= 0 or NaN, max_iterations < 1; for narrow storage
/// also: an operator that cannot read stored vectors (only csr and stencil on one process
/// can), two formats (p=F,r=G with F != G), record_levels.
/// On a SolverSpace (space.hpp): x0 and the eigenvector are the owned rows, the rest global;
/// collective over the space's processes.
PowerResult power_method(const SolverSpace& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& options);
PowerResult power_method(const CsrOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& options);
PowerResult power_method(const StencilOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& options);
PowerResult power_method(const DenseOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& options);
PowerResult power_method(const FunctionOperator& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& options);

}  // namespace ebla
