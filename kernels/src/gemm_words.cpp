// The split of ebla::gemm's A and B into scaled words (4.5)-(4.6): one pass per row that also
// checks the entries and makes the norms and the sums of the normwise bound.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace ebla::gemm_detail {

// ---- scaling and words ----------------------------------------------------------------------

/// theta of (3.2).
double theta_of(const GemmConfig& s, std::int64_t k) {
  const double fmax = s.input.fmax();
  const double Fmax = accumulation_format(s).fmax();
  return std::min(fmax, std::sqrt(Fmax / static_cast<double>(std::max<std::int64_t>(k, 1))));
}

namespace {

/// The largest e with 2^e max <= theta (max > 0 and finite), kept inside binary64's range.
int scale_exponent(double max, double theta) {
  if (max == 0 || !std::isfinite(max)) return 0;  // not finite: reported, never used
  int e = std::ilogb(theta) - std::ilogb(max);
  while (std::ldexp(max, e) > theta) --e;
  while (std::ldexp(max, e + 1) <= theta) ++e;
  return std::clamp(e, -1000, 1000);
}

/// Records in `bad` the first entry of row i that is not finite, unless a row before it has one;
/// `sum` is the row's 1-norm (finite: no entry to look for).
void check_row(const ConstHostMatrix& X, std::int64_t i, double sum, BadEntry& bad) {
  if (sum <= std::numeric_limits<double>::max() || bad.i >= 0) return;  // inf, NaN or overflow
  const double* x = row_of(X, i);
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(X.extent(1)); ++j)
    if (!std::isfinite(x[j])) {
      bad = BadEntry{i, j, x[j]};
      return;
    }
}

/// The first of the chunks' first bad entries.
BadEntry first_bad(const std::vector<BadEntry>& chunks) {
  for (const BadEntry& b : chunks)
    if (b.i >= 0) return b;
  return {};
}

}  // namespace

[[noreturn]] void throw_not_finite(const BadEntry& b, const char* name, const char* function) {
  std::ostringstream msg;
  msg << name << "(" << b.i << ", " << b.j << ") = " << b.value << " is not finite";
  throw_invalid(function, msg.str());
}

namespace {

/// The split's constants for a settled config.
SplitConstants split_constants(const GemmConfig& s) {
  SplitConstants k;
  k.p = s.words;
  k.identity = s.input.t == 53 && s.input.emin == -1022 && s.input.subnormals && !s.scaling;
  k.rc = rounding_constants(s.input);
  for (int w = 0; w < s.words; ++w) {
    k.up[w] = pow2(w * s.input.t);
    k.down[w] = pow2(-w * s.input.t);
    // |rho| after w + 1 words, and the subnormal roundings of the scalings (half an ulp of
    // 2^-1074 each)
    k.margin[w] = (w + 3) * tiny;
  }
  const Format& f = s.input;
  k.fast = f.t <= 52 && f.emax + 54 - f.t <= 1023;
  k.t = f.t;
  k.e_low = f.subnormals ? f.emin : f.emin + f.t - 1;
  k.e_high = f.emax + 1;
  return k;
}

/// The matrices and vectors a split writes into, as `keep` asks; the binary64 words of an
/// identity split are X itself (copied only if not contiguous) and zeros.
void allocate_words(const ConstHostMatrix& X, const GemmConfig& s, const SplitConstants& k,
                    const Keep& keep, Words& out) {
  const std::int64_t rows = X.extent(0), cols = X.extent(1);
  const std::size_t size = static_cast<std::size_t>(rows * cols);
  for (int w = 0; keep.words && w < s.words; ++w) {
    if (k.identity && w == 0 && X.span_is_contiguous()) {
      out.w.push_back(X);
      continue;
    }
    HostMatrix W = uninitialised("word", rows, cols);
    if (k.identity && w == 0) Kokkos::deep_copy(W, X);
    else if (k.identity) Kokkos::deep_copy(W, 0.0);
    out.w.push_back(W);
  }
  if (keep.rho) {
    HostMatrix rho = uninitialised("rho", rows, cols);
    if (k.identity) Kokkos::deep_copy(rho, 0.0);
    out.rho = rho;
  }
  for (int w = 0; keep.engine && w < s.words; ++w) {
    if (s.engine == GemmEngine::sgemm) out.f32.push_back(uninitialised_vector<float>("words_f32", size));
    if (s.engine == GemmEngine::onednn_bf16)
      out.bf16.push_back(uninitialised_vector<std::uint16_t>("words_bf16", size));
  }
}

/// A job for row i of X with the stored words of `out` (those the split writes itself).
LineJob stored_line(const ConstHostMatrix& X, std::int64_t i, const SplitConstants& k, const Words& out) {
  LineJob job;
  job.x = row_of(X, i);
  const std::int64_t at = i * static_cast<std::int64_t>(X.extent(1));
  if (k.identity) return job;
  for (std::size_t w = 0; w < out.w.size(); ++w) job.word[w] = const_cast<double*>(row_of(out.w[w], i));
  if (out.rho.size() > 0) job.rho = const_cast<double*>(row_of(out.rho, i));
  for (std::size_t w = 0; w < out.f32.size(); ++w) job.f32[w] = out.f32[w].data() + at;
  for (std::size_t w = 0; w < out.bf16.size(); ++w) job.bf16[w] = out.bf16[w].data() + at;
  return job;
}

/// B's column scaling: the exponents mu_j = 2^e_j from the largest entry of each column (per
/// chunk of rows, then over the chunks), with ||B||_inf and the check of B's entries, which
/// this first pass makes too.
void scale_columns(const ConstHostMatrix& B, double theta, Words& out, BadEntry& bad) {
  const std::int64_t k = B.extent(0), n = B.extent(1);
  const RowChunks chunks(k, n);
  HostMatrix col_max = uninitialised("column_max", static_cast<std::int64_t>(chunks.count()), n);
  std::vector<double> sums(static_cast<std::size_t>(k));
  std::vector<BadEntry> bads(chunks.count());
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    double* m = row_of(col_max, static_cast<std::int64_t>(c));
    std::fill(m, m + n, 0.0);
    rows_with_sums(B, chunks.begin(c), chunks.end(c), [&](std::int64_t l, double sum) {
      sums[static_cast<std::size_t>(l)] = sum;
      check_row(B, l, sum, bads[c]);
      line().max_abs_into(row_of(B, l), m, n);
    });
  });
  bad = first_bad(bads);
  for (double s : sums) out.inf_norm = std::max(out.inf_norm, s);
  for_each_row(n, static_cast<std::int64_t>(chunks.count()), [&](std::int64_t j) {
    double top = 0;
    for (std::size_t c = 0; c < chunks.count(); ++c) top = std::max(top, col_max(static_cast<std::int64_t>(c), j));
    out.exps[static_cast<std::size_t>(j)] = scale_exponent(top, theta);
  });
}

}  // namespace

