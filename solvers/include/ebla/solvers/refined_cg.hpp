// Mixed-precision iterative refinement with a binary32 CG inside: the alternative to ebla::cg
// that HPG-MxP-style codes take, and a baseline for it (apps/bench/bench_cg.cpp).
//
//   ebla::RefinedCgResult r = ebla::refined_cg(A, b, x0, options);
//
// Outer loop, in binary64:  r = b - A x;  stop when ||b - A x|| <= tolerance ||b||;
//                           solve A d = r approximately in binary32;  x = x + d.
// Inner solve, in binary32: plain CG (no preconditioner) on a float copy of A (CsrOperator:
// the values rounded to float, the same columns; StencilOperator: the stencil applied to
// float vectors, its coefficients 27 and -1 exact in float) with float vectors and float
// arithmetic throughout, from d = 0, until its recursive residual satisfies
// ||r_k|| <= inner_tolerance ||r_0|| (or inner_max_iterations). Before it is rounded to
// float, the outer residual is scaled by the power of two 2^-e that brings its norm into
// [1/2, 1) (exact; the correction is scaled back by 2^e), so that no residual, however
// small, underflows float's range.
//
// Stopping test: ||b - A x|| <= tolerance ||b||, with r = b - A x computed in binary64 (the
// vector the correction solves for) and its norm summed in binary64, before every correction
// (so that an x0 that already satisfies it costs no inner iteration). At exit the true
// residual ||b - A x|| is evaluated once in double-double by the operator's residual_norm
// (operators.hpp); a run whose binary64 test passed is converged only if that residual,
// inflated by its rounding allowance (1 + 2^-50), is within tolerance ||b|| too (else
// unconfirmed, as for ebla::cg). Other endings: max_outer corrections made (max_iterations);
// a correction that did not reduce the binary64 ||b - A x||, a residual that is not finite,
// or an inner breakdown (p^T A p <= 0 or not finite in float) at the first inner iteration
// (breakdown: the float solve can do no better, e.g. a tolerance below what the float inner
// solve and the binary64 residual attain, or a matrix whose float copy is not positive
// definite).
//
// Determinism: every reduction (float p^T q and r^T r inside, ||b|| and ||b - A x||
// outside) is taken in fixed chunks of 1024 entries, the chunks' partial sums added in chunk
// order on the host; the float matrix products sum each row in a fixed order. The results
// are the same bits on any number of threads.
//
// Cost per inner iteration: one float operator application, one float dot product pass
// (p^T q), one pass updating d and r and summing r^T r, one pass updating p (half the bytes of
// ebla::cg's binary64 vectors). Per correction: one binary64 application (A x), one pass for
// ||b - A x||, one rounding b - A x to float and one adding d to x; once per call, the
// double-double true residual (several times an application).
// Memory: besides x, one binary64 vector and five float vectors (the residual, d, r, p, A p),
// and for CSR a float copy of the matrix values (made once per call).
//
// Where it runs: like ebla::cg, on Views of the default memory space, every kernel in the
// default execution space; the chunk sums come back to the host.
#pragma once

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/operators.hpp>

#include <string>
#include <vector>

namespace ebla {

struct RefinedCgOptions {
  double tolerance = 1e-10;       ///< relative: stop when ||b - A x|| <= tolerance ||b||; > 0
  /// The inner float CG stops when ||r_k|| <= inner_tolerance ||r_0||; in (0, 1). Default
  /// 1e-5: of 1e-2 .. 1e-6, the one that takes the fewest float iterations (71) and
  /// corrections (2) to 1e-10 on HPCCG 100^3, and among the fastest (docs/benchmarks.md,
  /// "Mixed-precision iterative refinement").
  double inner_tolerance = 1e-5;
  int max_outer = 50;             ///< corrections at most; >= 0
  int inner_max_iterations = 10000;  ///< per inner solve; >= 1
};

/// One correction of the outer loop.
struct RefinementStep {
  double residual = 0;         ///< ||b - A x|| before the correction (binary64, the stopping test's)
  int inner_iterations = 0;    ///< iterations of its float CG
  double inner_residual = 0;   ///< the float CG's recursive ||r|| at exit, relative to its ||r_0||
};

struct RefinedCgResult {
  Vector x;
  int outer_iterations = 0;    ///< corrections made
  int inner_iterations = 0;    ///< float CG iterations over all corrections
  SolverStatus status = SolverStatus::max_iterations;
  std::string stop_reason;     ///< which rule fired, in words
  double b_norm = 0;           ///< ||b||
  double tolerance_used = 0;   ///< tolerance ||b||
  double true_residual = 0;    ///< ||b - A x|| at exit, double-double
  double relative_residual = 0;  ///< true_residual / b_norm (0 for b = 0)
  std::vector<RefinementStep> history;  ///< one entry per correction
  double seconds = 0;          ///< the whole call
  double inner_seconds = 0;    ///< the float CG iterations only
};

/// Throws InvalidArgument (naming the function and value) for: sizes of A, b, x0 that
/// differ, tolerance <= 0 or not finite, inner_tolerance outside (0, 1), max_outer < 0,
/// inner_max_iterations < 1, NaN/Inf in b or x0, ||b||^2 outside [2^-600, 2^600] (scale the
/// system), and for CSR a matrix value that overflows float. b = 0 returns x = 0 at once
/// (converged, no correction).
RefinedCgResult refined_cg(const CsrOperator& A, ConstVector b, ConstVector x0, const RefinedCgOptions& options);
RefinedCgResult refined_cg(const StencilOperator& A, ConstVector b, ConstVector x0, const RefinedCgOptions& options);

}  // namespace ebla
