// What the translation units of ebla::gemm (kernels/src/gemm*.cpp) share: the roundings of
// the bounds, scratch memory, the host passes over rows, the line kernels, a split's words
// and what prepare() makes of them. Internal to kernels/src: not installed.
#pragma once

#include <ebla/core/parallel.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ebla::gemm_detail {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double binary64_u = 0x1p-53;
constexpr double tiny = 0x1p-1074;  // binary64's smallest subnormal

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// x enlarged to cover the rounding of a binary64 sum of `terms` nonnegative roundings.
inline double inflate(double x, double terms) {
  if (!(x < inf)) return inf;  // NaN (inf * 0 in an absolute product) counts as unbounded
  return x * (1 + 2 * (terms + 4) * binary64_u) + (terms + 1) * tiny;
}

inline int pairs_of(int p) { return p * (p + 1) / 2; }

// ---- scratch memory: gemm_scratch.cpp -------------------------------------------------------

HostMatrix uninitialised(const char* label, std::int64_t rows, std::int64_t cols);

/// n values of T in a scratch matrix (the words as an engine stores them, its binary32 results).
template <class T>
struct ScratchVector {
  HostMatrix owner;
  std::size_t n = 0;
  T* data() const { return reinterpret_cast<T*>(owner.data()); }
  T& operator()(std::size_t i) const { return data()[i]; }
  std::size_t size() const { return n; }
};

template <class T>
ScratchVector<T> uninitialised_vector(const char* label, std::size_t n) {
  const auto doubles = static_cast<std::int64_t>((n * sizeof(T) + sizeof(double) - 1) / sizeof(double));
  return ScratchVector<T>{uninitialised(label, 1, doubles), n};
}

// ---- the config as it runs: gemm_config.cpp -------------------------------------------------

GemmConfig settled(const GemmConfig& c);
Format accumulation_format(const GemmConfig& s);

// ---- the host passes: chunks of rows on every thread ----------------------------------------
//
// Every O(m k + k n + m n) pass runs on the threads of the default host execution space
// (detail::for_each_chunk). A matrix's rows are cut into chunks whose size depends on its
// shape only; a sum along a row is one thread's, in one order; whatever is summed over rows
// (B's column norms) is summed per chunk and the chunks' sums added in chunk order. So every
// result, C and every bound, is the same bits on any number of threads.

constexpr std::int64_t group = 8;  // rows whose in-order sums run side by side

/// Rows per chunk of a matrix with `cols` columns: about 2^16 entries, a multiple of `group`.
inline std::int64_t rows_per_chunk(std::int64_t cols) {
  return group * std::max<std::int64_t>(1, (std::int64_t{1} << 13) / std::max<std::int64_t>(cols, 1));
}

/// `rows` rows cut into chunks of rows_per_chunk(cols).
struct RowChunks {
  std::int64_t rows, size;
  RowChunks(std::int64_t rows_, std::int64_t cols) : rows(rows_), size(rows_per_chunk(cols)) {}
  std::size_t count() const {
    return detail::chunk_count(static_cast<std::size_t>(rows), static_cast<std::size_t>(size));
  }
  std::int64_t begin(std::size_t c) const { return static_cast<std::int64_t>(c) * size; }
  std::int64_t end(std::size_t c) const { return std::min(rows, begin(c) + size); }
};

/// f(i) for every row i < rows of a matrix with `cols` columns, by chunks on every thread.
template <class F>
void for_each_row(std::int64_t rows, std::int64_t cols, const F& f) {
  const RowChunks chunks(rows, cols);
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    for (std::int64_t i = chunks.begin(c); i < chunks.end(c); ++i) f(i);
  });
}

/// Row i of a row-major matrix.
template <class View>
auto row_of(const View& X, std::int64_t i) {
  return X.data() + i * static_cast<std::int64_t>(X.stride_0());
}

// ---- line kernels: gemm_lines.cpp -----------------------------------------------------------

