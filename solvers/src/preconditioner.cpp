// Block-Jacobi: blocks by supervariable agglomeration, Cholesky factors, and z = M^-1 r
// (preconditioner.hpp).
#include <ebla/solvers/preconditioner.hpp>

#include "cg_steps.hpp"
#include "preconditioner_host.hpp"
#include "stored_simd.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/core/parse.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/core/storage.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace ebla {

namespace {

constexpr PcKind pc_kinds[] = {PcKind::none, PcKind::jacobi, PcKind::block_jacobi, PcKind::sgs, PcKind::ic0};

using detail::host_rows;
using detail::HostRows;
using detail::number_text;

// Whether rows i - 1 and i have the same column indices, in the same order.
bool same_pattern(const HostRows& A, std::size_t i) {
  const std::size_t a = A.ptr(i - 1), b = A.ptr(i), e = A.ptr(i + 1);
  if (e - b != b - a) return false;
  for (std::size_t k = 0; k < e - b; ++k)
    if (A.col(a + k) != A.col(b + k)) return false;
  return true;
}

// The supervariables: runs of consecutive rows of one pattern, at most `most` rows each.
std::vector<std::size_t> supervariables(const HostRows& A, std::size_t n, std::size_t most) {
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 1; i < n; ++i)
    if (i - starts.back() >= most || !same_pattern(A, i)) starts.push_back(i);
  starts.push_back(n);
  return starts;
}

// Consecutive supervariables merged while the block has at most `most` rows.
std::vector<std::size_t> agglomerate(const std::vector<std::size_t>& super, std::size_t most) {
  std::vector<std::size_t> starts{0};
  for (std::size_t s = 1; s + 1 < super.size(); ++s)
    if (super[s + 1] - starts.back() > most) starts.push_back(super[s]);  // the next one does not fit
  starts.push_back(super.back());
  return starts;
}

std::vector<std::size_t> checked_blocks(const HostRows& A, const CsrMatrix& M, int max_block_size,
                                        const std::string& function) {
  if (M.numRows() != M.numCols())
    throw_invalid(function, "A is " + std::to_string(M.numRows()) + " x " + std::to_string(M.numCols()) + ", not square");
  if (max_block_size < 1)
    throw_invalid(function, "block size " + std::to_string(max_block_size) + " must be at least 1");
  const std::size_t n = static_cast<std::size_t>(M.numRows()), most = static_cast<std::size_t>(max_block_size);
  if (n == 0) return {0};
  return agglomerate(supervariables(A, n, most), most);
}

// L of the block of rows [first, first + m), its lower triangle row by row into l
// (Cholesky-Banachiewicz, row by row: l_ij = (a_ij - sum_(k<j) l_ik l_jk) / l_jj,
// l_ii = sqrt(a_ii - sum_(k<i) l_ik^2)); the lower triangle of A_bb is read, its upper one
// is taken to be its transpose. A block of one row keeps 1 / a_ii instead, so that apply
// computes Jacobi's (1 / a_ii) r_i, bit for bit. Throws at a pivot that is not positive and
// finite (or, in a block of one row, whose inverse overflows).
void factor_block(const HostRows& A, std::size_t first, std::size_t m, double* l, const std::string& function) {
  auto at = [l](std::size_t i, std::size_t j) -> double& { return l[i * (i + 1) / 2 + j]; };
  for (std::size_t i = 0; i < m; ++i) {  // row i of A_bb, below and on the diagonal
    for (std::size_t j = 0; j <= i; ++j) at(i, j) = 0;
    for (std::size_t k = A.ptr(first + i); k < A.ptr(first + i + 1); ++k) {
      const long j = static_cast<long>(A.col(k)) - static_cast<long>(first);
      if (j >= 0 && static_cast<std::size_t>(j) <= i) at(i, static_cast<std::size_t>(j)) += A.val(k);
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      double s = at(i, j);
      for (std::size_t k = 0; k < j; ++k) s -= at(i, k) * at(j, k);  // a_ij - sum_(k<j) l_ik l_jk
      if (j < i) {
        at(i, j) = s / at(j, j);                                     // l_ij
      } else if (s > 0 && std::isfinite(s) && (m > 1 || std::isfinite(1 / s))) {
        at(i, i) = m > 1 ? std::sqrt(s) : 1 / s;                     // l_ii, or Jacobi's 1 / a_ii
      } else {
        throw_invalid(function, "the diagonal block of rows " + std::to_string(first) + ".." +
                                    std::to_string(first + m - 1) + " is not positive definite: Cholesky pivot " +
                                    std::to_string(i) + " (row " + std::to_string(first + i) + ") is " +
                                    number_text(s));
      }
    }
  }
}

