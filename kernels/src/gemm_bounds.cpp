// The certified bounds of ebla::gemm (prepare(): the split and the normwise bound's rows; the
// overflow test; the normwise and entrywise bounds) and the papers' bounds as printed.
#include "gemm_internal.hpp"

#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/kernels/gemm_host.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ebla::gemm_detail {

// ---- the bounds -----------------------------------------------------------------------------

namespace {

/// The constant terms of bound (gemm.hpp): (pairs) N G (1 + g)(1 + c).
double underflow_term(const Prepared& P, double g) {
  return pairs_of(P.s.words) * P.model.steps * P.model.G * (1 + g) * (1 + P.c);
}

/// The pairs (v, w) of words whose products are computed (v + w < p), or neglected.
std::vector<std::pair<int, int>> word_pairs(int p, bool computed) {
  std::vector<std::pair<int, int>> out;
  for (int v = 0; v < p; ++v)
    for (int w = 0; w < p; ++w)
      if ((v + w < p) == computed) out.emplace_back(v, w);
  return out;
}

/// Whether the accumulation of entry (i, j) may overflow (a priori; gemm.hpp).
struct OverflowCheck {
  const LineNorms &a, &b;
  double g, NG, Fmax;
  bool operator()(std::size_t i, std::size_t j) const {
    return !fits(std::min(a.one[i] * b.max[j], a.max[i] * b.one[j]));
  }
  /// false if no entry can overflow (the largest norms fit): the entrywise test is not needed
  bool anywhere() const {
    auto top = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
    return !fits(std::min(top(a.one) * top(b.max), top(a.max) * top(b.one)));
  }
  bool fits(double magnitude) const { return (1 + g) * (magnitude + NG) < Fmax; }
};

OverflowCheck overflow_check(const Prepared& P) {
  return OverflowCheck{P.a.norms, P.b.norms, P.g, P.model.steps * P.model.G, P.model.Fmax};
}

}  // namespace

/// Splits A and B and sums the rows of the normwise bound (B first: A's rows need its side).
/// Throws as gemm.hpp says; a non-finite entry of A is named before one of B.
Prepared prepare(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config,
                 const char* function, const Keep& keep) {
  validate(config, function);
  if (A.extent(1) != B.extent(0))
    throw_invalid(function, "A is " + std::to_string(A.extent(0)) + " x " +
                                std::to_string(A.extent(1)) + " but B is " +
                                std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)));
  Prepared P;
  P.s = settled(config);
  P.m = A.extent(0);
  P.k = A.extent(1);
  P.n = B.extent(1);
  P.theta = theta_of(P.s, P.k);
  P.model = accumulation_model(P.s, P.k);
  P.g = bounds::growth(P.model.delta, P.model.depth);
  P.g_prob = P.g;
  const int p = P.s.words;
  const double pairs = pairs_of(p);
  if (P.model.unbiased && P.model.depth > 0) {
    // every product carries at most d roundings to nearest: Higham & Mary Theorem 3.1 /
    // seed 000 Theorem 3.9, a union over the k products of each of the pairs
    const double f = P.s.failure / (static_cast<double>(P.k) * pairs);
    const double u = P.model.delta;
    P.lambda = std::min(bounds::hm_lambda(f, u), bounds::vibea_lambda(f, u, P.model.depth));
    P.g_prob = std::min(P.g, bounds::gamma_tilde(P.model.depth, u, P.lambda) * (1 + 0x1p-48));
  }
  P.c = pairs > 1 ? bounds::gamma(pairs - 1, binary64_u) : 0.0;
  BadEntry bad_a, bad_b;
  const ColumnSums columns = split_columns(B, P.s, P.theta, keep, P.b, bad_b);
  RowBound bound;
  bound.terms = static_cast<double>(P.n) + static_cast<double>(P.k) * (p * p + 4);
  bound.acc = P.g + P.c * (1 + P.g);
  bound.under = underflow_term(P, P.g) * inflate(columns.mu_sum, static_cast<double>(P.n));
  split_rows(A, P.s, P.theta, keep, row_weights(columns, p, P.s.input.t), bound, P.a, P.row_bound, bad_a);
  if (bad_a.i >= 0) throw_not_finite(bad_a, "A", function);
  if (bad_b.i >= 0) throw_not_finite(bad_b, "B", function);
  P.norm_a = P.a.inf_norm;
  P.norm_b = P.b.inf_norm;
  return P;
}