/// Splits B (k x n) by rows with the column scaling: the words as `keep` asks, the norms of
/// every column (summed per chunk of rows, the chunks in order) and B's side of the normwise
/// bound; `bad` is the first entry that is not finite.
ColumnSums split_columns(const ConstHostMatrix& B, const GemmConfig& s, double theta, const Keep& keep,
                         Words& out, BadEntry& bad) {
  const std::int64_t k = B.extent(0), n = B.extent(1);
  const int p = s.words;
  const SplitConstants sc = split_constants(s);
  const int computed = sc.identity ? 1 : p;  // words with anything nonzero
  out.exps.assign(static_cast<std::size_t>(n), 0);
  if (s.scaling) scale_columns(B, theta, out, bad);
  std::vector<double> scale(static_cast<std::size_t>(n)), mu_inv(scale.size());  // 2^e, |e| <= 1000
  for (std::size_t j = 0; j < scale.size(); ++j) {
    scale[j] = pow2(out.exps[j]);
    mu_inv[j] = pow2(-out.exps[j]);
  }
  allocate_words(B, s, sc, keep, out);
  ColumnSums sums;
  sums.rho.assign(static_cast<std::size_t>(k), 0.0);
  sums.words.assign(static_cast<std::size_t>(p), std::vector<double>(static_cast<std::size_t>(k), 0.0));
  for (double v : mu_inv) sums.mu_sum += v;
  // per chunk of rows: the sums of |Y^(w)| per column (p rows of n), then their maxima
  const RowChunks chunks(k, n);
  HostMatrix partial = uninitialised("column_norms", static_cast<std::int64_t>(chunks.count()), (computed + 1) * n);
  std::vector<double> row_sums(s.scaling ? 0 : static_cast<std::size_t>(k));
  std::vector<BadEntry> bads(chunks.count());
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    double* part = row_of(partial, static_cast<std::int64_t>(c));
    std::fill(part, part + (computed + 1) * n, 0.0);
    auto split = [&](std::int64_t l) {
      LineJob job = stored_line(B, l, sc, out);
      job.col_scale = scale.data();
      job.rho_weight = sc.identity ? nullptr : mu_inv.data();
      for (int w = 0; w < computed; ++w) {
        job.weight[0][w] = mu_inv.data();
        job.col_one[w] = part + w * n;
      }
      job.col_max = part + computed * n;
      const LineSums ls = line().split_line(sc, job, n);
      sums.rho[static_cast<std::size_t>(l)] = ls.rho;
      for (int w = 0; w < computed; ++w) sums.words[static_cast<std::size_t>(w)][static_cast<std::size_t>(l)] = ls.weighted[0][w];
    };
    if (s.scaling) {  // checked and summed by scale_columns
      for (std::int64_t l = chunks.begin(c); l < chunks.end(c); ++l) split(l);
      return;
    }
    rows_with_sums(B, chunks.begin(c), chunks.end(c), [&](std::int64_t l, double sum) {
      row_sums[static_cast<std::size_t>(l)] = sum;
      check_row(B, l, sum, bads[c]);
      split(l);
    });
  });
  if (!s.scaling) {
    bad = first_bad(bads);
    for (double v : row_sums) out.inf_norm = std::max(out.inf_norm, v);
  }
  // the column norms: the chunks' sums added in chunk order
  const double terms = 2.0 * static_cast<double>(k + n);
  out.norms = LineNorms{std::vector<double>(static_cast<std::size_t>(n), 0.0), std::vector<double>(static_cast<std::size_t>(n), 0.0)};
  for_each_row(n, static_cast<std::int64_t>(chunks.count()) * (computed + 1), [&](std::int64_t j) {
    const auto J = static_cast<std::size_t>(j);
    for (int w = 0; w < computed; ++w) {
      double one = 0;
      for (std::size_t c = 0; c < chunks.count(); ++c) one += partial(static_cast<std::int64_t>(c), w * n + j);
      out.norms.one[J] = std::max(out.norms.one[J], inflate(one, terms));
    }
    for (std::size_t c = 0; c < chunks.count(); ++c)
      out.norms.max[J] = std::max(out.norms.max[J], partial(static_cast<std::int64_t>(c), computed * n + j));
  });
  return sums;
}