// l~ = fl_S(l), rounded to nearest even once (binary64: l itself).
double rounded(Storage s, double l, const RoundingConstants& bf16) {
  if (s == Storage::binary32) return static_cast<double>(static_cast<float>(l));
  if (s == Storage::bfloat16) return round_to<Rounding::nearest_even>(l, bf16);
  return l;
}

// d = ||G||_F, G = L^-1 (L~ - L), for the m x m lower triangles l (L) and t (L~), row by row:
// column j of G solves L g = e_j (entries j.. of column j of E = L~ - L, exact as the
// difference of l and its rounding: Sterbenz, or -l where l rounds to 0). +inf where L~ has
// a diagonal entry that is not positive and finite (then L~ L~^T may be singular) or any
// entry that is not finite. Computed in binary64: its relative rounding, about m 2^-53
// kappa(L), is far below the rule's margin, and d only chooses formats (M~ is positive
// definite by its diagonal whatever d is, where d < 1).
double perturbation(const double* l, const double* t, std::size_t m) {
  auto at = [](const double* v, std::size_t i, std::size_t j) { return v[i * (i + 1) / 2 + j]; };
  for (std::size_t i = 0; i < m; ++i) {
    if (!(at(t, i, i) > 0) || !std::isfinite(at(t, i, i))) return HUGE_VAL;
    for (std::size_t j = 0; j < i; ++j)
      if (!std::isfinite(at(t, i, j))) return HUGE_VAL;
  }
  std::vector<double> g(m);
  double sum = 0;
  for (std::size_t j = 0; j < m; ++j) {
    for (std::size_t i = j; i < m; ++i) {  // forward substitution, rows j.. (G is lower triangular)
      double s = at(t, i, j) - at(l, i, j);
      for (std::size_t k = j; k < i; ++k) s -= at(l, i, k) * g[k];
      g[i] = s / at(l, i, i);
      sum += g[i] * g[i];
    }
  }
  return std::sqrt(sum) * (1 + 0x1p-30);
}

// The format block b's factor l (m rows, m > 1) is kept in, and l~ into t: the fixed one,
// or the narrowest whose d is at most block_storage_delta. d into `d`.
Storage block_format(const double* l, std::size_t m, const BlockStorage& storage, std::vector<double>& t, double& d,
                     std::size_t first, const std::string& function) {
  static const RoundingConstants bf16 = rounding_constants(detail::storage_float_format(Storage::bfloat16));
  const std::size_t count = m * (m + 1) / 2;
  t.resize(count);
  for (Storage s : {Storage::bfloat16, Storage::binary32}) {
    if (!storage.automatic && storage.fixed != s) continue;
    for (std::size_t k = 0; k < count; ++k) t[k] = rounded(s, l[k], bf16);
    d = perturbation(l, t.data(), m);
    if (storage.automatic ? d <= block_storage_delta : d < 1) return s;
    if (!storage.automatic)
      throw_invalid(function, "the factor of the diagonal block of rows " + std::to_string(first) + ".." +
                                  std::to_string(first + m - 1) + " does not fit " + to_string(s) +
                                  ": ||L^-1 (L~ - L)||_F = " + number_text(d) +
                                  " (at least 1, or L~ singular: L~ L~^T need not be positive definite); "
                                  "keep the blocks in binary64 or auto");
  }
  d = 0;
  std::copy(l, l + count, t.begin());
  return Storage::binary64;
}

}  // namespace