/// Whether any entry's accumulation may overflow (the entrywise test, by chunks of rows, only
/// when the largest norms do not already rule it out).
bool may_overflow(const Prepared& P) {
  const OverflowCheck overflow = overflow_check(P);
  if (!overflow.anywhere()) return false;
  std::vector<char> hit(static_cast<std::size_t>(P.m), 0);
  for_each_row(P.m, P.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < P.n && !hit[static_cast<std::size_t>(i)]; ++j)
      hit[static_cast<std::size_t>(i)] = overflow(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
  });
  return std::find(hit.begin(), hit.end(), 1) != hit.end();
}

/// The certified normwise bound: max_i sum_j bound(i, j), from the rows prepare() summed.
double normwise(const Prepared& P) {
  if (may_overflow(P)) return inf;
  double worst = 0;
  for (double row : P.row_bound) worst = std::max(worst, row);
  // the absolute margins of the entrywise bounds, n of them per row
  return inflate(worst + 16 * static_cast<double>(P.n) * tiny, 2);
}

// ---- the entrywise bounds -------------------------------------------------------------------

namespace {

/// Writes row r of one side of a block of absolute values (k entries of a left block, n of a
/// right one).
using AbsRows = std::function<void(std::int64_t, double*)>;

/// A block of an absolute-value product: left (m x k) times right (k x n), both >= 0.
struct AbsBlock {
  AbsRows left, right;
};

/// |X| 2^shift.
AbsRows abs_rows(const ConstHostMatrix& X, int shift) {
  return [X, f = pow2(shift)](std::int64_t r, double* out) {
    const double* x = row_of(X, r);
    for (std::int64_t j = 0; j < static_cast<std::int64_t>(X.extent(1)); ++j) out[j] = std::fabs(x[j]) * f;
  };
}

/// The residuals as kept (already magnitudes).
AbsRows rho_rows(const Words& X) {
  return [rho = X.rho](std::int64_t r, double* out) {
    std::copy_n(row_of(rho, r), rho.extent(1), out);
  };
}

/// (|rho| if with_rho) + sum_w u^w |X^(w)|, enlarged to cover the rounding of its p + 1 terms.
AbsRows weighted_rows(const Words& X, int t, bool with_rho) {
  return [&X, t, with_rho](std::int64_t r, double* out) {
    const std::int64_t cols = X.w[0].extent(1);
    for (std::int64_t j = 0; j < cols; ++j) {
      double v = with_rho ? row_of(X.rho, r)[j] : 0.0;
      for (std::size_t w = 0; w < X.w.size(); ++w) v += std::fabs(row_of(X.w[w], r)[j]) * pow2(-static_cast<int>(w) * t);
      out[j] = v * (1 + 2 * (static_cast<double>(X.w.size()) + 2) * binary64_u);
    }
  };
}

/// |rho_x| Ytil + Xtil' |rho_y| + sum_{v+w>=p} u^(v+w) |X^(v)| |Y^(w)|: the blocks of R.
std::vector<AbsBlock> representation_blocks(const Prepared& P) {
  if (P.s.engine == GemmEngine::dgemm) return {};  // A and B themselves: R = 0
  const int t = P.s.input.t;
  std::vector<AbsBlock> blocks;
  blocks.push_back({rho_rows(P.a), weighted_rows(P.b, t, true)});
  blocks.push_back({weighted_rows(P.a, t, false), rho_rows(P.b)});
  for (const auto& [v, w] : word_pairs(P.s.words, false))
    blocks.push_back({abs_rows(P.a.w[static_cast<std::size_t>(v)], -(v + w) * t),
                      abs_rows(P.b.w[static_cast<std::size_t>(w)], 0)});
  return blocks;
}

/// u^(v+w) |X^(v)|, |Y^(w)| for the computed pairs: the blocks of W.
std::vector<AbsBlock> accumulation_blocks(const Prepared& P) {
  const int t = P.s.input.t;
  std::vector<AbsBlock> blocks;
  for (const auto& [v, w] : word_pairs(P.s.words, true))
    blocks.push_back({abs_rows(P.a.w[static_cast<std::size_t>(v)], -(v + w) * t),
                      abs_rows(P.b.w[static_cast<std::size_t>(w)], 0)});
  return blocks;
}

/// sum over the blocks of left * right (m x n), by one binary64 DGEMM on the blocks side by
/// side, enlarged to cover its rounding.
HostMatrix abs_product(const std::vector<AbsBlock>& blocks, std::int64_t m, std::int64_t k,
                       std::int64_t n) {
  const std::int64_t nb = static_cast<std::int64_t>(blocks.size()), K = k * nb;
  HostMatrix L = uninitialised("abs_left", m, K), R = uninitialised("abs_right", K, n);
  for_each_row(m, K, [&](std::int64_t i) {
    for (std::int64_t b = 0; b < nb; ++b) blocks[static_cast<std::size_t>(b)].left(i, L.data() + i * K + b * k);
  });
  for_each_row(K, n, [&](std::int64_t l) { blocks[static_cast<std::size_t>(l / k)].right(l % k, row_of(R, l)); });
  HostMatrix out = uninitialised("abs_product", m, n);
  host::dgemm_by_rows(m, n, K, L.data(), R.data(), out.data());
  for_each_row(m, n, [&](std::int64_t i) {
    double* o = row_of(out, i);
    for (std::int64_t j = 0; j < n; ++j) o[j] = inflate(o[j], static_cast<double>(K));
  });
  return out;
}

}  // namespace

