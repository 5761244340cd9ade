// CG with p, q and r stored in a narrow format (storage_rule.hpp): Algorithm 4.1 of seed 002
// in the passes of cg_steps.hpp, with the residual gap bounded and closed by replacement.
#include "cg_stored.hpp"

#include "cg_steps.hpp"
#include "lanczos_condition.hpp"

#include <ebla/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace ebla {

// Everything in binary64 to start with: p goes to binary32 once kappa(T_k) has settled, q
// and r late (StoredCg::narrow_p, narrow_late; docs/solvers.md).
StorageFormats automatic_storage() { return {}; }

StoragePolicy storage_policy_by_name(const std::string& name, const char* function) {
  if (name == "auto") return StoragePolicy::automatic();
  const std::string known = " (auto, a format: binary64, binary32, bfloat16, binary16, block16, block8, or p=FORMAT,r=FORMAT)";
  auto format = [&](const std::string& f) {
    try {
      return storage_by_name(f, function);
    } catch (const InvalidArgument&) {
      throw_invalid(function, "unknown storage '" + name + "'" + known);
    }
  };
  const std::size_t comma = name.find(',');
  if (name.rfind("p=", 0) != 0 || comma == std::string::npos || name.compare(comma + 1, 2, "r=") != 0)
    return name.find('=') == std::string::npos ? StoragePolicy::of(format(name))
                                               : (throw_invalid(function, "unknown storage '" + name + "'" + known), StoragePolicy());
  return StoragePolicy::of(format(name.substr(2, comma - 2)), format(name.substr(comma + 3)));
}

std::string to_string(const StorageFormats& f) {
  return f.p == f.r ? std::string(to_string(f.p)) : std::string("p=") + to_string(f.p) + ",r=" + to_string(f.r);
}

std::string to_string(const StoragePolicy& p) {
  return p.kind == StoragePolicy::Kind::automatic ? "auto" : to_string(p.fixed);
}