BlockStorage block_storage_by_name(const std::string& name, const std::string& function) {
  if (name == "auto") return BlockStorage::chosen();
  for (Storage s : {Storage::binary64, Storage::binary32, Storage::bfloat16})
    if (name == to_string(s)) return BlockStorage::of(s);
  throw_invalid(function, "unknown block storage '" + name + "'; known: auto, binary64, binary32, bfloat16");
}

std::string to_string(const BlockStorage& s) { return s.automatic ? "auto" : to_string(s.fixed); }

const char* to_string(PcKind k) {
  switch (k) {
    case PcKind::none: return "none";
    case PcKind::jacobi: return "jacobi";
    case PcKind::block_jacobi: return "block-jacobi";
    case PcKind::sgs: return "sgs";
    case PcKind::ic0: return "ic0";
  }
  return "?";
}

const char* pc_title(PcKind k) {
  switch (k) {
    case PcKind::none: return "no preconditioner";
    case PcKind::jacobi: return "Jacobi";
    case PcKind::block_jacobi: return "block-Jacobi";
    case PcKind::sgs: return "SGS";
    case PcKind::ic0: return "IC(0)";
  }
  return "?";
}

bool from_matrix(PcKind k) { return k == PcKind::block_jacobi || k == PcKind::sgs || k == PcKind::ic0; }