RowWeights row_weights(const ColumnSums& b, int p, int t) {
  RowWeights out;
  out.rho = b.rho;
  for (int w = 0; w < p; ++w)
    for (std::size_t l = 0; l < out.rho.size(); ++l) out.rho[l] += b.words[static_cast<std::size_t>(w)][l] * pow2(-w * t);
  out.R.assign(static_cast<std::size_t>(p), b.rho);
  out.W.assign(static_cast<std::size_t>(p), std::vector<double>(b.rho.size(), 0.0));
  for (int v = 0; v < p; ++v)
    for (int w = 0; w < p; ++w) {
      std::vector<double>& c = v + w < p ? out.W[static_cast<std::size_t>(v)] : out.R[static_cast<std::size_t>(v)];
      for (std::size_t l = 0; l < c.size(); ++l) c[l] += b.words[static_cast<std::size_t>(w)][l] * pow2(-w * t);
    }
  return out;
}

/// Splits A (m x k) by rows, one pass per row: the check of its entries, ||A||_inf, the row's
/// scaling exponent, its words (as `keep` asks) and norms, and its sum of the entrywise bounds
/// (`bound`, with B's side in `weights`) into row_bound; `bad` is the first entry that is not
/// finite.
void split_rows(const ConstHostMatrix& A, const GemmConfig& s, double theta, const Keep& keep,
                const RowWeights& weights, const RowBound& bound, Words& out,
                std::vector<double>& row_bound, BadEntry& bad) {
  const std::int64_t m = A.extent(0), k = A.extent(1);
  const int p = s.words, t = s.input.t;
  const SplitConstants sc = split_constants(s);
  const int computed = sc.identity ? 1 : p;
  const double terms = 2.0 * static_cast<double>(m + k);
  out.exps.assign(static_cast<std::size_t>(m), 0);
  out.norms = LineNorms{std::vector<double>(static_cast<std::size_t>(m), 0.0), std::vector<double>(static_cast<std::size_t>(m), 0.0)};
  row_bound.assign(static_cast<std::size_t>(m), 0.0);
  allocate_words(A, s, sc, keep, out);
  std::vector<double> row_sums(static_cast<std::size_t>(m));
  const RowChunks chunks(m, k);
  std::vector<BadEntry> bads(chunks.count());
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    rows_with_sums(A, chunks.begin(c), chunks.end(c), [&](std::int64_t i, double sum) {
      const auto I = static_cast<std::size_t>(i);
      row_sums[I] = sum;
      check_row(A, i, sum, bads[c]);
      const int e = s.scaling ? scale_exponent(line().max_abs(row_of(A, i), k), theta) : 0;
      out.exps[I] = e;
      LineJob job = stored_line(A, i, sc, out);
      job.scale = pow2(e);
      // R: |rho_x| and the words against the weights from B (an identity split has no R)
      job.rho_weight = sc.identity ? nullptr : weights.rho.data();
      for (int v = 0; v < computed; ++v) {
        job.weight[0][v] = sc.identity ? nullptr : weights.R[static_cast<std::size_t>(v)].data();
        job.weight[1][v] = weights.W[static_cast<std::size_t>(v)].data();
      }
      const LineSums ls = line().split_line(sc, job, k);
      double R = ls.rho, W = 0;
      for (int v = 0; v < computed; ++v) {
        out.norms.one[I] = std::max(out.norms.one[I], inflate(ls.one[v], terms));
        R += ls.weighted[0][v] * pow2(-v * t);
        W += ls.weighted[1][v] * pow2(-v * t);
      }
      out.norms.max[I] = ls.max;
      row_bound[I] = bound(R, W, e);
    });
  });
  bad = first_bad(bads);
  for (double v : row_sums) out.inf_norm = std::max(out.inf_norm, v);
}

}  // namespace ebla::gemm_detail