namespace detail {

namespace {

// ||v|| from s~ = fl(v^T v), inflated by its rounding bound (Higham, eq. (3.5)).
double norm_of_squares(double s, std::size_t n) { return std::sqrt(s + exact_squares_record(s, n).bound); }

// The record of a dot product summed in binary64 inside a pass: |value - x^T y| <= gamma_n
// |x|^T |y| (Higham, eq. (3.5)); abs_sum is |x|^T |y| as computed.
DotRecord pass_record(double value, double abs_sum, std::size_t n) {
  DotRecord d = exact_squares_record(abs_sum, n);
  d.value = value;
  return d;
}

std::string sci(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3e", v);
  return s;
}

// The vectors of the iteration and the maxima the next pass scales by.
struct Krylov {
  StoredVector p, q, r;
  // The binary64 allocations whose memory a binary32 p, q or r lives in (see in_memory_of):
  // narrowing moves the words into memory the solve already holds instead of allocating.
  Kokkos::View<double*> p_home, q_home, r_home;
  double p_max = 0, q_max = 0, r_max = 0, z_max = 0;
  double rr = 0, c = 0;  // r^T r and c = r^T z
  double gap = 0;        // G_k
};

// A binary32 vector of home.extent(0) values whose words lie in the first half of `home`, a
// binary64 allocation whose values are no longer needed (the caller keeps home alive).
// Narrowing this way allocates nothing: the peak memory of the solve stays that of its
// binary64 start, and no fresh pages are touched.
StoredVector in_memory_of(const Kokkos::View<double*>& home) {
  StoredVector v;
  v.format = Storage::binary32;
  v.n = home.extent(0);
  v.f32 = Kokkos::View<float*>(reinterpret_cast<float*>(home.data()), v.n);
  return v;
}

// A binary64 vector over the allocation `home` (its values are overwritten before use).
StoredVector binary64_in(const Kokkos::View<double*>& home) {
  StoredVector v;
  v.format = Storage::binary64;
  v.n = home.extent(0);
  v.f64 = home;
  return v;
}

// The bytes each pass reads and writes (model: every vector once per pass, the matrix once
// per product, scalars and the tiles' sums not counted).
struct Traffic {
  double n, matrix, dinv;
  double apply(const Krylov& v) const { return matrix + v.p.bytes() + v.q.bytes(); }
  double update(const Krylov& v) const { return v.q.bytes() + 2 * v.r.bytes() + dinv; }
  // with x += alpha p (moves_x) where it follows an update: x read and written in binary64
  double direction(const Krylov& v, bool moves_x = false) const {
    return v.r.bytes() + dinv + 2 * v.p.bytes() + (moves_x ? 2 * 8 * n : 0);
  }
  double replace(const Krylov& v) const { return 2 * (matrix + 2 * 8 * n + dinv) + v.r.bytes(); }
};

// Bytes of a value of A as the passes read it.

class StoredCg {
public:
  StoredCg(const SolverSpace& A, ConstVector b, ConstVector dinv, const CgOptions& o, CgResult& res)
      : A_(A), rows_(narrowed(A.rows())), a_norm_(infinity_norm_bound(rows_)), b_(b), dinv_(dinv), o_(o), res_(res), n_(A.size()),
        traffic_{static_cast<double>(A.size()), matrix_bytes(rows_), dinv.extent(0) > 0 ? 8.0 * A.size() : 0.0} {
    if (rows_.kind == RowsOf::Kind::csr) {
      res_.nonzero_bytes = value_bytes(rows_) + column_bytes(rows_);
      const bool held = rows_.A.values.extent(0) != rows_.nonzeros();  // CsrOperator::narrowest
      const char* kept = held ? ": the operator holds them so (no copy in the order of the rows' entries), for the "
                                "passes and the certificate"
                              : ": the passes read that copy (the binary64 matrix stays for the certificate)";
      if (value_bytes(rows_) < 8)
        event(0, std::string("A's values are exact in ") + (rows_.values16.extent(0) ? "bfloat16" : "binary32") + kept);
      else
        event(0, std::string("A's values are not all exact in bfloat16 or binary32: the passes read them in binary64") +
                     (rows_.values64.extent(0) ? std::string(", in slices of eight rows") + kept : std::string()));
      if (column_bytes(rows_) < sizeof(int))
        event(0, std::string("A's columns lie within 32767 of the diagonal: the passes read them as 16-bit offsets "
                             "from the row") +
                     (rows_.slices.extent(0) ? ", eight rows at a time (slices of eight rows)" : ""));
    }
  }

  // r = b - A x stored (and its sums); G starts at ||r - r~||.
  void replace(Vector x) {
    const StepSums s = replace_stored(rows_, b_, x, v_.r, dinv_);
    v_.rr = s.dot;
    v_.c = s.abs_dot;
    v_.r_max = s.amax;
    v_.z_max = s.zmax;
    v_.gap = std::sqrt(s.err2) * (1 + 0x1p-40);
    bad_ = bad_ || s.bad;
  }

  // Stores the vectors in `formats` from now on: p converted (exactly where the new format
  // holds it; binary64 always does), r replaced, q allocated anew.
  void switch_to(StorageFormats formats, Vector x) {
    v_.q = v_.r = StoredVector();  // q and r are written anew (the next product, replace): freed first
    v_.q_home = v_.r_home = Kokkos::View<double*>();
    StoredVector p = make_stored_vector(formats.p, n_, "ebla::cg p");
    if (v_.p.n) {
      Vector w("ebla::cg p (binary64)", n_);
      load(v_.p, w);
      v_.p_max = store(p, w).amax;
    }
    v_.p = std::move(p);
    v_.p_home = Kokkos::View<double*>();
    v_.q = make_stored_vector(formats.r, n_, "ebla::cg q");
    v_.r = make_stored_vector(formats.r, n_, "ebla::cg r");
    storage_ = formats;
    replace(x);
  }

  CgResult& run(Vector x, double tau, std::chrono::steady_clock::time_point loop_start);