PcKind pc_kind_by_name(const std::string& name, const std::string& function) {
  std::string known, nearest;
  std::size_t best = 3;  // suggest only a name within two edits
  for (PcKind k : pc_kinds) {
    if (name == to_string(k)) return k;
    known += (known.empty() ? "" : ", ") + std::string(to_string(k));
    if (const std::size_t d = edit_distance(name, to_string(k)); d < best) best = d, nearest = to_string(k);
  }
  throw_invalid(function, "unknown preconditioner '" + name + "'" +
                              (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") + "; known: " + known);
}

std::vector<std::size_t> supervariable_blocks(const CsrMatrix& A, int max_block_size, const std::string& function) {
  return checked_blocks(host_rows(A), A, max_block_size, function);
}

namespace {

// Blocks per work item of apply: eight consecutive blocks of one size (more than one row)
// and one format are solved together, others one by one. Such a group of at most
// interleave_rows rows a block stores its factors interleaved, entry k of block g at 8 k + g
// from the group's start, so that apply reads the eight blocks' entries k as one run of eight
// words and solves the eight blocks as eight lanes of one vector (solve_interleaved).
constexpr std::size_t block_group = 8;
constexpr std::size_t interleave_rows = 32;

// Whether the blocks b0 .. b0 + 7 (b0 a multiple of block_group) are solved together: all
// there, of one size m > 1 and one format; `interleaved` also asks m <= interleave_rows.
bool alike_group(const std::vector<std::size_t>& starts, const std::vector<std::uint8_t>& format, std::size_t b0) {
  const std::size_t blocks = starts.size() - 1, m0 = starts[b0 + 1] - starts[b0];
  if (b0 + block_group > blocks || m0 < 2) return false;
  for (std::size_t b = b0 + 1; b < b0 + block_group; ++b)
    if (starts[b + 1] - starts[b] != m0 || format[b] != format[b0]) return false;
  return true;
}
bool interleaved(const std::vector<std::size_t>& starts, const std::vector<std::uint8_t>& format, std::size_t b0) {
  return alike_group(starts, format, b0) && starts[b0 + 1] - starts[b0] <= interleave_rows;
}

// Appends block b0 + g's stored entries (blocks[b], each as exact values of its format) to
// `out` in the order apply reads them: interleaved for a group that interleaved() holds,
// block after block otherwise; offset[b] is where block b's first entry lands (its entry k
// at offset[b] + stride k, stride 8 or 1).
template <class T, class Convert>
void lay_out(std::vector<T>& out, std::vector<std::size_t>& offset, const std::vector<std::vector<double>>& blocks,
             std::size_t b0, std::size_t count, bool together, const Convert& convert) {
  if (!together) {
    offset[b0] = out.size();
    for (double v : blocks[b0]) out.push_back(convert(v));
    return;
  }
  const std::size_t base = out.size();
  for (std::size_t g = 0; g < block_group; ++g) offset[b0 + g] = base + g;
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t g = 0; g < block_group; ++g) out.push_back(convert(blocks[b0 + g][k]));
}

}  // namespace

BlockJacobi::BlockJacobi(const CsrMatrix& A, int max_block_size, const std::string& function, BlockStorage storage) {
  const HostRows rows = host_rows(A);
  starts_ = checked_blocks(rows, A, max_block_size, function);
  if (!storage.automatic && storage.fixed != Storage::binary64 && storage.fixed != Storage::binary32 &&
      storage.fixed != Storage::bfloat16)
    throw_invalid(function, std::string("block storage ") + to_string(storage.fixed) +
                                ": give binary64, binary32, bfloat16 or auto");
  n_ = starts_.back();
  blocks_ = starts_.size() - 1;
  std::vector<std::size_t> offset(blocks_ + 1, 0);
  std::vector<std::uint8_t> format(blocks_);
  std::vector<double> l, t;
  std::vector<std::vector<double>> stored(blocks_);  // each block's entries, exact in its format
  for (std::size_t b = 0; b < blocks_; ++b) {
    const std::size_t m = starts_[b + 1] - starts_[b], count = m * (m + 1) / 2;
    largest_ = std::max(largest_, m);
    entries_ += count;
    l.assign(count, 0.0);
    factor_block(rows, starts_[b], m, l.data(), function);
    double d = 0;
    // a block of one row keeps Jacobi's 1 / a_ii in binary64 (its bits)
    const Storage s = m > 1 ? block_format(l.data(), m, storage, t, d, starts_[b], function) : Storage::binary64;
    delta_ = std::max(delta_, d);
    format[b] = static_cast<std::uint8_t>(s);
    ++count_[static_cast<int>(s)];
    stored[b] = s == Storage::binary64 ? l : t;
  }
  std::vector<double> f64;
  std::vector<float> f32;
  std::vector<std::uint16_t> f16;
  for (std::size_t b0 = 0; b0 < blocks_;) {  // a group of eight interleaved, or one block
    const bool together = b0 % block_group == 0 && interleaved(starts_, format, b0);
    const std::size_t m = starts_[b0 + 1] - starts_[b0], count = m * (m + 1) / 2;
    const auto s = static_cast<Storage>(format[b0]);
    if (s == Storage::binary64)
      lay_out(f64, offset, stored, b0, count, together, [](double v) { return v; });
    else if (s == Storage::binary32)  // exact: v is a binary32 value
      lay_out(f32, offset, stored, b0, count, together, [](double v) { return static_cast<float>(v); });
    else  // exact: v is a bfloat16 value
      lay_out(f16, offset, stored, b0, count, together, [](double v) { return detail::bfloat16_bits(v); });
    b0 += together ? block_group : 1;
  }
  auto device = [](const auto& host, const char* label) {
    using T = typename std::decay_t<decltype(host)>::value_type;
    Kokkos::View<T*> v(std::string(label), host.size());
    Kokkos::deep_copy(v, Kokkos::View<const T*, Kokkos::HostSpace>(host.data(), host.size()));
    return v;
  };
  factor_ = device(f64, "ebla::block_jacobi factor");
  factor32_ = device(f32, "ebla::block_jacobi factor (binary32)");
  factor16_ = device(f16, "ebla::block_jacobi factor (bfloat16)");
  if (storage.automatic || storage.fixed != Storage::binary64) format_ = device(format, "ebla::block_jacobi format");
  first_ = device(starts_, "ebla::block_jacobi first");
  offset_ = device(offset, "ebla::block_jacobi offset");
}

double BlockJacobi::bytes() const {
  return static_cast<double>(factor_.extent(0) * sizeof(double) + factor32_.extent(0) * sizeof(float) +
                             factor16_.extent(0) * sizeof(std::uint16_t) + format_.extent(0) +
                             (first_.extent(0) + offset_.extent(0)) * sizeof(std::size_t));
}

double BlockJacobi::binary64_bytes() const {
  return static_cast<double>(entries_ * sizeof(double) + (first_.extent(0) + offset_.extent(0)) * sizeof(std::size_t));
}

std::string BlockJacobi::formats() const {
  std::string out;
  for (Storage s : {Storage::bfloat16, Storage::binary32, Storage::binary64})
    if (count_[static_cast<int>(s)] > 0)
      out += (out.empty() ? "" : ", ") + std::string(to_string(s)) + " " + std::to_string(count_[static_cast<int>(s)]);
  return out;
}

namespace {

// The entries of a block's factor as apply reads them, widened exactly to binary64.
struct Read64 {
  const double* l;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t k) const { return l[k]; }
};
struct Read32 {
  const float* l;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t k) const { return static_cast<double>(l[k]); }
};
struct Read16 {
  const std::uint16_t* l;
  KOKKOS_INLINE_FUNCTION double operator()(std::size_t k) const { return detail::bfloat16_value(l[k]); }
};

