// CG with p, q and r stored in a narrow format (storage_rule.hpp): Algorithm 4.1 of seed 002
// in the passes of cg_steps.hpp, with the residual gap bounded and closed by replacement.
#include "cg_stored.hpp"

#include "cg_steps.hpp"

#include <ebla/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace ebla {

// p in binary32: no gap, and measured no extra iterations (docs/solvers.md); q and r stay in
// binary64, since the replacements a narrow r needs cost more iterations than its bytes save.
StorageFormats automatic_storage() { return {Storage::binary32, Storage::binary64}; }

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
  double p_max = 0, q_max = 0, r_max = 0, z_max = 0;
  double rr = 0, c = 0;  // r^T r and c = r^T z
  double gap = 0;        // G_k
};

// The bytes each pass reads and writes (model: every vector once per pass, the matrix once
// per product, scalars and the tiles' sums not counted).
struct Traffic {
  double n, matrix, dinv;
  double apply(const Krylov& v) const { return matrix + v.p.bytes() + v.q.bytes(); }
  double update(const Krylov& v) const { return v.p.bytes() + v.q.bytes() + 4 * 8 * n / 2 + 2 * v.r.bytes() + dinv; }
  double direction(const Krylov& v) const { return v.r.bytes() + dinv + 2 * v.p.bytes(); }
  double replace(const Krylov& v) const { return 2 * (matrix + 2 * 8 * n + dinv) + v.r.bytes(); }
};

// Bytes of a value of A as the passes read it.

class StoredCg {
public:
  StoredCg(const SolverSpace& A, ConstVector b, ConstVector dinv, const CgOptions& o, CgResult& res)
      : A_(A), rows_(narrowed(A.rows())), a_norm_(infinity_norm_bound(rows_)), b_(b), dinv_(dinv), o_(o), res_(res), n_(A.size()),
        traffic_{static_cast<double>(A.size()), matrix_bytes(rows_), dinv.extent(0) > 0 ? 8.0 * A.size() : 0.0} {
    if (rows_.kind == RowsOf::Kind::csr) {
      res_.nonzero_bytes = value_bytes(rows_) + sizeof(int);
      if (value_bytes(rows_) < 8)
        event(0, std::string("A's values are exact in ") + (rows_.values16.extent(0) ? "bfloat16" : "binary32") +
                     ": the passes read that copy (the binary64 matrix stays for the certificate)");
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
    StoredVector p = make_stored_vector(formats.p, n_, "ebla::cg p");
    if (v_.p.n) {
      Vector w("ebla::cg p (binary64)", n_);
      load(v_.p, w);
      v_.p_max = store(p, w).amax;
    }
    v_.p = std::move(p);
    v_.q = make_stored_vector(formats.r, n_, "ebla::cg q");
    v_.r = make_stored_vector(formats.r, n_, "ebla::cg r");
    storage_ = formats;
    replace(x);
  }

  CgResult& run(Vector x, double tau, std::chrono::steady_clock::time_point loop_start);

private:
  void event(int k, std::string what) { res_.events.push_back(SolverEvent{k, std::move(what)}); }
  bool fall_back(int k, Vector x, const std::string& why) {
    if (storage_ == StorageFormats{}) return false;
    event(k, why + ": p, q and r stored in binary64 from here, r replaced");
    switch_to(StorageFormats{}, x);
    ++res_.replacements;
    bytes_ += traffic_.replace(v_);
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
  double bytes_ = 0;  // of the iteration under way

public:
  bool certified_ = false;  // res_.true_residual holds ||b - A x|| of the final x
};

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
    if (!replaced && (v_.gap > o_.storage.gap_ratio * rnorm || rnorm <= tau)) {  // close the gap
      event(k, "r replaced by b - A x: gap " + sci(v_.gap) + " > " + sci(o_.storage.gap_ratio) + " ||r|| = " + sci(rnorm));
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
    const StepSums up = update_stored(it.alpha, v_.p, v_.q, x, v_.r, dinv_, v_.q_max, v_.r_max);  // lines 8-10
    // G_(k+1) = G_k + |alpha| ||q - q~|| + ||r - r~|| (each measured; 2^-40 for their rounding)
    v_.gap += (std::fabs(it.alpha) * std::sqrt(aq.err2) + std::sqrt(up.err2)) * (1 + 0x1p-40);
    v_.rr = up.dot;
    v_.r_max = up.amax;
    v_.z_max = up.zmax;
    bad_ = up.bad;
    it.rr = pass_record(up.abs_dot, up.abs_dot, N);
    it.beta = up.abs_dot / v_.c;                                     // line 11
    v_.c = up.abs_dot;
    const StepSums dp = direction_stored(it.beta, v_.r, dinv_, v_.p, v_.z_max, v_.p_max);  // line 12
    v_.p_max = dp.amax;
    bad_ = bad_ || dp.bad;
    it.residual = norm_of_squares(v_.rr, N);
    it.gap = v_.gap;
    it.bytes = bytes_ + traffic_.apply(v_) + traffic_.update(v_) + traffic_.direction(v_);
    res_.bytes_moved += it.bytes;
    bytes_ = 0;
    res_.history.push_back(std::move(it));
    ++k;                                                             // line 13
    replaced = false;
    if (res_.history.back().residual < best) {
      best = res_.history.back().residual;
      best_k = k;
    } else if (o_.storage.kind == StoragePolicy::Kind::automatic && k - best_k >= std::max(o_.stall_window, best_k)) {
      fall_back(k, x, "||r|| has not fallen below " + sci(best) + " for " + std::to_string(k - best_k) + " iterations");
      best_k = k;
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