/// The constants of the split (4.5)-(4.6) of one matrix into p words.
struct SplitConstants {
  int p = 1;
  bool identity = false;  ///< binary64 words of an unscaled matrix: X^(0) = X, the rest 0, rho = 0
  RoundingConstants rc{};
  double up[3] = {}, down[3] = {};  ///< u^-w and u^w
  double margin[3] = {};            ///< the underflow margin of |rho| after w + 1 words
  // nearest_word: the format's exponents (see there), when `fast`
  bool fast = false;
  std::int64_t t = 0, e_low = 0, e_high = 0;
};

/// One line of a split (a row of A or of B) and what the pass over it writes (null: not wanted).
struct LineJob {
  const double* x = nullptr;
  const double* col_scale = nullptr;  ///< mu_j per entry (B), or null: `scale` for all (A)
  double scale = 1;
  double* word[3] = {};                  ///< the words in binary64
  double* rho = nullptr;                 ///< |rho|
  float* f32[3] = {};                    ///< the words as binary32
  std::uint16_t* bf16[3] = {};           ///< the words as bfloat16
  const double* rho_weight = nullptr;    ///< LineSums::rho = sum_j |rho_j| rho_weight_j (not identity)
  const double* weight[2][3] = {};       ///< LineSums::weighted[s][w] = sum_j |X^(w)_j| weight[s][w]_j
  double* col_one[3] = {};  ///< B: |X^(w)_j| added to col_one[w]_j, max into col_max_j (weight[1]
  double* col_max = nullptr;  ///< unused); null: A, summed over the line into LineSums::one and max
};

/// The sums of one line's pass.
struct LineSums {
  double rho = 0;
  double weighted[2][3] = {};
  double one[3] = {};  ///< sum_j |X^(w)_j|
  double max = 0;      ///< max_(w, j) |X^(w)_j|
};

/// The line kernels of one instruction set.
struct LineKernels {
  void (*ordered_abs_sums8)(const double*, std::int64_t, std::int64_t, double*);
  void (*ordered_abs_sums1)(const double*, std::int64_t, std::int64_t, double*);
  double (*max_abs)(const double*, std::int64_t);
  void (*max_abs_into)(const double*, double*, std::int64_t);
  LineSums (*split_line)(const SplitConstants&, const LineJob&, std::int64_t);
  bool (*add_scaled64)(double*, const double*, double, bool, double, const double*, std::int64_t);
  bool (*add_scaled32)(double*, const float*, double, bool, double, const double*, std::int64_t);
};

const LineKernels& line();

/// f(i, s_i) for the rows i of X in [begin, end), in order, with s_i = ||row i||_1 added in
/// order (the sums of `group` rows side by side).
template <class F>
void rows_with_sums(const ConstHostMatrix& X, std::int64_t begin, std::int64_t end, const F& f) {
  const std::int64_t cols = X.extent(1), ld = X.stride_0();
  double sums[group];
  for (std::int64_t g = begin; g < end; g += group) {
    const std::int64_t count = std::min(group, end - g);
    if (count == group)
      line().ordered_abs_sums8(row_of(X, g), ld, cols, sums);
    else
      for (std::int64_t r = 0; r < count; ++r) line().ordered_abs_sums1(row_of(X, g + r), ld, cols, sums + r);
    for (std::int64_t r = 0; r < count; ++r) f(g + r, sums[r]);
  }
}

// ---- scaling and words: gemm_words.cpp ------------------------------------------------------

/// Per row of A (or column of B): max over words of the 1-norm and of the largest magnitude.
struct LineNorms {
  std::vector<double> one, max;
};

using FloatVector = ScratchVector<float>;
using Bf16Vector = ScratchVector<std::uint16_t>;

/// A or B as words: X = Scale^-1 (sum_w u^w words[w] + rho), Scale = diag(2^exps).
struct Words {
  std::vector<ConstHostMatrix> w;  ///< words[w] in binary64 (kept when asked: Keep)
  ConstHostMatrix rho;             ///< |residual|, enlarged to cover binary64 underflow (likewise)
  std::vector<FloatVector> f32;    ///< the words as the engine reads them (likewise)
  std::vector<Bf16Vector> bf16;
  std::vector<int> exps;   ///< scaling exponents, per row of A or per column of B
  LineNorms norms;         ///< of the words, per row of A or column of B
  double inf_norm = 0;     ///< ||X||_inf of the matrix as given
};