// z_b = (L L^T)^-1 r_b for `lanes` blocks of m rows each at once, block g's rows from f[g]
// and its factor's entry k read by l[g](k) (l_ij at k = i (i + 1) / 2 + j): L y = r_b into
// z_b, then L^T z_b = y. Each block takes its own operations in one fixed order (the same
// bits for any number of lanes), and the lanes' chains of dependent subtractions interleave,
// which a processor that would otherwise wait on each one can overlap.
template <int lanes, class L>
KOKKOS_INLINE_FUNCTION void solve_blocks(const L (&l)[lanes], const ConstVector& r, const Vector& z,
                                         const std::size_t (&f)[lanes], std::size_t m) {
  double s[lanes];
  for (std::size_t i = 0; i < m; ++i) {  // L y = r_b, y into z_b
    for (int g = 0; g < lanes; ++g) s[g] = r(f[g] + i);
    for (std::size_t k = 0; k < i; ++k)
      for (int g = 0; g < lanes; ++g) s[g] -= l[g](i * (i + 1) / 2 + k) * z(f[g] + k);
    for (int g = 0; g < lanes; ++g) z(f[g] + i) = s[g] / l[g](i * (i + 1) / 2 + i);
  }
  for (std::size_t i = m; i-- > 0;) {    // L^T z_b = y
    for (int g = 0; g < lanes; ++g) s[g] = z(f[g] + i);
    for (std::size_t k = i + 1; k < m; ++k)
      for (int g = 0; g < lanes; ++g) s[g] -= l[g](k * (k + 1) / 2 + i) * z(f[g] + k);
    for (int g = 0; g < lanes; ++g) z(f[g] + i) = s[g] / l[g](i * (i + 1) / 2 + i);
  }
}

// solve_blocks for the eight blocks of an interleaved group (block_group, lay_out): block g's
// rows from f0 + g m, its factor's entry k read by l(8 k + g). The eight right-hand sides are
// copied into w (row i of block g at 8 i + g), solved there as eight lanes of one vector,
// each lane with its block's operations in solve_blocks's order (the same bits), and copied
// out; r may be z.
template <class L>
KOKKOS_INLINE_FUNCTION void solve_interleaved(const L& l, const ConstVector& r, const Vector& z, std::size_t f0,
                                              std::size_t m) {
  constexpr std::size_t G = block_group;
  double w[interleave_rows * G];
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t g = 0; g < G; ++g) w[i * G + g] = r(f0 + g * m + i);
  for (std::size_t i = 0; i < m; ++i) {  // L y = r_b, y into w
    double s[G];
    for (std::size_t g = 0; g < G; ++g) s[g] = w[i * G + g];
    for (std::size_t k = 0; k < i; ++k) {
      const std::size_t e = (i * (i + 1) / 2 + k) * G;  // l_ik
      for (std::size_t g = 0; g < G; ++g) s[g] -= l(e + g) * w[k * G + g];
    }
    const std::size_t d = (i * (i + 1) / 2 + i) * G;    // l_ii
    for (std::size_t g = 0; g < G; ++g) w[i * G + g] = s[g] / l(d + g);
  }
  for (std::size_t i = m; i-- > 0;) {    // L^T z_b = y
    double s[G];
    for (std::size_t g = 0; g < G; ++g) s[g] = w[i * G + g];
    for (std::size_t k = i + 1; k < m; ++k) {
      const std::size_t e = (k * (k + 1) / 2 + i) * G;  // l_ki
      for (std::size_t g = 0; g < G; ++g) s[g] -= l(e + g) * w[k * G + g];
    }
    const std::size_t d = (i * (i + 1) / 2 + i) * G;
    for (std::size_t g = 0; g < G; ++g) w[i * G + g] = s[g] / l(d + g);
  }
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t g = 0; g < G; ++g) z(f0 + g * m + i) = w[i * G + g];
}

