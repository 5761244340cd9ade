#include <ebla/solvers/cg.hpp>

#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/kernels/qdot_host.hpp>
#include <ebla/solvers/problems.hpp>

#include "accurate_dots.hpp"
#include "cg_stored.hpp"
#include "chunk_dot.hpp"
#include "lanczos_condition.hpp"
#include "vector_range.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ebla {

const char* to_string(Norm n) { return n == Norm::absolute ? "absolute" : "relative"; }
const char* to_string(StopTest s) {
  switch (s) {
    case StopTest::exact_norm: return "exact_norm";
    case StopTest::certified: return "certified";
    case StopTest::approximate: return "approximate";
  }
  return "?";
}
const char* to_string(SolverStatus s) {
  switch (s) {
    case SolverStatus::converged: return "converged";
    case SolverStatus::max_iterations: return "max_iterations";
    case SolverStatus::breakdown: return "breakdown";
    case SolverStatus::unconfirmed: return "unconfirmed";
  }
  return "?";
}

double cg_tolerance(const CgOptions& o, double b_norm) {
  return std::max(o.norm == Norm::relative ? o.tolerance * b_norm : o.tolerance, o.absolute_tolerance);
}

namespace {

using exec = Kokkos::DefaultExecutionSpace;

// ||v|| from s~ = fl(v^T v) in double, inflated by its rounding bound: every term is
// nonnegative, so v^T v <= s~ + gamma_n s~ / (1 - gamma_n) (Higham, eq. (3.5)).
double norm_from_squares(double sum_squares, std::size_t n) {
  return std::sqrt(sum_squares + exact_squares_record(sum_squares, n).bound);
}

// ||v|| of the global vector whose owned part is v.
double exact_norm(const SolverSpace& A, ConstVector v) {
  return norm_from_squares(A.sum(plain_dot(v, v)), A.global_size());
}


// Whether the solvers' vectors live in memory the host can read (then the host passes below
// serve, chunk by chunk on every host thread).
constexpr bool host_vectors = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Vector::memory_space>::accessible;

// x += alpha p; r -= alpha q (lines 8-9), in one pass that also returns fl(r^T r) for the
// stopping test: chunk by chunk on every host thread, each chunk's sum of squares taken
// while the chunk is in cache, the chunks' sums added in chunk order (the same bits for any
// thread count). With `rr`, the qdot r^T r (line 10) rides in the same pass: each chunk's
// histogram, and its products under the last plan, in the loop that writes the chunk of r
// (detail::QdotStream::update).
double update_x_r_host(double alpha, ConstVector p, ConstVector q, Vector x, Vector r, detail::QdotStream* rr,
                       std::int64_t* histogram) {
  const std::size_t n = x.extent(0);
  const std::size_t chunk = rr ? rr->chunk() : detail::stream_chunk(n);
  const std::size_t chunks = detail::chunk_count(n, chunk);
  double* xp = x.data();
  double* rp = r.data();
  const double* pp = p.data();
  const double* qp = q.data();
  if (!rr && chunks == 1) return 0.0 + detail::cg_update(alpha, pp, qp, xp, rp, n);  // (without the buffer)
  std::vector<double> part(chunks, 0.0);
  auto update = [&](std::size_t c, std::int64_t* h) {
    const std::size_t b = c * chunk;
    if (rr)  // x = x + alpha p, r = r - alpha q inside the qdot's loop (the same bits)
      part[c] = rr->update(c, alpha, pp, qp, xp, rp, h);
    else     // x = x + alpha p, r = r - alpha q
      part[c] = detail::cg_update(alpha, pp + b, qp + b, xp + b, rp + b, std::min(chunk, n - b));
  };
  if (rr)
    detail::count_over_chunks(chunks, detail::QdotStream::histogram_size(), histogram, update);
  else
    detail::for_each_chunk(chunks, [&](std::size_t c) { update(c, nullptr); });
  double sum = 0;
  for (double v : part) sum += v;
  return sum;
}

// fl(r^T r) and fl(r^T z) of the Jacobi pass below.
struct JacobiSums {
  double rr = 0, rz = 0;
};

// With Jacobi and exact dot products: x += alpha p, r -= alpha q (lines 8-9), z = D^-1 r and
// c = r^T z (line 10) in one pass over the vectors, each chunk of r read from memory once.
// Chunk by chunk, the update pass's operations and sum of squares, then Jacobi's products,
// then plain_dot's sum of the chunk, and the chunks' sums in chunk order: the bits of the
// three passes (update_x_r_host, scale, plain_dot) with three fewer vector transfers of
// the sixteen an iteration moves.
JacobiSums update_x_r_z_host(double alpha, const ConstVector& p, const ConstVector& q, const Vector& x, const Vector& r,
                             const ConstVector& dinv, const Vector& z) {
  const std::size_t n = x.extent(0), chunk = detail::stream_chunk(n), chunks = detail::chunk_count(n, chunk);
  double* xp = x.data();
  double* rp = r.data();
  double* zp = z.data();
  const double* pp = p.data();
  const double* qp = q.data();
  const double* dp = dinv.data();
  auto one = [&](std::size_t c) {
    const std::size_t b = c * chunk, e = std::min(n, b + chunk);
    JacobiSums s;
    s.rr = detail::cg_update(alpha, pp + b, qp + b, xp + b, rp + b, e - b);  // x, r and the chunk's squares
    for (std::size_t i = b; i < e; ++i) zp[i] = dp[i] * rp[i];                 // z = D^-1 r
    s.rz = detail::chunk_dot(rp, zp, b, e);                                    // the chunk's r^T z
    return s;
  };
  if (chunks == 1) {  // (the sums below, without their buffer)
    const JacobiSums s = one(0);
    return {0.0 + s.rr, 0.0 + s.rz};
  }
  std::vector<JacobiSums> part(chunks);
  detail::for_each_chunk(chunks, [&](std::size_t c) { part[c] = one(c); });
  JacobiSums sum;
  for (const JacobiSums& s : part) {
    sum.rr += s.rr;
    sum.rz += s.rz;
  }
  return sum;
}

// The same on any execution space: chunks of 1024, each summing its squares, the chunks'
// sums added in chunk order on the host.
double update_x_r_kokkos(double alpha, ConstVector p, ConstVector q, Vector x, Vector r) {
  constexpr std::size_t block = 1024;
  const std::size_t n = x.extent(0), chunks = (n + block - 1) / block;
  Kokkos::View<double*> part("ebla::cg_update chunks", chunks);
  Kokkos::parallel_for(
      "ebla::cg_update", Kokkos::RangePolicy<exec>(0, chunks), KOKKOS_LAMBDA(const std::size_t b) {
        const std::size_t end = (b + 1) * block < n ? (b + 1) * block : n;
        double s = 0;
        for (std::size_t i = b * block; i < end; ++i) {
          x(i) += alpha * p(i);
          const double ri = r(i) - alpha * q(i);
          r(i) = ri;
          s += ri * ri;
        }
        part(b) = s;
      });
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
  double sum = 0;
  for (std::size_t b = 0; b < chunks; ++b) sum += host(b);
  return sum;
}

double update_x_r(double alpha, ConstVector p, ConstVector q, Vector x, Vector r) {
  if constexpr (host_vectors)
    return update_x_r_host(alpha, p, q, x, r, nullptr, nullptr);
  else
    return update_x_r_kokkos(alpha, p, q, x, r);
}

// Whether CG, found in the finite-precision regime at step k (lanczos_condition.hpp), should
// also start again from x_k (r = b - A x_k, p = z, exact dot products): the rounded
// coefficients of its first k steps stay in its Krylov basis and go on costing iterations
// (unpreconditioned HB/494_bus at 1e-8: exact CG 1154 iterations, exact dot products from
// step 12 on 1366, restarted there 1134), but a restart also throws away what those k
// steps found (HB/nos4, found at step 57 of 84: 87 iterations without a restart, 129 with).
// So it restarts only where k is at most a sixth of the iterations still to go, counted by
// the Chebyshev bound sqrt(kappa)/2 ln(2/eps) for the reduction eps = tau / ||r_k|| at the
// projected kappa(T_k) (kappa(T_k) is a lower bound of kappa, so the count falls short of
// CG's), and by n. The sixth is a calibration on the matrices of docs/solvers.md: a fifth
// restarted bcsstk16 with Jacobi at step 60 (232 -> 254 iterations at 1e-10, against 235),
// a tenth left unpreconditioned bcsstk13 and bcsstk16 unrestarted (1.24x and 1.045x).
// The count presumes a spectrum spread between its ends, as without a preconditioner or with
// Jacobi. A preconditioner built from A's factors or sweeps (block-Jacobi, SGS, IC(0)) leaves a
// cluster and a few outliers, where CG converges superlinearly after a phase that the count
// cannot foresee, so CG with such a preconditioner (or one of the caller's) is not restarted:
// HB/1138_bus with IC(0) at 1e-8 is in the regime at step 63 of exact CG's 126, its residual
// not yet below ||r_0|| there; restarted it took 187 iterations, not restarted 127. (Neither
// the rate seen over the last k/2 steps nor the condition number of the Ritz values not yet
// converged told that run from the unpreconditioned ones that a restart serves.)
bool restart_pays(double kappa, double reduction, std::size_t n, int k) {
  if (!(reduction > 0 && reduction < 1)) return false;
  const double left = std::sqrt(kappa) / 2 * std::log(2 / reduction);  // sqrt(kappa)/2 ln(2/eps)
  return std::min(static_cast<double>(n), left) >= 6.0 * k;
}

// An alias of v's entries outside its reference count: CG's loop hands its vectors to a dozen
// calls an iteration, and each copy of a counted View costs two atomic updates of the count
// (a fifth of an iteration's time on HB/494_bus). The counted Views stay alive for the solve.
Vector untracked(const Vector& v) { return Vector(v.data(), v.extent(0)); }
ConstVector untracked(const ConstVector& v) { return ConstVector(v.data(), v.extent(0)); }

// out_i = f(i) for every i < n: one Kokkos kernel, but on the host for a vector of one chunk
// of the update pass (n <= 4096) on the calling thread, as that pass runs it: a few
// microseconds of work, less than starting and joining the threads costs.
template <class F>
void elementwise(const char* label, std::size_t n, const F& f) {
  if constexpr (host_vectors) {
    if (detail::chunk_count(n, detail::stream_chunk(n)) <= 1) {
      for (std::size_t i = 0; i < n; ++i) f(i);
      return;
    }
  }
  Kokkos::parallel_for(label, Kokkos::RangePolicy<exec>(0, n), f);
}

// p = z + beta p (line 12).
void update_p(ConstVector z, double beta, Vector p) {
  elementwise("ebla::cg_direction", p.extent(0), KOKKOS_LAMBDA(const std::size_t i) { p(i) = z(i) + beta * p(i); });
}

// z = D^-1 r (Jacobi).
void scale(ConstVector dinv, ConstVector r, Vector z) {
  elementwise("ebla::jacobi", r.extent(0), KOKKOS_LAMBDA(const std::size_t i) { z(i) = dinv(i) * r(i); });
}

// Throws InvalidArgument on every process if `problem` is not empty on some process.
void agree(const SolverSpace& A, const char* function, const std::string& problem) {
  if (!A.all(problem.empty()))
    throw_invalid(function, problem.empty() ? std::string("invalid input on another process") : problem);
}

std::string problem_of(const SolverSpace& A, ConstVector b, ConstVector x0, const CgOptions& o) {
  const std::size_t n = A.size();
  if (b.extent(0) != n) return "b has " + std::to_string(b.extent(0)) + " entries, A " + std::to_string(n) + " rows";
  if (x0.extent(0) != n) return "x0 has " + std::to_string(x0.extent(0)) + " entries, A " + std::to_string(n) + " rows";
  if (!(o.tolerance > 0) || !std::isfinite(o.tolerance)) return "tolerance " + std::to_string(o.tolerance) + " must be positive and finite";
  if (!(o.absolute_tolerance >= 0) || !std::isfinite(o.absolute_tolerance))
    return "absolute tolerance " + std::to_string(o.absolute_tolerance) + " must be nonnegative and finite";
  if (o.max_iterations < 0) return "max_iterations " + std::to_string(o.max_iterations) + " is negative";
  if (o.stall_window < 1) return "stall_window " + std::to_string(o.stall_window) + " must be at least 1";
  const bool matrix = from_matrix(o.pc);            // block-Jacobi, SGS or IC(0)
  const std::string pc = pc_title(o.pc);
  if (o.jacobi && matrix) return "Jacobi and " + pc + ": give one preconditioner";
  if (o.jacobi && o.preconditioner) return "Jacobi and a preconditioner function: give one preconditioner";
  if (matrix && o.preconditioner) return pc + " and a preconditioner function: give one preconditioner";
  if (o.pc == PcKind::block_jacobi && o.pc_block_size < 1)
    return "block-Jacobi block size " + std::to_string(o.pc_block_size) + " must be at least 1";
  if (o.pc != PcKind::block_jacobi && (o.pc_storage.automatic || o.pc_storage.fixed != Storage::binary64))
    return "block storage " + to_string(o.pc_storage) + " stores the blocks of block-Jacobi, not of " +
           (o.jacobi ? std::string("Jacobi") : pc);
  if (matrix && A.rows().kind == RowsOf::Kind::none)
    return pc + " needs the matrix: a csr or stencil operator, on one process";
  if (o.stop != StopTest::exact_norm && (o.jacobi || matrix || o.preconditioner))
    return std::string("the ") + to_string(o.stop) +
           " stopping test needs r^T r, which preconditioned CG does not compute: use exact_norm with " +
           (o.jacobi ? "Jacobi" : matrix ? pc : "a preconditioner");
  if (!detail::finite_vector(b)) return "b has a NaN or infinite entry";
  if (const std::string s = detail::storage_problem(A, o); !s.empty()) return s;
  if (!detail::finite_vector(x0)) return "x0 has a NaN or infinite entry";
  return {};
}

// The stopping test's ||r||: from fl(r^T r) in double, sqrt(c + bound(c)) from the
// certified dot product, or Algorithm 4.1's sqrt(c).
double residual_norm(const CgOptions& o, double sum_squares, std::size_t n, const DotRecord& rr) {
  switch (o.stop) {
    case StopTest::exact_norm: return norm_from_squares(sum_squares, n);
    case StopTest::certified: return std::sqrt(std::max(rr.value + rr.bound, 0.0));
    case StopTest::approximate: break;
  }
  return std::sqrt(std::max(rr.value, 0.0));  // Algorithm 4.1's ||r_k||: not certified
}

CgResult stop(CgResult res, SolverStatus status, std::string reason) {
  res.status = status;
  res.stop_reason = std::move(reason);
  return res;
}

// The loop runs on the owned rows; every scalar it branches on comes from a global reduction
// of the space, so every process takes the same branches.
// The arguments are checked (cg below); dinv is D^-1 with Jacobi, else empty.
CgResult iterate(const SolverSpace& A, ConstVector b, ConstVector x0, ConstVector dinv, const DotPolicy& given,
                 const CgOptions& o) {
  if (o.storage.narrow()) return detail::stored_cg(A, b, x0, dinv, o);  // cg_stored.cpp
  const DotPolicy dots = detail::in_solver(given, A);  // the plan margin resolved
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = A.size(), N = A.global_size();
  CgResult res;
  res.x = Vector("ebla::cg x", n);
  res.b_norm = exact_norm(A, b);
  res.tolerance_used = cg_tolerance(o, res.b_norm);
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (res.b_norm == 0) {  // b = 0: x = 0 solves it exactly
    res.status = SolverStatus::converged;
    res.stop_reason = "b = 0: x = 0";
    res.seconds = seconds();
    return res;
  }
  const Vector r_held("ebla::cg r", n), p_held("ebla::cg p", n), q_held("ebla::cg q", n);
  const bool preconditioned = o.jacobi || static_cast<bool>(o.preconditioner);
  const Vector z_held = preconditioned ? Vector("ebla::cg z", n) : r_held;
  // the loop's names for the vectors: aliases outside their reference counts (untracked)
  const Vector x = untracked(res.x), r = untracked(r_held), p = untracked(p_held), q = untracked(q_held),
               z = untracked(z_held);
  for (const Vector& v : {x, r, p, q, z}) detail::forget_plans(v.data());  // plans of this solve only
  const ConstVector d = untracked(dinv);
  auto precondition = [&] {
    if (o.jacobi) scale(d, r, z);
    else if (from_matrix(o.pc)) o.preconditioner(r, z);  // block-Jacobi, SGS, IC(0) (cg below)
    else if (o.preconditioner) o.preconditioner(r_held, z_held);  // counted: the caller may keep them
  };
  std::vector<std::uint8_t>* no_map = nullptr;
  // exact dots without preconditioning: r^T r is the sum of squares the update pass takes
  const bool exact_rr = dots.kind == DotKind::exact && !preconditioned;
  // the automatic policy: each dot product to the accuracy its rule asks (accurate_dots.hpp)
  detail::AccurateDots dot(dots, default_cg_rule(), res.events);
  const double tau = res.tolerance_used;
  detail::LanczosCondition kappa;                  // kappa_k, from the alphas and betas so far
  double peak_rnorm = 0;                           // rho_k = max_(j <= k) ||r_j||
  auto request = [&](DotRole role, int k, double norm) {
    DotRequest q{role, k, tau, norm};
    q.peak = peak_rnorm = std::max(peak_rnorm, norm);
    if (dot.automatic()) {
      q.condition = kappa.estimate();
      q.condition_ahead = kappa.projected();
      q.condition_growth = kappa.growth();
    }
    return q;
  };
  // qdot on one process without preconditioning: r^T r's qdot rides in the update pass
  const bool riding_rr = host_vectors && A.single_process() &&
                         (dots.kind == DotKind::qdot || dots.kind == DotKind::automatic) && !preconditioned &&
                         !o.record_levels;
  std::vector<std::int64_t> histogram(riding_rr ? detail::QdotStream::histogram_size() : 0);
  // exact dot products with Jacobi on one process: the update, z and r^T z in one pass
  const bool jacobi_pass = host_vectors && A.single_process() && o.jacobi && dots.kind == DotKind::exact &&
                           !o.record_levels;

  Kokkos::deep_copy(x, x0);
  if (detail::max_abs(A, x0) == 0) {               // x_0 = 0: r_0 = b, without a product
    Kokkos::deep_copy(r, b);
  } else {
    A.apply(x, q);                                 // r_0 = b - A x_0
    Kokkos::parallel_for("ebla::cg_r0", Kokkos::RangePolicy<exec>(0, n),
                         KOKKOS_LAMBDA(const std::size_t i) { r(i) = b(i) - q(i); });
  }
  precondition();                                  // z_0 = M^-1 r_0
  Kokkos::deep_copy(p, z);                         // p_0 = z_0
  const double squares0 = A.sum(plain_dot(r, r));
  double exact_rnorm = norm_from_squares(squares0, N);  // ||r_k||, what the rule scales by
  // c_0 = qdot(r_0, z_0) (line 4)
  res.rr0 = dot.dot(A, request(DotRole::cg_residual, 0, exact_rnorm), r, z, no_map, true);
  double c = res.rr0.value;
  double rnorm = residual_norm(o, squares0, N, res.rr0);
  res.initial_residual = rnorm;
  double best_rnorm = exact_rnorm;                 // the stall safeguard: the least ||r_k||
  int best_k = 0;                                  //   and where
  bool exact_regime = false;                       // the finite-precision regime was found
  const auto loop_start = std::chrono::steady_clock::now();
  int k = 0;
  for (;;) {
    res.recursive_residual = rnorm;
    if (rnorm <= res.tolerance_used) {             // line 5
      res = stop(std::move(res), SolverStatus::converged,
                 std::string(o.stop == StopTest::exact_norm  ? "||r|| <= tau"
                             : o.stop == StopTest::certified ? "sqrt(c + bound) <= tau"
                                                             : "sqrt(c) <= tau (approximate)"));
      break;
    }
    if (k >= o.max_iterations) {
      res = stop(std::move(res), SolverStatus::max_iterations, "maximum iterations reached");
      break;
    }
    CgIteration it;
    A.apply(p, q);                                 // q_k = A p_k (line 6)
    it.pq = dot.dot(A, request(DotRole::cg_curvature, k, exact_rnorm), p, q,
                    o.record_levels ? &it.pq_levels : no_map, true);
    if (!(it.pq.value > 0) || !std::isfinite(it.pq.value) || !(c > 0) || !std::isfinite(c)) {
      res.breakdown = !(it.pq.value > 0) || !std::isfinite(it.pq.value)
                          ? "p^T A p = " + std::to_string(it.pq.value) + " (not positive)"
                          : "r^T r = " + std::to_string(c) + " while ||r|| > tau";
      res = stop(std::move(res), SolverStatus::breakdown, "breakdown: " + res.breakdown);
      break;
    }
    it.alpha = c / it.pq.value;                    // alpha_k = c_k / qdot(p_k, q_k) (line 7)
    if (dot.automatic()) kappa.add(it.alpha, k > 0 ? res.history.back().beta : 0.0);
    double rr = 0;                                 // fl(r_{k+1}^T r_{k+1}), for the stopping test
    // automatic: the accuracy of c_{k+1} and its qdot options (tolerance 0: exact)
    const DotRequest rr_request = request(DotRole::cg_residual, k, exact_rnorm);
    const double rr_delta = dot.automatic() ? dot.accuracy(rr_request) : 0.0;
    const QdotOptions rr_options = dot.automatic() ? dot.options_for(DotRole::cg_residual, rr_delta) : dots.qdot;
    const bool exact_now = dot.automatic() && rr_options.tolerance == 0 && !preconditioned;
    if (riding_rr && !exact_now) {                 // x_{k+1}, r_{k+1} (lines 8-9), c_{k+1} (line 10)
      detail::QdotStream rr_dot(r.data(), r.data(), n, rr_options);  //   in one pass
      rr = update_x_r_host(it.alpha, p, q, x, r, &rr_dot, histogram.data());
      const auto t1 = std::chrono::steady_clock::now();
      it.rr = detail::record_of(rr_dot.finish(histogram.data()), n);
      it.rr.tolerance = rr_options.tolerance;
      it.rr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      if (dot.automatic()) it.rr = dot.check(A, rr_request, rr_delta, it.rr, r, r, true);
    } else if (jacobi_pass) {                     // x_{k+1}, r_{k+1}, z_{k+1}, c_{k+1} in one pass
      const JacobiSums s = update_x_r_z_host(it.alpha, p, q, x, r, d, z);
      rr = A.sum(s.rr);
      it.rr = detail::exact_dot_record(s.rz);      //   (no seconds of its own: it rides in the pass)
    } else {
      rr = A.sum(update_x_r(it.alpha, p, q, x, r)); // x_{k+1}, r_{k+1} (lines 8-9)
      precondition();                              // z_{k+1} = M^-1 r_{k+1}
      if (exact_rr || exact_now) {                 // c_{k+1} (line 10): exact, from the update pass
        it.rr = exact_squares_record(rr, N);
        if (exact_now) it.rr.accuracy = rr_delta;
        if (o.record_levels) it.rr_levels.assign(n, 0);
      } else {
        it.rr = dot.dot(A, rr_request, r, z, o.record_levels ? &it.rr_levels : no_map, true);
      }
    }
    it.beta = it.rr.value / c;                     // beta_k = c_{k+1} / c_k (line 11)
    update_p(z, it.beta, p);                       // p_{k+1} = z_{k+1} + beta_k p_k (line 12)
    c = it.rr.value;
    rnorm = residual_norm(o, rr, N, it.rr);
    exact_rnorm = norm_from_squares(rr, N);
    it.residual = rnorm;
    res.history.push_back(std::move(it));
    ++k;                                           // line 13
    if (exact_rnorm < best_rnorm) {
      best_rnorm = exact_rnorm;
      best_k = k;
    } else if (dot.automatic() && k - best_k >= std::max(o.stall_window, best_k)) {  // stalled: tighten
      dot.tighten(1e-2, k, "||r|| has not fallen below " + std::to_string(best_rnorm) + " for " +
                               std::to_string(k - best_k) + " iterations");
      best_k = k;
    }
    int converged = 0;                             // the finite-precision regime: exact from here
    if (dot.automatic() && !exact_regime && kappa.finite_precision_regime(res.history.back().beta, converged)) {
      exact_regime = true;
      // not with a preconditioner of its own (block-Jacobi, SGS, IC(0), the caller's): see restart_pays
      const bool restart = !o.preconditioner && restart_pays(kappa.projected(), tau / exact_rnorm, N, k);
      dot.tighten(0, k, detail::LanczosCondition::regime_reason(converged, k) +
                            (restart ? "; CG restarted from x_k with exact dot products" : ""));
      if (restart) {
        A.apply(x, q);                             // r = b - A x_k, z = M^-1 r, p = z
        Kokkos::parallel_for("ebla::cg_restart", Kokkos::RangePolicy<exec>(0, n),
                             KOKKOS_LAMBDA(const std::size_t i) { r(i) = b(i) - q(i); });
        precondition();
        Kokkos::deep_copy(p, z);
        const double squares = A.sum(plain_dot(r, r));
        exact_rnorm = norm_from_squares(squares, N);
        const DotRecord restarted = dot.dot(A, request(DotRole::cg_residual, k, exact_rnorm), r, z, no_map, true);
        c = restarted.value;                       // c = r^T z, exact
        rnorm = residual_norm(o, squares, N, restarted);
        kappa = detail::LanczosCondition();        // a new Lanczos process
      }
    }
    if (o.progress) o.progress(k, rnorm);
    if (o.on_iterate) o.on_iterate(k, res.x);
  }
  res.iterations = k;
  res.iteration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  res.true_residual = A.residual_norm(x, b);
  res.seconds = seconds();
  return res;
}

// ---- the certificate and the range of double ------------------------------------------------

Vector times_power_of_two(ConstVector v, int k, const char* label) {
  Vector w(std::string(label), v.extent(0));
  detail::times_power_of_two(v, k, w);
  return w;
}

// A double for a message: "1e-310", "-0", "nan".
std::string number_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

// The e for which 2^-e b keeps CG's squares in double's range: 0 where sum b_i^2 lies in
// [2^-600, 2^600] (or b = 0), else the exponent of max |b_i|, so that 2^-e max |b_i| is in
// [1/2, 1). Outside that range ||b||^2 overflows (b of 1e160) or loses its digits to
// underflow (b of 1e-200), and with it the relative tolerance tau ||b||, the test b = 0
// and every r^T r after it.
int range_exponent(const SolverSpace& A, ConstVector b) {
  if (detail::squares_in_range(A.sum(plain_dot(b, b)))) return 0;
  return detail::range_exponent_of(A, b);
}

// An upper bound on the exact ||b - A x|| from `computed`, its value in double-double
// (operators.hpp): the sum of squares in double-double and its square root rounded once
// each, within (1 + 2^-50) of the norm; squares below the subnormal range, at most 2^-1074
// each in two parts, add at most sqrt(2 N) 2^-537.
double true_residual_bound(double computed, std::size_t N) {
  return computed * (1 + 0x1p-50) + std::sqrt(2.0 * static_cast<double>(N)) * 0x1p-537;
}

// The certificate: a run that says "converged" has a finite true residual whose bound is
// within tau. The recursive residual can meet tau while the true one does not (rounding in
// the recurrence, approximate dot products, tau below the attainable accuracy).
void confirm(CgResult& res, std::size_t N) {
  if (res.status != SolverStatus::converged) return;
  const double bound = true_residual_bound(res.true_residual, N);
  if (bound <= res.tolerance_used) return;  // false for a NaN or infinite residual
  char why[160];
  std::snprintf(why, sizeof why, "the recursive residual met tau = %.3e, the true residual %.3e did not",
                res.tolerance_used, res.true_residual);
  res.stop_reason = why;
  res.status = SolverStatus::unconfirmed;
}

// D^-1 for Jacobi (else an empty View); refuses, on every process, a diagonal entry that is
// not positive: an SPD matrix has a_ii = e_i^T A e_i > 0, so a zero (an empty row, a row
// without its diagonal entry), a negative or a NaN entry is no input for CG. An operator
// that does not know its diagonal (a FunctionOperator without one) skips the test, and
// refuses Jacobi.
Vector checked_diagonal(const SolverSpace& A, bool jacobi) {
  Vector d = A.diagonal();
  if (d.extent(0) != A.size()) {
    agree(A, "ebla::cg", jacobi ? "Jacobi needs the diagonal of A, which its operator does not give" : "");
    return Vector();
  }
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  std::string problem;
  for (std::size_t i = 0; i < h.extent(0) && problem.empty(); ++i) {
    if (!(h(i) > 0) || !std::isfinite(h(i)))
      problem = "diagonal entry " + std::to_string(i) + " of A is " + number_text(h(i)) +
                ": A is not symmetric positive definite";
    else if (jacobi && !std::isfinite(1 / h(i)))
      problem = "Jacobi preconditioner: diagonal entry " + std::to_string(i) + " is " + number_text(h(i)) +
                ", whose inverse overflows";
    else
      h(i) = 1 / h(i);
  }
  agree(A, "ebla::cg", problem);
  if (!jacobi) return Vector();
  Kokkos::deep_copy(d, h);
  return d;
}

// CG on the system scaled by 2^-e (range_exponent): b and x0 times 2^-e, an absolute tau
// too, and the results scaled back (exactly, but for overflow or underflow of the
// reported values). The dot records keep the scaled system's values.
CgResult scaled_cg(const SolverSpace& A, ConstVector b, ConstVector x0, ConstVector dinv, const DotPolicy& dots,
                   const CgOptions& o, int e) {
  CgOptions scaled = o;
  if (o.norm == Norm::absolute) scaled.tolerance = std::ldexp(o.tolerance, -e);
  scaled.absolute_tolerance = std::ldexp(o.absolute_tolerance, -e);
  if (o.progress) scaled.progress = [&](int k, double r) { o.progress(k, std::ldexp(r, e)); };
  if (o.on_iterate) {
    Vector unscaled("ebla::cg 2^e x", A.size());
    scaled.on_iterate = [&o, unscaled, e](int k, ConstVector x) {
      detail::times_power_of_two(x, e, unscaled);
      o.on_iterate(k, unscaled);
    };
  }
  CgResult res = iterate(A, times_power_of_two(b, -e, "ebla::cg 2^-e b"), times_power_of_two(x0, -e, "ebla::cg 2^-e x0"),
                         dinv, dots, scaled);
  confirm(res, A.global_size());
  const Vector x = res.x;
  detail::times_power_of_two(x, e, x);
  for (double* v : {&res.b_norm, &res.tolerance_used, &res.initial_residual, &res.recursive_residual,
                    &res.true_residual})
    *v = std::ldexp(*v, e);
  for (CgIteration& it : res.history) it.residual = std::ldexp(it.residual, e);
  if (res.status == SolverStatus::converged && !A.all(detail::finite_vector(x))) {
    res.status = SolverStatus::unconfirmed;
    res.stop_reason = "the solution of the scaled system overflows when scaled back by 2^" + std::to_string(e);
  }
  res.events.insert(res.events.begin(),
                    SolverEvent{0, "b scaled by 2^" + std::to_string(-e) + ": ||b||^2 is outside double's range; "
                                       "the dot records are the scaled system's"});
  return res;
}

// ---- preconditioners ------------------------------------------------------------------------

// The preconditioner built from the operator's matrix (a csr operator's, or the stencil's
// built once): one of block-Jacobi, SGS and IC(0), or none.
struct MatrixPreconditioner {
  BlockJacobi blocks;
  SymmetricGaussSeidel sgs;
  IncompleteCholesky ic0;
};

MatrixPreconditioner matrix_preconditioner(const SolverSpace& A, const CgOptions& o) {
  MatrixPreconditioner m;
  if (!from_matrix(o.pc)) return m;
  const RowsOf rows = A.rows();
  const std::string function = std::string("ebla::cg: ") + pc_title(o.pc);
  const CsrMatrix matrix =
      rows.kind == RowsOf::Kind::stencil ? hpccg_rows(rows.nx, rows.ny, rows.nz, 0, rows.nz) : detail::binary64_matrix(rows);
  if (o.pc == PcKind::block_jacobi) m.blocks = BlockJacobi(matrix, o.pc_block_size, function, o.pc_storage);
  if (o.pc == PcKind::sgs) m.sgs = SymmetricGaussSeidel(matrix, function);
  if (o.pc == PcKind::ic0) m.ic0 = IncompleteCholesky(matrix, ic0_max_restarts, function);
  return m;
}

// What the run's preconditioner was, its blocks, colours or levels and shift, and the bytes
// it stores.
void describe_preconditioner(CgResult& res, const CgOptions& o, const MatrixPreconditioner& m, std::size_t N) {
  if (o.jacobi) {
    res.pc = to_string(PcKind::jacobi);
    res.pc_blocks = N;
    res.pc_bytes = 8.0 * static_cast<double>(N);
  } else if (o.pc == PcKind::block_jacobi) {
    res.pc = to_string(PcKind::block_jacobi);
    res.pc_blocks = m.blocks.blocks();
    res.pc_bytes = m.blocks.bytes();
    res.pc_binary64_bytes = m.blocks.binary64_bytes();
    for (int s = 0; s < 3; ++s) res.pc_blocks_in[s] = m.blocks.blocks_in()[s];
    res.pc_delta = m.blocks.delta();
  } else if (o.pc == PcKind::sgs) {
    res.pc = to_string(PcKind::sgs);
    res.pc_colours = m.sgs.colours();
    res.pc_bytes = m.sgs.bytes();
  } else if (o.pc == PcKind::ic0) {
    res.pc = to_string(PcKind::ic0);
    res.pc_levels = m.ic0.levels();
    res.pc_shift = m.ic0.shift();
    res.pc_restarts = m.ic0.restarts();
    res.pc_bytes = m.ic0.bytes();
  } else if (o.preconditioner) {
    res.pc = "function";
  }
}

}  // namespace