  // p in binary32 from now on, rounded as it is (no gap: storage_rule.hpp). q is dead until
  // the next product: p's binary32 words go into q's memory, and q moves into p's.
  void narrow_p_now() {
    const Kokkos::View<double*> p64 = v_.p.f64, q64 = v_.q.f64;  // both binary64 here (narrow_p)
    StoredVector p = in_memory_of(q64);
    v_.p_max = store(p, p64).amax;
    v_.p = std::move(p);
    v_.p_home = q64;
    v_.q = binary64_in(p64);
    v_.q_home = Kokkos::View<double*>();
    storage_.p = Storage::binary32;
    bytes_ += 8.0 * n_ + v_.p.bytes();
  }

  // q and r in binary32 from now on: r~ rounded as it is (no replacement), G grown by
  // ||r - r~||. q is dead until the next product: r's binary32 words go into q's memory,
  // and q's into r's.
  void narrow_r() {
    const Kokkos::View<double*> r64 = v_.r.f64, q64 = v_.q.f64;  // both binary64 here (narrow_late)
    StoredVector r = in_memory_of(q64);
    const StoreSums s = store(r, r64);
    v_.r = std::move(r);
    v_.r_home = q64;
    v_.r_max = s.amax;
    v_.q = in_memory_of(r64);
    v_.q_home = r64;
    v_.gap += std::sqrt(s.err2) * (1 + 0x1p-40);
    storage_.r = Storage::binary32;
    bytes_ += 8.0 * n_ + v_.r.bytes();
  }

private:
  bool narrow_p();
  bool slow() const;
  bool narrow_late(double tau, double& predicted);
  void event(int k, std::string what) { res_.events.push_back(SolverEvent{k, std::move(what)}); }
  // p, q and r in binary64 for the rest of the solve; false if they were already
  bool fall_back(int k, Vector x, const std::string& why) {
    pinned_ = true;
    if (storage_ == StorageFormats{}) return false;
    event(k, why + ": p, q and r stored in binary64 from here, r replaced, p restarted");
    switch_to(StorageFormats{}, x);
    // p = z of the replaced r: the old p was conjugate to a recursive residual that b - A x
    // may be far from (a failed certificate), and alpha = r^T z / p^T A p from it anything
    v_.p_max = direction_stored(0, v_.r, dinv_, v_.p, v_.z_max, 0).amax;
    ++res_.replacements;
    bytes_ += traffic_.replace(v_) + traffic_.direction(v_);
    return true;
  }

