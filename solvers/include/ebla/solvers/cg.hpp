// Conjugate gradients with approximate dot products: seed 002, Algorithm 4.1 (ACG),
// optionally with a Jacobi preconditioner.
//
//   ebla::CgResult r = ebla::cg(A, b, x0, dots, options);
//
// A is any operator of operators.hpp (symmetric positive definite), dots a DotPolicy.
//
// Where it runs: b, x0 and every vector of the iteration are Views of Kokkos' default memory
// space (operators.hpp), and the iteration runs in the default execution space: on the device
// in a CUDA or HIP build (the operator by KokkosSparse or Kokkos kernels, the updates, the
// dot products by qdot's device kernels), with only scalars (the dots' histograms and
// partial sums, the residual norm) coming back to the host each iteration. Where the vectors
// are in host memory, the update of x and r and the r^T r qdot share one pass (qdot_host.hpp).
// Cost per iteration: one operator application, two dot products under the policy
// (p^T q and r^T r; r^T z with a preconditioner), two passes of vector updates (the one
// that updates r also sums r_i^2 for the stopping test, and for exact dots without a
// preconditioner that sum is r^T r, so only p^T q takes a pass of its own), and with Jacobi
// one multiplication by D^-1, with block-Jacobi the two triangular solves of each block, with
// SGS a forward and a backward sweep over the colours, with IC(0) two sparse triangular solves.
//
// Stopping test. The loop stops when the recursive residual satisfies ||r_k|| <= tau
// (tau = tolerance, times ||b|| for Norm::relative; at least absolute_tolerance, which with
// Norm::relative gives SciPy's max(rtol ||b||, atol)), with ||r_k||^2 the plain double sum
// of r_i^2 inflated by its rounding bound 1 / (1 - gamma_n): an exact norm, not the
// approximate c_k = qdot(r, r). Why: the test must not be fooled by the approximation
// (c_k may be off by as much as the qdot tolerance allows, 100x at tolerance 1e2), and
// with an exact norm ACG stops by the same rule as CG, so a difference in iteration
// counts measures the effect of the approximation on convergence and nothing else (the
// quantity seed 002 section 4.2 compares). The sum of squares rides along in the pass
// that updates r, so it costs no extra pass. StopTest::certified instead stops when
// c_k + bound(c_k) <= tau^2 (qdot's certified bound guarantees ||r_k|| <= tau then; it
// stops later when the bound is loose). StopTest::approximate stops when
// sqrt(c_k) <= tau, as Algorithm 4.1 and HPCCG compute ||r||: it is there to reproduce the
// seed's runs and guarantees nothing (c_k can be far below r^T r at a loose tolerance).
//
// At exit the true residual ||b - A x|| is computed in double-double (operators.hpp), and a
// run is converged only if that residual, with its rounding allowance, is finite and within
// tau; otherwise its status is unconfirmed (the recursive residual met tau, the true one did
// not). Range: where sum b_i^2 leaves [2^-600, 2^600] (b of 1e160 overflows ||b||^2, b of
// 1e-200 underflows it), CG runs on 2^-e b and 2^-e x0 with 2^-e max |b_i| in [1/2, 1),
// exactly the same iteration as on b wherever nothing overflows or underflows, and scales
// x and the residuals back; CgResult::events says so.
//
// Preconditioners (CgOptions::pc, preconditioner.hpp): Jacobi (diag(A)^-1), block-Jacobi
// (blockdiag(A)^-1, blocks of up to pc_block_size rows found from A's sparsity pattern),
// multicolour symmetric Gauss-Seidel or IC(0) (the last three need a csr operator, or the
// stencil, whose matrix is then built once, on one process), or a function
// of the caller computing z = M r for an M that approximates A^-1 (symmetric positive
// definite); each makes line 10 r^T z.
//
// Breakdown: p^T A p <= 0 (A not positive definite, or the approximation made it look
// so), or a dot product that is zero where it divides, or NaN/Inf: the iteration stops
// with Status::breakdown and the iterate reached so far.
//
// DotPolicy::automatic (dot_rule.hpp): before each dot product the rule gives the relative
// accuracy delta it needs, from tau, ||r_k|| (the exact norm of the stopping test), the
// largest ||r_j|| so far and the condition number of CG's Lanczos matrix T_k; the
// dot product is computed to that accuracy, certified by its bound, and repeated more
// tightly (at last exactly) where the bound misses it, or where p^T A p or r^T z is not
// certified positive, so that the approximation cannot cause a breakdown. Safeguard: when
// ||r_k|| has not reached a new minimum for max(stall_window, k_min) iterations (k_min the
// iteration of the minimum; exact CG on HB/1138_bus with Jacobi has a plateau of 313
// iterations from iteration 57), every later delta is tightened by 100 (down to exact dot
// products). CgResult::events lists both, and each DotRecord the tolerance and accuracy it
// was computed at.
#pragma once