/// Entrywise bound and probable_bound (gemm.hpp).
void componentwise(const Prepared& P, const HostMatrix& C, GemmResult& r) {
  const HostMatrix R = abs_product(representation_blocks(P), P.m, P.k, P.n);
  const HostMatrix W = abs_product(accumulation_blocks(P), P.m, P.k, P.n);
  const OverflowCheck overflow = overflow_check(P);
  r.bound = HostMatrix(Kokkos::view_alloc("bound", Kokkos::WithoutInitializing), P.m, P.n);
  r.probable_bound = HostMatrix(Kokkos::view_alloc("probable_bound", Kokkos::WithoutInitializing), P.m, P.n);
  for_each_row(P.m, P.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < P.n; ++j) {
      const int e = P.a.exps[static_cast<std::size_t>(i)] + P.b.exps[static_cast<std::size_t>(j)];
      auto entry = [&](double g) {
        const double core = R(i, j) + (g + P.c * (1 + g)) * W(i, j) + underflow_term(P, g);
        return inflate(std::ldexp(inflate(core, 4), -e) + tiny, 2);
      };
      const bool unbounded = !std::isfinite(C(i, j)) ||
                             overflow(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
      r.bound(i, j) = unbounded ? inf : entry(P.g);
      r.probable_bound(i, j) = unbounded ? inf : entry(P.g_prob);
    }
  });
}

// ---- the papers' bounds ---------------------------------------------------------------------

/// Seed 001 Theorem 3.1 (3.25) for p = 1, Theorem 4.1 (4.32) for p > 1, as printed (u and
/// g_min of the input format, U and G_min of the accumulation format: 2U and 2G_min for a unit
/// rounding toward zero, as section 2.1 says). NaN without scaling (the theorems assume it).
double paper_normwise(const Prepared& P) {
  if (!P.s.scaling) return std::nan("");
  const Format acc = accumulation_format(P.s);
  const bool rz = P.s.engine == GemmEngine::emulated && P.s.unit.rounding == Rounding::toward_zero;
  const bool ftz = P.s.engine == GemmEngine::emulated ? !P.s.unit.output_subnormals
                                                      : P.s.engine == GemmEngine::onednn_bf16;
  const double u = P.s.input.u(), gmin = P.s.input.gmin();
  const double U = (rz ? 2 : 1) * acc.u();
  const double Gmin = (rz ? 2 : 1) * (ftz ? acc.fmin() / 2 : acc.u() * acc.fmin());
  const double n = static_cast<double>(P.k), th = P.theta, p = P.s.words;
  double c;
  if (P.s.words == 1) {
    const double omega = gmin / th;  // (3.15)
    c = (2 * u + u * u + 4 * n * n * omega * (1 + u + omega)) * (1 + n * U) + n * U +
        4 * n * n * Gmin / (th * th);
  } else {
    c = (p + 1) * std::pow(u, p) + 4 * n * std::pow(u, p - 1) * gmin / th + (n + p * p) * U +
        2 * p * (p + 1) * n * n * Gmin / (th * th);
  }
  return c * P.norm_a * P.norm_b;
}