// One block: solve_blocks with one lane.
template <class L>
KOKKOS_INLINE_FUNCTION void solve_block(const L& l, const ConstVector& r, const Vector& z, std::size_t f,
                                        std::size_t m) {
  const L one[1] = {l};
  const std::size_t rows[1] = {f};
  solve_blocks(one, r, z, rows, m);
}

}  // namespace

namespace {

// One work item of apply: the blocks of group `group` (block_group of them), solved together
// where they are alike (interleaved: solve_interleaved; larger: solve_blocks), else one by
// one.
struct ApplyGroups {
  Kokkos::View<const std::size_t*> first, offset;
  Kokkos::View<const std::uint8_t*> format;
  Kokkos::View<const double*> factor;
  Kokkos::View<const float*> factor32;
  Kokkos::View<const std::uint16_t*> factor16;
  std::size_t blocks;
  ConstVector r;
  Vector z;

  // empty where every block is binary64 (BlockStorage binary64)
  KOKKOS_INLINE_FUNCTION std::uint8_t format_of(std::size_t b) const {
    return format.extent(0) ? format(b) : static_cast<std::uint8_t>(Storage::binary64);
  }

  // Whether the blocks of `group` are alike (of one size m0 > 1 and one format s, all
  // block_group there): alike_group, which laid the factors out, on the device's arrays.
  KOKKOS_INLINE_FUNCTION bool alike(std::size_t group, std::size_t& m0, std::uint8_t& s) const {
    const std::size_t b0 = group * block_group, b1 = b0 + block_group < blocks ? b0 + block_group : blocks;
    m0 = first(b0 + 1) - first(b0);
    s = format_of(b0);
    bool same = b1 - b0 == block_group && m0 > 1;
    for (std::size_t b = b0 + 1; same && b < b1; ++b) same = first(b + 1) - first(b) == m0 && format_of(b) == s;
    return same;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t group) const {
    const std::size_t b0 = group * block_group, b1 = b0 + block_group < blocks ? b0 + block_group : blocks;
    std::size_t m0 = 0;
    std::uint8_t s = 0;
    const bool alike = this->alike(group, m0, s);
    constexpr auto binary32 = static_cast<std::uint8_t>(Storage::binary32);
    constexpr auto bfloat16 = static_cast<std::uint8_t>(Storage::bfloat16);
    if (alike && m0 <= interleave_rows) {  // interleaved (lay_out)
      const std::size_t at = offset(b0);
      if (s == binary32) solve_interleaved(Read32{factor32.data() + at}, r, z, first(b0), m0);
      else if (s == bfloat16) solve_interleaved(Read16{factor16.data() + at}, r, z, first(b0), m0);
      else solve_interleaved(Read64{factor.data() + at}, r, z, first(b0), m0);
      return;
    }
    if (alike) {
      std::size_t f[block_group];
      for (std::size_t g = 0; g < block_group; ++g) f[g] = first(b0 + g);
      if (s == binary32) {
        Read32 l[block_group];
        for (std::size_t g = 0; g < block_group; ++g) l[g].l = factor32.data() + offset(b0 + g);
        solve_blocks(l, r, z, f, m0);
      } else if (s == bfloat16) {
        Read16 l[block_group];
        for (std::size_t g = 0; g < block_group; ++g) l[g].l = factor16.data() + offset(b0 + g);
        solve_blocks(l, r, z, f, m0);
      } else {
        Read64 l[block_group];
        for (std::size_t g = 0; g < block_group; ++g) l[g].l = factor.data() + offset(b0 + g);
        solve_blocks(l, r, z, f, m0);
      }
      return;
    }
    for (std::size_t b = b0; b < b1; ++b) {
      const std::size_t fb = first(b), m = first(b + 1) - fb;
      const std::uint8_t sb = format_of(b);
      if (sb == binary32) solve_block(Read32{factor32.data() + offset(b)}, r, z, fb, m);
      else if (sb == bfloat16) solve_block(Read16{factor16.data() + offset(b)}, r, z, fb, m);
      else if (m == 1) z(fb) = factor(offset(b)) * r(fb);  // Jacobi: z_i = (1 / a_ii) r_i
      else solve_block(Read64{factor.data() + offset(b)}, r, z, fb, m);
    }
  }
};

#if EBLA_STORED_SIMD
namespace simd = detail::simd;

// The host form of apply: AVX-512 (F, VL, DQ, BW), every function inlined into groups_avx512.
#define EBLA_AVX512_INLINE \
  inline __attribute__((always_inline, target("avx512f,avx512vl,avx512dq,avx512bw,avx2,avx,f16c,bmi,bmi2")))

// Entries 8 e .. 8 e + 7 of an interleaved group's factor (block g's entry e in lane g),
// widened exactly to binary64: binary32 by vcvtps2pd, bfloat16 as the top half of binary32's
// bits (vpmovzxwd, vpslld 16), then vcvtps2pd.
EBLA_AVX512_INLINE simd::d8 lanes_at(const double* p, std::size_t e) {
  return reinterpret_cast<simd::d8>(_mm512_loadu_pd(p + 8 * e));
}
EBLA_AVX512_INLINE simd::d8 lanes_at(const float* p, std::size_t e) {
  return reinterpret_cast<simd::d8>(_mm512_cvtps_pd(_mm256_loadu_ps(p + 8 * e)));
}
EBLA_AVX512_INLINE simd::d8 lanes_at(const std::uint16_t* p, std::size_t e) {
  const __m256i bits = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * e))), 16);
  return reinterpret_cast<simd::d8>(_mm512_cvtps_pd(_mm256_castsi256_ps(bits)));
}