CgResult cg(const SolverSpace& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& given) {
  CgOptions o = given;
  o.jacobi = given.jacobi || given.pc == PcKind::jacobi;  // one flag for Jacobi from here on
  agree(A, "ebla::cg", problem_of(A, b, x0, o));
  const Vector dinv = checked_diagonal(A, o.jacobi);
  const MatrixPreconditioner m = matrix_preconditioner(A, o);
  if (o.pc == PcKind::block_jacobi) o.preconditioner = [&m](ConstVector r, Vector z) { m.blocks.apply(r, z); };
  if (o.pc == PcKind::sgs) o.preconditioner = [&m](ConstVector r, Vector z) { m.sgs.apply(r, z); };
  if (o.pc == PcKind::ic0) o.preconditioner = [&m](ConstVector r, Vector z) { m.ic0.apply(r, z); };
  const int e = range_exponent(A, b);
  CgResult res;
  if (e != 0) {
    res = scaled_cg(A, b, x0, dinv, dots, o, e);
  } else {
    res = iterate(A, b, x0, dinv, dots, o);
    confirm(res, A.global_size());
  }
  describe_preconditioner(res, o, m, A.global_size());
  return res;
}

CgResult cg(const CsrOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o) {
  return cg(LocalSpace<CsrOperator>(A), b, x0, dots, o);
}
CgResult cg(const StencilOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o) {
  return cg(LocalSpace<StencilOperator>(A), b, x0, dots, o);
}
CgResult cg(const DenseOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o) {
  return cg(LocalSpace<DenseOperator>(A), b, x0, dots, o);
}
CgResult cg(const FunctionOperator& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& o) {
  return cg(LocalSpace<FunctionOperator>(A), b, x0, dots, o);
}

}  // namespace ebla