/// Whether every entry of A and B is in the input format (rounding it changes nothing).
bool in_input_format(const Prepared& P, const ConstHostMatrix& A, const ConstHostMatrix& B) {
  const auto exact = [&](const ConstHostMatrix& X) {
    for (std::size_t i = 0; i < X.extent(0); ++i)
      for (std::size_t j = 0; j < X.extent(1); ++j)
        if (round_to(X(i, j), P.s.input, Rounding::nearest_even) != X(i, j)) return false;
    return true;
  };
  return exact(A) && exact(B);
}

/// Seed 000 Theorems 3.8 (DBEA) and 3.10 (VIBEA): (2u + u^2 + zeta (1 + u)^2) |A||B|, zeta =
/// gamma_(k-1)(U) + gamma_q(U) + their product (gamma~ for VIBEA). For p > 1 the input term
/// 2u + u^2 becomes (p + 1) u^p. With A and B already in the input format (p = 1),
/// Theorems 3.7 and 3.9: zeta |A||B|, no representation term.
/// Correction (Theorem 3.8): the printed 2 u_low + u^2 has u^2 where its derivation,
/// |dA| <= u_low |A| and |dB| <= u_low |B|, gives u_low^2 (|dA||dB| <= u_low^2 |A||B|); the
/// input term here is 2u + u^2 with u the input format's unit roundoff (test_gemm's
/// ComponentwiseBoundsAreSeed000Theorems would fail on the printed u^2 of the given format).
/// Correction (Theorems 3.9, 3.10): VIBEA's lambda is the one that makes the theorem's failure
/// sum at most `failure` (bounds::tensor_core_lambda), per entry and for the whole product,
/// not the lambda of one gamma~.
/// As printed these are not bounds for units that round toward zero and truncate in alignment
/// (V100): test_gemm's PrintedDbeaFailsOnAV100ChainAndTheCertifiedBoundHolds exhibits a
/// violation. The certified bound (componentwise(), above) takes U_r = 2U and the truncation.
void paper_componentwise(const Prepared& P, const ConstHostMatrix& A, const ConstHostMatrix& B,
                         GemmResult& r) {
  const Format acc = accumulation_format(P.s);
  const double U = acc.u(), u = P.s.input.u(), n = static_cast<double>(P.k);
  const double b = P.s.engine == GemmEngine::emulated ? P.s.unit.block : 1;
  const double q = std::ceil(n / b);
  r.paper.inputs_exact = P.s.words == 1 && in_input_format(P, A, B);
  const double input = r.paper.inputs_exact ? 0.0
                       : P.s.words == 1     ? 2 * u + u * u
                                            : (P.s.words + 1) * std::pow(u, P.s.words);
  const double grow = r.paper.inputs_exact ? 1.0 : (1 + u) * (1 + u);
  auto zeta = [](double x, double y) { return x + y + x * y; };
  const double z_det = zeta(bounds::gamma(std::max(n - 1, 0.0), U), bounds::gamma(q, U));
  const auto z_prob = [&](double lambda) {
    return zeta(P.k > 1 ? bounds::gamma_tilde(n - 1, U, lambda) : 0, bounds::gamma_tilde(q, U, lambda));
  };
  const double entries = static_cast<double>(P.m) * static_cast<double>(P.n);
  r.paper.vibea_lambda = bounds::tensor_core_lambda(P.s.failure, U, U, n, b);
  r.paper.vibea_lambda_matrix = bounds::tensor_core_lambda(P.s.failure, U, U, n, b, std::max(entries, 1.0));
  const double z_entry = z_prob(r.paper.vibea_lambda), z_matrix = z_prob(r.paper.vibea_lambda_matrix);
  const HostMatrix AB = abs_product({{abs_rows(A, 0), abs_rows(B, 0)}}, P.m, P.k, P.n);
  const auto alloc = [&](const std::string& name) {  // a std::string: Kokkos takes a char pointer for memory
    return HostMatrix(Kokkos::view_alloc(name, Kokkos::WithoutInitializing), P.m, P.n);
  };
  r.paper.dbea = alloc("dbea");
  r.paper.vibea = alloc("vibea");
  r.paper.vibea_matrix = alloc("vibea_matrix");
  for_each_row(P.m, P.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < P.n; ++j) {
      r.paper.dbea(i, j) = (input + z_det * grow) * AB(i, j);
      r.paper.vibea(i, j) = (input + z_entry * grow) * AB(i, j);
      r.paper.vibea_matrix(i, j) = (input + z_matrix * grow) * AB(i, j);
    }
  });
}

}  // namespace ebla::gemm_detail