// solve_interleaved for Q interleaved groups of m-row blocks at once, each group's eight
// lanes in one vector: w[q][i] holds row i of group q's eight blocks. Each lane takes
// solve_interleaved's operations in its order (a product, then a difference, each rounded:
// no FMA, this file is compiled with -ffp-contract=off), so the same bits; the Q groups'
// chains of dependent differences interleave, which the processor overlaps (one group's
// chain alone leaves it waiting on each difference).
template <int Q, class T>
EBLA_AVX512_INLINE void solve_interleaved_simd(const T* const (&l)[Q], const ConstVector& r, const Vector& z,
                                               const std::size_t (&f0)[Q], std::size_t m) {
  constexpr std::size_t G = block_group;
  simd::d8 w[Q][interleave_rows];
  for (int q = 0; q < Q; ++q)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t g = 0; g < G; ++g) w[q][i][g] = r(f0[q] + g * m + i);
  for (std::size_t i = 0; i < m; ++i) {  // L y = r_b
    simd::d8 s[Q];
    for (int q = 0; q < Q; ++q) s[q] = w[q][i];
    for (std::size_t k = 0; k < i; ++k)
      for (int q = 0; q < Q; ++q) s[q] -= lanes_at(l[q], i * (i + 1) / 2 + k) * w[q][k];
    for (int q = 0; q < Q; ++q) w[q][i] = s[q] / lanes_at(l[q], i * (i + 1) / 2 + i);
  }
  for (std::size_t i = m; i-- > 0;) {    // L^T z_b = y
    simd::d8 s[Q];
    for (int q = 0; q < Q; ++q) s[q] = w[q][i];
    for (std::size_t k = i + 1; k < m; ++k)
      for (int q = 0; q < Q; ++q) s[q] -= lanes_at(l[q], k * (k + 1) / 2 + i) * w[q][k];
    for (int q = 0; q < Q; ++q) w[q][i] = s[q] / lanes_at(l[q], i * (i + 1) / 2 + i);
  }
  for (int q = 0; q < Q; ++q)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t g = 0; g < G; ++g) z(f0[q] + g * m + i) = w[q][i][g];
}