  const SolverSpace& A_;
  RowsOf rows_;
  double a_norm_;  // a bound on ||A||_inf
  ConstVector b_, dinv_;
  const CgOptions& o_;
  CgResult& res_;
  std::size_t n_;
  Traffic traffic_;
  Krylov v_;
  StorageFormats storage_;
  bool bad_ = false;
  bool late_ = false;    // q and r went to binary32 late (automatic)
  bool pinned_ = false;  // binary64 from here: the stall safeguard or the certificate said so
  LanczosCondition kappa_;  // kappa(T_k), from the alphas and betas so far
  double last_beta_ = 0;
  double bytes_ = 0;  // of the iteration under way

public:
  bool certified_ = false;  // res_.true_residual holds ||b - A x|| of the final x
};

// automatic: whether p goes to binary32 now. Rounding p changes only the search direction
// (no gap), but while CG still finds the ends of the spectrum (kappa(T_k) climbing) the
// directions' errors are paid for later: on HPCCG 10^3 to 16^3 a binary32 p from the start
// cost 2 iterations in 16 to 26. Once kappa(T_k) has settled (kappa(T_k) <= settle
// kappa(T_(k-w)), w = max(10, k/4), the settling of the dot-product rule) it cost none.
bool StoredCg::narrow_p() {
  constexpr double settle = 1.05;
  return o_.storage.kind == StoragePolicy::Kind::automatic && !pinned_ && storage_ == StorageFormats{} &&
         !slow() && kappa_.growth() <= settle;
}

// Whether CG has taken more than n / 8 iterations: a solve that needs a sizeable fraction of
// n iterations is where rounding errors delay CG's convergence (the Krylov basis loses its
// orthogonality; Greenbaum and Strakos, SIAM J. Matrix Anal. Appl. 13 (1992)), and there
// every rounding the storage adds costs iterations (a diagonal matrix with 400 eigenvalues
// from 1 to 1e4: p narrowed at iteration 317 and q, r at 407 took 824 iterations against
// 760). Nothing is narrowed from then on.
bool StoredCg::slow() const { return 8.0 * static_cast<double>(res_.history.size()) > static_cast<double>(A_.global_size()); }

// Late narrowing (automatic): whether q and r can go to binary32 now and stay there until
// ||r|| reaches tau without a replacement. From iteration j on, storing q_j and r_(j+1) in
// binary32 adds |alpha_j| ||q_j - q~_j|| + ||r_(j+1) - r~_(j+1)|| <= u (|alpha_j| ||q_j|| +
// ||r_(j+1)||) to G (u = 2^-24; the scale keeps the values normal), and since alpha_j q_j =
// r_j - r_(j+1), at most u (||r_j|| + 2 ||r_(j+1)||) <= 3 u max(||r_j||, ||r_(j+1)||). If
// ||r|| keeps falling at its rate rho over the last `window` iterations, the sum to the end
// is below 3 u ||r_k|| / (1 - rho); `spread` allows for CG's residual rising on the way
// (the norm is not monotone), and the sum is capped by the iterations left at that rate
// plus `spread`. The prediction decides only when to switch: G stays measured, and a gap
// above late_limit tau is still closed by a replacement.
bool StoredCg::narrow_late(double tau, double& predicted) {
  constexpr int window = 8;
  constexpr double u = 0x1p-24, spread = 4;
  const auto& h = res_.history;
  // after p (so once kappa(T_k) has settled)
  if (late_ || pinned_ || slow() || o_.storage.kind != StoragePolicy::Kind::automatic || !(o_.storage.late_share > 0) ||
      !(storage_ == StorageFormats{Storage::binary32, Storage::binary64}) || h.size() <= window)
    return false;
  const double now = h.back().residual, before = h[h.size() - 1 - window].residual;
  const double rho = std::pow(now / before, 1.0 / window);  // the recent rate of convergence
  if (!(rho < 1) || !(now > tau)) return false;
  const double left = std::log(now / tau) / -std::log(rho);  // iterations to tau at that rate
  predicted = 3 * u * now * std::min(spread / (1 - rho), left + spread) + u * now;  // + r's own rounding now
  return predicted <= o_.storage.late_share * tau;
}

CgResult& StoredCg::run(Vector x, double tau, std::chrono::steady_clock::time_point loop_start) {
  const std::size_t N = A_.global_size();
  v_.p_max = direction_stored(0, v_.r, dinv_, v_.p, v_.z_max, 0).amax;  // p_0 = z_0
  res_.initial_residual = norm_of_squares(v_.rr, N);
  res_.rr0 = pass_record(v_.c, v_.c, N);
  double best = res_.initial_residual;
  int best_k = 0, k = 0;
  bool replaced = false;  // in this iteration already
  for (;;) {
    const double rnorm = norm_of_squares(v_.rr, N);
    res_.recursive_residual = rnorm;
    if (bad_) {
      res_.breakdown = "a stored vector has a NaN or infinite entry";
      res_.status = SolverStatus::breakdown;
      res_.stop_reason = "breakdown: " + res_.breakdown;
      break;
    }
    if (rnorm + v_.gap <= tau) {                     // line 5, with the gap: ||b - A x|| <= tau
      const double t = A_.residual_norm(x, b_);   // the certificate, once: kept for the result
      if (t * (1 + 0x1p-50) <= tau || !fall_back(k, x, "certificate: ||b - A x|| = " + sci(t) + " > tau = " + sci(tau))) {
        res_.status = SolverStatus::converged;       // if t > tau, confirm() makes it unconfirmed
        res_.stop_reason = "||r|| + gap <= tau";
        res_.true_residual = t;
        certified_ = true;
        break;
      }
      replaced = true;
      continue;
    }
    // the gap allowed: gap_ratio ||r||, or after late narrowing at least late_limit tau
    const double allowed = late_ ? std::max(o_.storage.gap_ratio * rnorm, o_.storage.late_limit * tau)
                                 : o_.storage.gap_ratio * rnorm;
    if (!replaced && (v_.gap > allowed || rnorm <= tau)) {  // close the gap
      if (v_.gap > allowed)
        event(k, "r replaced by b - A x: gap " + sci(v_.gap) + " > " + sci(allowed) +
                     (late_ ? " (max(" + sci(o_.storage.gap_ratio) + " ||r||, " + sci(o_.storage.late_limit) + " tau))"
                            : " = " + sci(o_.storage.gap_ratio) + " ||r||"));
      else
        event(k, "r replaced by b - A x: ||r|| = " + sci(rnorm) + " <= tau but ||r|| + gap " + sci(v_.gap) + " > tau");
      replace(x);
      ++res_.replacements;
      bytes_ += traffic_.replace(v_);
      replaced = true;
      continue;
    }
    if (replaced && rnorm <= tau && fall_back(k, x, "||r|| <= tau but the gap " + sci(v_.gap) + " of " +
                                                        to_string(storage_) + " storage is not below tau - ||r||"))
      continue;
    if (k >= o_.max_iterations) {
      res_.status = SolverStatus::max_iterations;
      res_.stop_reason = "maximum iterations reached";
      break;
    }
    CgIteration it;
    it.replaced = replaced;
    it.storage = storage_;
    const StepSums aq = apply_stored(rows_, a_norm_, v_.p, v_.q, v_.p_max, storage_.r != Storage::binary64);  // q_k = A p_k (line 6)
    v_.q_max = aq.amax;
    it.pq = pass_record(aq.dot, aq.abs_dot, N);
    if (!(aq.dot > 0) || !std::isfinite(aq.dot) || aq.bad || !(v_.c > 0) || !std::isfinite(v_.c)) {
      res_.breakdown = !(aq.dot > 0) || !std::isfinite(aq.dot) ? "p^T A p = " + std::to_string(aq.dot) + " (not positive)"
                                                                : "r^T z = " + std::to_string(v_.c) + " while ||r|| > tau";
      res_.status = SolverStatus::breakdown;
      res_.stop_reason = "breakdown: " + res_.breakdown;
      break;
    }
    it.alpha = v_.c / aq.dot;                                        // line 7
    const StepSums up = update_stored(it.alpha, v_.q, v_.r, dinv_, v_.q_max, v_.r_max);  // lines 9-10
    // G_(k+1) = G_k + |alpha| ||q - q~|| + ||r - r~|| (each measured; 2^-40 for their rounding)
    v_.gap += (std::fabs(it.alpha) * std::sqrt(aq.err2) + std::sqrt(up.err2)) * (1 + 0x1p-40);
    v_.rr = up.dot;
    v_.r_max = up.amax;
    v_.z_max = up.zmax;
    bad_ = up.bad;
    it.rr = pass_record(up.abs_dot, up.abs_dot, N);
    it.beta = up.abs_dot / v_.c;                                     // line 11
    kappa_.add(it.alpha, last_beta_);
    last_beta_ = it.beta;
    v_.c = up.abs_dot;
    // line 8 (x += alpha p, in this pass: p is read here anyway) and line 12
    const StepSums dp = direction_stored(it.beta, v_.r, dinv_, v_.p, v_.z_max, v_.p_max, it.alpha, x);
    v_.p_max = dp.amax;
    bad_ = bad_ || dp.bad;
    it.residual = norm_of_squares(v_.rr, N);
    it.gap = v_.gap;
    it.bytes = bytes_ + traffic_.apply(v_) + traffic_.update(v_) + traffic_.direction(v_, true);
    res_.bytes_moved += it.bytes;
    bytes_ = 0;
    res_.history.push_back(std::move(it));
    ++k;                                                             // line 13
    replaced = false;
    if (res_.history.back().residual < best) {
      best = res_.history.back().residual;
      best_k = k;
    } else if (o_.storage.kind == StoragePolicy::Kind::automatic && k - best_k >= std::max(o_.stall_window, best_k)) {
      const std::string why = "||r|| has not fallen below " + sci(best) + " for " + std::to_string(k - best_k) + " iterations";
      const bool was_pinned = pinned_;
      if (!fall_back(k, x, why) && !was_pinned) event(k, why + ": p, q and r stay in binary64 from here");
      best_k = k;
    }
    int converged = 0;  // the finite-precision regime (lanczos_condition.hpp): binary64 from here
    if (o_.storage.kind == StoragePolicy::Kind::automatic && !pinned_ &&
        kappa_.finite_precision_regime(last_beta_, converged)) {
      const std::string why = LanczosCondition::regime_reason(converged, k);
      if (!fall_back(k, x, why)) event(k, why + ": p, q and r stay in binary64 from here");
    }
    if (narrow_p()) {  // p to binary32 for the rest of the solve
      event(k, "p stored in binary32 from here: kappa(T_k) = " + sci(kappa_.estimate()) + " has settled");
      narrow_p_now();
    }
    double predicted = 0;
    if (narrow_late(tau, predicted)) {  // q and r to binary32 for the rest of the solve
      event(k, "q and r stored in binary32 from here, r rounded: their gap to the end, predicted " + sci(predicted) +
                   ", is below " + sci(o_.storage.late_share) + " tau");
      narrow_r();
      late_ = true;
    }
    if (o_.progress) o_.progress(k, res_.history.back().residual);
    if (o_.on_iterate) o_.on_iterate(k, x);
  }
  res_.iterations = k;
  res_.iteration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  return res_;
}

}  // namespace

std::string storage_problem(const SolverSpace& A, const CgOptions& o) {
  if (!o.storage.narrow()) return {};
  const std::string what = "storage " + to_string(o.storage);
  if (A.rows().kind == RowsOf::Kind::none)
    return what + " needs an operator that reads stored vectors: csr or stencil, on one process";
  if (o.stop != StopTest::exact_norm) return what + " needs the exact_norm stopping test";
  if (from_matrix(o.pc))
    return what + " preconditions with Jacobi only: " + pc_title(o.pc) + " needs binary64 storage";
  if (o.preconditioner) return what + " preconditions with Jacobi only, not with a preconditioner function";
  if (o.record_levels) return what + " computes its dot products in the passes: no ladder maps to record";
  if (!(o.storage.gap_ratio > 0 && o.storage.gap_ratio < 1))
    return "storage gap_ratio " + std::to_string(o.storage.gap_ratio) + " must lie in (0, 1)";
  if (!(o.storage.late_share >= 0 && o.storage.late_share < 1))
    return "storage late_share " + std::to_string(o.storage.late_share) + " must lie in [0, 1)";
  if (!(o.storage.late_limit > 0 && o.storage.late_limit < 1))
    return "storage late_limit " + std::to_string(o.storage.late_limit) + " must lie in (0, 1)";
  return {};
}

CgResult stored_cg(const SolverSpace& A, ConstVector b, ConstVector x0, ConstVector dinv, const CgOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = A.size(), N = A.global_size();
  CgResult res;
  res.storage = to_string(o.storage);
  res.x = Vector("ebla::cg x", n);
  res.b_norm = norm_of_squares(A.sum(plain_dot(b, b)), N);
  res.tolerance_used = cg_tolerance(o, res.b_norm);
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  Kokkos::deep_copy(res.x, x0);
  if (res.b_norm == 0) {  // b = 0: x = 0 solves it exactly
    Kokkos::deep_copy(res.x, 0.0);
    res.status = SolverStatus::converged;
    res.stop_reason = "b = 0: x = 0";
    res.seconds = seconds();
    return res;
  }
  StoredCg cg(A, b, dinv, o, res);
  const bool automatic = o.storage.kind == StoragePolicy::Kind::automatic;
  cg.switch_to(automatic ? automatic_storage() : o.storage.fixed, res.x);  // r_0 = b - A x_0, stored
  cg.run(res.x, res.tolerance_used, std::chrono::steady_clock::now());
  if (!cg.certified_) res.true_residual = A.residual_norm(res.x, b);
  res.seconds = seconds();
  return res;
}

}  // namespace detail

}  // namespace ebla
