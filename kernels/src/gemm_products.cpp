// The products of ebla::gemm: each computed pair of words on its engine, added and unscaled
// into C (4.7).
#include "gemm_internal.hpp"

#include <ebla/kernels/gemm_host.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace ebla::gemm_detail {

// ---- the products ---------------------------------------------------------------------------

namespace {

/// x 2^-e: one multiplication when 2^-e is a normal binary64 number, else ldexp; either way
/// exact unless the result is subnormal (then one rounding).
double unscale(double x, int e) {
  return e >= -1022 && e <= 1022 ? x * pow2(-e) : std::ldexp(x, -e);
}

/// S = (first ? +0 : S) + u^(v+w) P_vw on every row, and on the last pass (`last`) the
/// unscaling of (4.7), C = Lambda^-1 S M^-1. Returns whether every entry is finite (last
/// pass only). P is m x n, binary64 or binary32.
template <class T>
bool add_product(const Prepared& P, const T* Pvw, double scale, bool first, bool last, HostMatrix& S) {
  const std::int64_t m = P.m, n = P.n;
  std::vector<double> col(static_cast<std::size_t>(n));  // 2^-e_j
  for (std::size_t j = 0; j < col.size(); ++j) col[j] = pow2(-P.b.exps[j]);
  const bool unscaling = last && P.s.scaling;
  // not a structured binding: the lambda below uses them (C++20, and clang only from 16)
  const auto range = std::minmax_element(P.b.exps.begin(), P.b.exps.end());
  const auto low = range.first, high = range.second;
  std::vector<char> finite(static_cast<std::size_t>(m), 1);
  for_each_row(m, n, [&](std::int64_t i) {
    double* s = row_of(S, i);
    const T* p = Pvw + i * n;
    const int e = P.a.exps[static_cast<std::size_t>(i)];
    // 2^-(e_i + e_j) normal for every j: one multiplication per entry; else ldexp
    const bool normal = unscaling && std::abs(e + *low) <= 1022 && std::abs(e + *high) <= 1022;
    bool ok;
    if constexpr (std::is_same<T, float>::value)
      ok = line().add_scaled32(s, p, scale, first, pow2(-e), normal ? col.data() : nullptr, n);
    else
      ok = line().add_scaled64(s, p, scale, first, pow2(-e), normal ? col.data() : nullptr, n);
    if (unscaling && !normal) {
      ok = true;
      for (std::int64_t j = 0; j < n; ++j) {
        s[j] = unscale(s[j], e + P.b.exps[static_cast<std::size_t>(j)]);
        ok = ok && std::isfinite(s[j]);
      }
    }
    finite[static_cast<std::size_t>(i)] = ok;
  });
  return std::find(finite.begin(), finite.end(), 0) == finite.end();
}

}  // namespace

/// C = Lambda^-1 (sum_{v+w<p} u^(v+w) P_vw) M^-1 (4.7), the smallest level first, each P_vw
/// computed on the engine from zero; `finite` says whether every entry of C is.
HostMatrix product(const Prepared& P, bool& finite) {
  const GemmConfig& s = P.s;
  const std::int64_t m = P.m, k = P.k, n = P.n;
  HostMatrix S = uninitialised("C", m, n);
  finite = true;
  if (S.size() == 0) return S;
  if (s.engine == GemmEngine::dgemm) {  // A and B themselves, straight into C
    host::dgemm_by_rows(m, n, k, P.a.w[0].data(), P.b.w[0].data(), S.data());
    // finite inputs whose accumulation cannot overflow (the lemma's bound on the partial sums,
    // docs/gemm.md) give a finite C; where it might, the bound is +inf anyway
    finite = !may_overflow(P);
    return S;
  }
  const int pairs = pairs_of(s.words);
  int done = 0;
  for (int level = s.words - 1; level >= 0; --level)
    for (int v = 0; v <= level; ++v, ++done) {
      const int w = level - v;
      const double scale = pow2(-(v + w) * s.input.t);  // exact
      const bool first = done == 0, last = done == pairs - 1;
      const auto V = static_cast<std::size_t>(v), W = static_cast<std::size_t>(w);
      if (s.engine == GemmEngine::emulated) {
        HostMatrix Pvw("P", m, n);  // the unit adds to C: from zero
        unit_gemm(s.unit, P.a.w[V], P.b.w[W], Pvw);
        finite = add_product(P, Pvw.data(), scale, first, last, S);
        continue;
      }
      const FloatVector Pvw = uninitialised_vector<float>("P", static_cast<std::size_t>(m * n));
      if (s.engine == GemmEngine::sgemm)
        host::sgemm_by_rows(m, n, k, P.a.f32[V].data(), P.b.f32[W].data(), Pvw.data());
      else
        host::bf16_gemm(m, n, k, P.a.bf16[V].data(), P.b.bf16[W].data(), Pvw.data());
      finite = add_product(P, Pvw.data(), scale, first, last, S);
    }
  return S;
}

}  // namespace ebla::gemm_detail