// Groups per work item of the host form.
constexpr std::size_t simd_groups = 4;

// The Q interleaved groups from `group` in one solve_interleaved_simd, their factors in the
// array of format s.
template <int Q>
EBLA_AVX512_INLINE void solve_groups_simd(const ApplyGroups& a, std::size_t group, std::uint8_t s, std::size_t m) {
  std::size_t f0[Q], at[Q];
  for (int q = 0; q < Q; ++q) {
    f0[q] = a.first((group + q) * block_group);
    at[q] = a.offset((group + q) * block_group);
  }
  if (s == static_cast<std::uint8_t>(Storage::binary32)) {
    const float* l[Q];
    for (int q = 0; q < Q; ++q) l[q] = a.factor32.data() + at[q];
    solve_interleaved_simd<Q>(l, a.r, a.z, f0, m);
  } else if (s == static_cast<std::uint8_t>(Storage::bfloat16)) {
    const std::uint16_t* l[Q];
    for (int q = 0; q < Q; ++q) l[q] = a.factor16.data() + at[q];
    solve_interleaved_simd<Q>(l, a.r, a.z, f0, m);
  } else {
    const double* l[Q];
    for (int q = 0; q < Q; ++q) l[q] = a.factor.data() + at[q];
    solve_interleaved_simd<Q>(l, a.r, a.z, f0, m);
  }
}

// A work item of apply in the host form: the simd_groups groups from simd_groups * item, all
// interleaved with one size and format in one solve, else each interleaved one in vectors
// and the others as ApplyGroups does them.
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,avx,f16c,bmi,bmi2"))) void groups_avx512(
    const ApplyGroups& a, std::size_t item) {
  const std::size_t groups = (a.blocks + block_group - 1) / block_group, g0 = item * simd_groups;
  std::size_t m[simd_groups] = {};
  std::uint8_t s[simd_groups] = {};
  bool together[simd_groups] = {};
  bool all = g0 + simd_groups <= groups;
  for (std::size_t q = 0; q < simd_groups && g0 + q < groups; ++q) {
    together[q] = a.alike(g0 + q, m[q], s[q]) && m[q] <= interleave_rows;
    all = all && together[q] && m[q] == m[0] && s[q] == s[0];
  }
  if (all) return solve_groups_simd<simd_groups>(a, g0, s[0], m[0]);
  for (std::size_t q = 0; q < simd_groups && g0 + q < groups; ++q) {
    if (together[q]) solve_groups_simd<1>(a, g0 + q, s[q], m[q]);
    else a(g0 + q);
  }
}
#endif

}  // namespace

void BlockJacobi::apply(ConstVector r, Vector z) const {
  detail::check_apply_sizes("ebla::BlockJacobi::apply", r, z, n_);
  const ApplyGroups groups{first_, offset_, format_, factor_, factor32_, factor16_, blocks_, r, z};
  using Range = Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>;
  const std::size_t count = (blocks_ + block_group - 1) / block_group;
  const Range all(0, count);
  // on the host, blocks whose rows make one chunk of the update passes (parallel.hpp: n <= 4096)
  // are solved on the calling thread, as those passes run such a vector: a few microseconds of
  // work, less than starting and joining the threads costs
  constexpr bool host = std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace>;
  const bool here = host && detail::chunk_count(n_, detail::stream_chunk(n_)) <= 1;
#if EBLA_STORED_SIMD
  if constexpr (host) {
    const detail::HostIsa isa = detail::stored_isa();
    const std::size_t items = (count + simd_groups - 1) / simd_groups;
    if (isa == detail::HostIsa::avx512) {  // (AVX2 alone: the generic form, faster there)
      if (here)
        for (std::size_t i = 0; i < items; ++i) groups_avx512(groups, i);
      else
        Kokkos::parallel_for("ebla::block_jacobi", Range(0, items), [=](const std::size_t i) { groups_avx512(groups, i); });
      return;
    }
  }
#endif
  if (here)
    for (std::size_t i = 0; i < count; ++i) groups(i);
  else
    Kokkos::parallel_for("ebla::block_jacobi", all, groups);
}

}  // namespace ebla