#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/preconditioner.hpp>
#include <ebla/solvers/space.hpp>
#include <ebla/solvers/storage_rule.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ebla {

enum class Norm : std::uint8_t { absolute, relative };  ///< tau, or tau ||b||
enum class StopTest : std::uint8_t { exact_norm, certified, approximate };
/// unconfirmed: the stopping test passed, but the true residual ||b - A x|| (double-double,
/// with its rounding allowance) is not finite or exceeds tau, so the run is not converged.
enum class SolverStatus : std::uint8_t { converged, max_iterations, breakdown, unconfirmed };

const char* to_string(Norm);
const char* to_string(StopTest);
const char* to_string(SolverStatus);

/// Iterations without a new minimum of ||r_k|| after which the automatic policy tightens
/// (the default of CgOptions::stall_window).
constexpr int cg_stall_window = 500;

struct CgOptions {
  double tolerance = 1e-8;           ///< tau > 0
  Norm norm = Norm::absolute;
  /// tau is at least this (>= 0): tau = max(tolerance [times ||b||], absolute_tolerance)
  double absolute_tolerance = 0;
  StopTest stop = StopTest::exact_norm;
  int max_iterations = 10000;        ///< >= 0
  bool jacobi = false;               ///< precondition with diag(A)^-1 (the same as pc = jacobi)
  /// The preconditioner (preconditioner.hpp); block_jacobi, sgs and ic0 need a csr or
  /// stencil operator on one process, binary64 storage, and no preconditioner function.
  PcKind pc = PcKind::none;
  int pc_block_size = default_pc_block_size;  ///< block-Jacobi's largest block (>= 1)
  /// block-Jacobi: the format of each block's factor (preconditioner.hpp, "Block storage")
  BlockStorage pc_storage;
  bool record_levels = false;        ///< keep the per-component ladder maps (Fig. 5)
  /// DotPolicy::automatic: tighten when ||r_k|| has not reached a new minimum for
  /// max(stall_window, k_min) iterations (k_min the iteration of the minimum); >= 1.
  int stall_window = cg_stall_window;
  /// z = M r, M symmetric positive definite and close to A^-1 (not with jacobi or pc, not
  /// with narrow storage); may be empty. Its exceptions propagate out of cg.
  std::function<void(ConstVector r, Vector z)> preconditioner;
  /// Called after every iteration with (k, ||r_k||) (progress lines); may be empty.
  std::function<void(int, double)> progress;
  /// Called after every iteration with (k, x_k), the iterate of the system as given; may be
  /// empty. Its exceptions propagate out of cg.
  std::function<void(int, ConstVector)> on_iterate;
  /// The format of p, q and r (storage_rule.hpp). Narrow storage needs an operator that
  /// reads stored vectors (csr or stencil, one process) and StopTest::exact_norm; its dot
  /// products ride in the passes in binary64, whatever the DotPolicy.
  StoragePolicy storage;
};