/// What a split keeps besides the norms and the normwise bound.
struct Keep {
  bool words = false;   ///< the words in binary64 (the emulated and dgemm engines, entrywise bounds)
  bool rho = false;     ///< the residuals (entrywise bounds)
  bool engine = false;  ///< the words as binary32 (sgemm) or bfloat16 (onednn_bf16)
};

/// The first entry of a matrix that is not finite (row -1: none).
struct BadEntry {
  std::int64_t i = -1, j = -1;
  double value = 0;
};

/// B's side of the normwise bound, made while B is split: per row l of B, the sums over j with
/// the weights mu_j^-1 of |rho_y| and of every word |Y^(w)| (docs/gemm.md: the bound's row sums
/// are matrix-vector products), and sum_j mu_j^-1.
struct ColumnSums {
  std::vector<double> rho;                 ///< sum_j mu_j^-1 |rho_y,lj|
  std::vector<std::vector<double>> words;  ///< [w][l]: sum_j mu_j^-1 |Y^(w)_lj|
  double mu_sum = 0;                       ///< sum_j mu_j^-1
};

/// The weights of A's residual and words in the normwise bound, from B's side (gemm.hpp):
/// rows of Ytil mu^-1 for |rho_x|; per word v of A, the weights of |X^(v)| in R (|rho_y| and
/// the neglected pairs) and in W (the computed pairs).
struct RowWeights {
  std::vector<double> rho;
  std::vector<std::vector<double>> R, W;
};

/// The constants of a row's sum of entrywise bounds (gemm.hpp): lambda_i^-1 [R_i + acc W_i +
/// under], R_i and W_i summed over j with the weights mu_j^-1, each enlarged for its rounding.
struct RowBound {
  double terms = 0;  ///< terms of the sums R_i and W_i
  double acc = 0;    ///< g + c (1 + g)
  double under = 0;  ///< the underflow terms, summed over j with mu_j^-1
  double operator()(double R, double W, int e) const {
    const double row = inflate(R, terms) + acc * inflate(W, terms) + under;
    return inflate(std::ldexp(row, -e), 4);
  }
};

double theta_of(const GemmConfig& s, std::int64_t k);
[[noreturn]] void throw_not_finite(const BadEntry& b, const char* name, const char* function);
ColumnSums split_columns(const ConstHostMatrix& B, const GemmConfig& s, double theta, const Keep& keep,
                         Words& out, BadEntry& bad);
RowWeights row_weights(const ColumnSums& b, int p, int t);
void split_rows(const ConstHostMatrix& A, const GemmConfig& s, double theta, const Keep& keep,
                const RowWeights& weights, const RowBound& bound, Words& out,
                std::vector<double>& row_bound, BadEntry& bad);

// ---- the bounds: gemm_bounds.cpp ------------------------------------------------------------

/// Everything the bounds need that does not depend on the computed product.
struct Prepared {
  GemmConfig s;
  std::int64_t m = 0, k = 0, n = 0;
  double theta = 0;
  Words a, b;
  std::vector<double> row_bound;  ///< sum_j bound(i, j) per row, but for the overflow test
  AccumulationModel model;
  double g = 0;           ///< (1 + delta)^d - 1
  double g_prob = 0;      ///< gamma~ (or g when biased)
  double lambda = 0;
  double c = 0;           ///< gamma_(pairs-1)(2^-53): the binary64 sum of the products
  double norm_a = 0, norm_b = 0;
};

Prepared prepare(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config,
                 const char* function, const Keep& keep);
bool may_overflow(const Prepared& P);
double normwise(const Prepared& P);
void componentwise(const Prepared& P, const HostMatrix& C, GemmResult& r);
double paper_normwise(const Prepared& P);
void paper_componentwise(const Prepared& P, const ConstHostMatrix& A, const ConstHostMatrix& B,
                         GemmResult& r);

// ---- the products: gemm_products.cpp --------------------------------------------------------

HostMatrix product(const Prepared& P, bool& finite);

// ---- the reference: gemm_reference.cpp ------------------------------------------------------

HostMatrix exact_product(const ConstHostMatrix& A, const ConstHostMatrix& B);
void observe(const ConstHostMatrix& A, const ConstHostMatrix& B, GemmResult& r);

}  // namespace ebla::gemm_detail