/// What one iteration did.
struct CgIteration {
  double residual = 0;        ///< ||r_k|| as the stopping test saw it
  double alpha = 0, beta = 0;
  DotRecord pq;               ///< p^T q (line 7 of Algorithm 4.1)
  DotRecord rr;               ///< r^T r (line 10), or r^T z with Jacobi
  std::vector<std::uint8_t> pq_levels, rr_levels;  ///< only with record_levels
  // narrow storage (CgOptions::storage) only:
  StorageFormats storage;     ///< the formats p, q and r were stored in
  double gap = 0;             ///< G_k after the iteration: ||b - A x - r|| <= G_k + rounding
  bool replaced = false;      ///< the residual was replaced before the iteration
  double bytes = 0;           ///< bytes the iteration's passes read and wrote (model)
};

struct CgResult {
  Vector x;
  int iterations = 0;
  SolverStatus status = SolverStatus::max_iterations;
  std::string stop_reason;           ///< which rule fired, in words
  std::string breakdown;             ///< what broke down (empty otherwise)
  double tolerance_used = 0;         ///< tau, times ||b|| if relative
  double initial_residual = 0;       ///< ||r_0|| as the stopping test saw it
  double recursive_residual = 0;     ///< ||r_k|| at exit, as the stopping test saw it
  double true_residual = 0;          ///< ||b - A x|| at exit, double-double
  double b_norm = 0;
  DotRecord rr0;                     ///< c_0 (line 4)
  std::vector<CgIteration> history;  ///< one entry per iteration
  /// DotPolicy::automatic: the safeguards that fired and the dot products repeated, in order
  std::vector<SolverEvent> events;
  std::string storage = "binary64";  ///< the storage policy (to_string(StoragePolicy))
  int replacements = 0;              ///< residual replacements (narrow storage)
  double bytes_moved = 0;            ///< bytes of all iterations (model; narrow storage)
  double nonzero_bytes = 0;          ///< narrow storage, CSR: bytes a nonzero takes (value and column)
  std::string pc = "none";           ///< the preconditioner: to_string(PcKind), or "function"
  std::size_t pc_blocks = 0;         ///< its diagonal blocks (Jacobi: n of one row)
  std::size_t pc_colours = 0;        ///< SGS: the colours of its ordering
  std::size_t pc_levels = 0;         ///< IC(0): the levels of each triangular solve
  double pc_shift = 0;               ///< IC(0): alpha of the A + alpha diag(A) factorised (0: A)
  int pc_restarts = 0;               ///< IC(0): the factorisations that broke down before
  double pc_bytes = 0;               ///< the bytes it stores (Jacobi: D^-1)
  /// block-Jacobi: what the same blocks would take in binary64, the blocks in bfloat16,
  /// binary32 and binary64 (BlockStorage), and the largest d of its blocks (kappa(M~^-1 A)
  /// <= ((1 + d) / (1 - d))^2 kappa(M^-1 A))
  double pc_binary64_bytes = 0;
  std::size_t pc_blocks_in[3] = {0, 0, 0};
  double pc_delta = 0;
  double seconds = 0;                ///< the whole call
  double iteration_seconds = 0;      ///< the iterations only (no set-up, no true residual)
};

/// Throws InvalidArgument (naming the function and value) for: sizes of A, b, x0 that
/// differ, tolerance <= 0 or NaN, max_iterations < 0, NaN/Inf in b or x0, a diagonal entry
/// of A that is not positive (no SPD matrix has one: an empty row, a missing or negative
/// a_ii), or with Jacobi one whose inverse overflows, two preconditioners given, or with
/// block-Jacobi, SGS or IC(0) an operator without rows, with block-Jacobi a block size < 1 or
/// a block that is not positive definite, with IC(0) a factorisation that breaks down under
/// every shift (preconditioner.hpp); all before any vector of the iteration is allocated. b = 0 returns x = 0 at once (converged, 0 iterations).
/// On a SolverSpace (space.hpp), b, x0 and the result's x are the owned rows, the norms,
/// records and decisions global; the call is collective over the space's processes, and
/// an argument error on any of them throws on all.
CgResult cg(const SolverSpace& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options);
CgResult cg(const CsrOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options);
CgResult cg(const StencilOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options);
CgResult cg(const DenseOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options);
CgResult cg(const FunctionOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options);

/// tau of the options for a right-hand side of norm b_norm (CgResult::tolerance_used).
double cg_tolerance(const CgOptions& options, double b_norm);

}  // namespace ebla
