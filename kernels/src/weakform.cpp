#include <ebla/kernels/weakform.hpp>

#include <ebla/core/bounds.hpp>
#include <ebla/core/norm2.hpp>
#include <ebla/kernels/gemm.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace ebla {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

std::string shape(std::size_t a, std::size_t b, std::size_t c) {
  return std::to_string(a) + " x " + std::to_string(b) + " x " + std::to_string(c);
}

/// Whether every operation of the unit rounds exactly once, in the accumulation format's own
/// precision (the r-roundings bound, docs/weakform.md): products exact or rounded one at a time
/// (block 1, each_addition), nothing dropped in alignment, the addend with the products, one
/// chain, sums of t_acc bits. Other units take the general bound.
bool rounds_once(const MatrixUnit& u) {
  const bool products = u.exact_products || (u.block == 1 && u.normalisation == Normalisation::each_addition);
  const bool precision = u.sum_precision == 0 || u.sum_precision == u.accumulation.t;
  return products && precision && u.extra_bits == MatrixUnit::unbounded &&
         u.addend == AddendJoin::with_products && u.chains == 1;
}

/// Absolute error of underflow when rounding to f: half the subnormal spacing to nearest, the
/// spacing toward zero, fmin when subnormals are flushed (results) or read as zero (inputs).
double underflow_error(const Format& f, bool nearest, bool subnormals) {
  if (!subnormals || !f.subnormals) return f.fmin();
  const double spacing = std::ldexp(1.0, f.emin - f.t + 1);
  return nearest ? spacing / 2 : spacing;
}

/// The precision T_s of the unit's sums: sum_precision, or the accumulation format's t.
int sum_precision(const MatrixUnit& u) {
  return u.sum_precision != 0 ? u.sum_precision : u.accumulation.t;
}

/// What the bound of an entry needs of its accumulation s_hat = chain(s0; p_1, ..., p_n), the
/// p_l the products as the unit forms them and s0 the addend as it reads A0:
///   |s_hat - (s0 + sum p_l)| <= g (|s0| + sum |p_l|) + absolute   (+ the entry's own loss)
struct Accumulation {
  double g = 0;         ///< gamma_r (r roundings), or (1 + delta)^d - 1 (general)
  double absolute = 0;  ///< r eta_s (1 + gamma_r), or N G (1 + g) for inputs without subnormals
  /// General units aligned on exponent sums with subnormal inputs: an operation whose E is the
  /// exponent sum of a product with a subnormal factor loses an absolute < (b + 1)
  /// 2^(E - T_s + 1 - extra_bits) (docs/gemm.md): loss 2^E in all, at most cap - absolute.
  bool subnormal_alignment = false;
  double loss = 0;  ///< N (b + 1) 2^(1 - T_s - extra_bits) (1 + g)
  double cap = 0;   ///< N G (1 + g) of the model with subnormal inputs (E <= emin + emax)
};

/// The r-roundings accumulation (rounds_once units): seed 004's model with r roundings of u_s.
Accumulation once_accumulation(const MatrixUnit& unit, std::size_t n, WeakformBounds& r) {
  const bool nearest = unit.rounding == Rounding::nearest_even;
  // r: roundings per entry. An FMA chain (and any each_addition unit with one chain) rounds
  // once per product: the padding +0 * +0 products of a short last block leave the sum exact.
  // An at_end unit rounds once per operation of b products.
  const std::size_t block = static_cast<std::size_t>(unit.block);
  const std::size_t roundings =
      unit.normalisation == Normalisation::at_end ? (n + block - 1) / block : n;
  r.roundings = static_cast<int>(roundings);
  // Correction (directed rounding): toward zero, |delta| < 2^(1 - t), twice the unit roundoff
  // of rounding to nearest that the seed's (1) assumes.
  r.unit_roundoff = std::ldexp(1.0, nearest ? -unit.accumulation.t : 1 - unit.accumulation.t);
  r.gamma = bounds::gamma(static_cast<double>(roundings), r.unit_roundoff);
  // Correction (underflow): every rounding of a sum may add an absolute error eta_s that the
  // relative model (1) does not have: r eta_s (1 + gamma_r) in all.
  const double eta_s = underflow_error(unit.accumulation, nearest, unit.output_subnormals);
  r.delta = r.unit_roundoff;
  r.depth = r.steps = static_cast<double>(roundings);
  r.underflow = r.underflow_subnormal = eta_s;
  Accumulation a;
  a.g = r.gamma;
  a.absolute = static_cast<double>(roundings) * eta_s * (1 + a.g);
  a.cap = a.absolute;
  return a;
}

/// The general accumulation: gemm's certified model of the unit (gemm.hpp, docs/gemm.md:
/// delta per step of the sum of its operands' magnitudes, truncation included; d steps from a
/// leaf to the result; N steps of absolute error G), its tree lemma applied with A0's s0 as one
/// more leaf. s0 joins no earlier than the first operation's products, so its path is at most
/// d steps too. Products are taken exact in the model; a rounded product is a leaf of its own
/// (u_p, eta_p in the caller, as for the r-roundings bound).
Accumulation general_accumulation(const MatrixUnit& unit, std::size_t n, WeakformBounds& r) {
  GemmConfig config;
  config.engine = GemmEngine::emulated;
  config.input = unit.input;
  config.unit = unit;
  config.unit.exact_products = true;
  const auto k = static_cast<std::int64_t>(n);
  const AccumulationModel all = accumulation_model(config, k);
  // The unit reading no subnormal input: DAZ changes only how a subnormal input is read, so on
  // an entry with none the operations are the same; its model has no E <= emin + emax term.
  config.unit.input_subnormals = false;
  const AccumulationModel normal = accumulation_model(config, k);
  const int ts = sum_precision(unit);
  r.general = true;
  r.unit_roundoff = std::ldexp(1.0, unit.rounding == Rounding::nearest_even ? -ts : 1 - ts);
  r.delta = all.delta;
  r.depth = all.depth;
  r.steps = all.steps;
  r.roundings = static_cast<int>(all.steps);
  r.underflow = normal.G;
  r.underflow_subnormal = all.G;
  r.gamma = bounds::growth(all.delta, all.depth);  // g = (1 + delta)^d - 1 (docs/gemm.md, Lemma)
  Accumulation a;
  a.g = r.gamma;
  a.absolute = normal.steps * normal.G * (1 + a.g);  // N G (1 + g)
  a.cap = all.steps * all.G * (1 + a.g);
  a.subnormal_alignment = unit.normalisation == Normalisation::at_end &&
                          unit.alignment == Alignment::exponent_sum && unit.input_subnormals &&
                          unit.extra_bits != MatrixUnit::unbounded;
  if (a.subnormal_alignment)
    a.loss = all.steps * (unit.block + 1) * std::ldexp(1.0, 1 - ts - unit.extra_bits) * (1 + a.g);
  return a;
}

/// The largest value of T_s bits in the accumulation's range: a sum above it may round (to
/// nearest at T_s < t bits) to 2^(emax + 1) and overflow, below the format's own fmax.
double sums_fmax(const MatrixUnit& u) {
  const double top = std::ldexp(2 - std::ldexp(1.0, 1 - sum_precision(u)), u.accumulation.emax);
  return std::min(u.accumulation.fmax(), top);
}

/// The inputs as the unit reads them, for the alignment of exponent-sum units: each value's
/// exponent (format_exponent: emin for a subnormal; no_exponent for zero or non-finite) and
/// whether it is subnormal.
constexpr int no_exponent = std::numeric_limits<int>::min();
struct ReadInputs {
  std::vector<int> exponent;
  std::vector<char> subnormal;
  void resize(std::size_t size) {
    exponent.assign(size, no_exponent);
    subnormal.assign(size, 0);
  }
  void set(std::size_t at, double read, const Format& input) {
    if (read == 0 || !detail::is_finite(read)) return;
    exponent[at] = detail::format_exponent(read, input.emin);
    subnormal[at] = std::fabs(read) < input.fmin();
  }
};

/// The largest exponent sum e_b + e_c over the entry's products with a subnormal factor (the
/// alignment exponent they give an operation), or no_exponent if there is none. Zero products
/// are left out of the alignment by the unit.
int subnormal_exponent(const ReadInputs& b, std::size_t b_row, const ReadInputs& c,
                       std::size_t c_row, std::size_t n) {
  int e = no_exponent;
  for (std::size_t l = 0; l < n; ++l) {
    const int eb = b.exponent[b_row + l], ec = c.exponent[c_row + l];
    if (eb != no_exponent && ec != no_exponent && (b.subnormal[b_row + l] || c.subnormal[c_row + l]))
      e = std::max(e, eb + ec);
  }
  return e;
}

/// The absolute accumulation term of one entry: `absolute`, or, where a product with a
/// subnormal factor may set an operation's alignment exponent, that loss too (at most cap).
double entry_absolute(const Accumulation& a, int exponent) {
  if (!a.subnormal_alignment || exponent == no_exponent) return a.absolute;
  return std::min(a.cap, a.absolute + std::ldexp(a.loss, exponent) + 0x1p-1074);
}

}  // namespace

namespace detail {

void check_weakform(const char* function, const MatrixUnit& unit, std::size_t ani,
                    std::size_t anj, std::size_t ank, std::size_t bni, std::size_t bn,
                    std::size_t bnk, std::size_t cnj, std::size_t cn) {
  validate(unit, function);
  if (ani != bni || ank != bnk || anj != cnj || bn != cn)
    throw_invalid(function, "A is " + shape(ani, anj, ank) + ", B is " + shape(bni, bn, bnk) +
                                ", C is " + std::to_string(cnj) + " x " + std::to_string(cn) +
                                "; need ni x nj x nk, ni x n x nk and nj x n");
}

void throw_nonfinite(const char* function, const char* name, std::size_t i, std::size_t j,
                     std::size_t k, double value) {
  std::ostringstream s;
  s << name << "(" << i << ", " << j;
  if (k != ~std::size_t{0}) s << ", " << k;
  s << ") = " << value << " is not finite";
  throw_invalid(function, s.str());
}

}  // namespace detail

MatrixUnit weakform_unit(const Format& input, const Format& accumulation, Rounding rounding,
                         const std::optional<Format>& product) {
  MatrixUnit u;
  u.block = 1;
  u.input = input;
  u.accumulation = accumulation;
  u.rounding = rounding;
  u.normalisation = Normalisation::each_addition;
  if (product) {  // fl(s + fl(b c)): the seed's model (1)-(2)
    u.exact_products = false;
    u.product = *product;
  }
  validate(u, "ebla::weakform_unit");
  return u;
}

WeakformBounds weakform_bounds(const MatrixUnit& unit,
                               const Kokkos::View<const double***, Kokkos::HostSpace>& A,
                               const Kokkos::View<const double***, Kokkos::HostSpace>& B,
                               const Kokkos::View<const double**, Kokkos::HostSpace>& C) {
  const char* function = "ebla::weakform_bounds";
  detail::check_weakform(function, unit, A.extent(0), A.extent(1), A.extent(2), B.extent(0),
                         B.extent(1), B.extent(2), C.extent(0), C.extent(1));
  detail::check_finite(function, "A", A);
  detail::check_finite(function, "B", B);
  detail::check_finite(function, "C", C);
  const std::size_t ni = A.extent(0), nj = A.extent(1), nk = A.extent(2), n = B.extent(1);
  const detail::PreparedUnit p = detail::prepare(unit);

  WeakformBounds r;
  // The accumulation: r single roundings where every operation rounds once (the tighter
  // bound), else the general unit's model (docs/weakform.md, "Every unit").
  const Accumulation acc =
      rounds_once(unit) ? once_accumulation(unit, n, r) : general_accumulation(unit, n, r);
  // The seed's gamma_{n+1} (an inner product of length n + 1, each product rounded before its
  // addition): for an FMA chain it overcounts by one rounding, so gamma_r <= gamma_{n+1} there.
  r.paper_gamma = bounds::gamma(static_cast<double>(n + 1), unit.accumulation.u());
  const double g = acc.g;

  // Absolute errors of underflow: inputs (rounded to nearest, or read as zero), the initial A
  // (rounded to nearest into the accumulation format, or a subnormal read as zero: up to fmin).
  const double eta_in = underflow_error(unit.input, true, unit.input_subnormals);
  const double eta_a = underflow_error(unit.accumulation, true, unit.input_subnormals);
  const double u_in = unit.input.u(), u_a = unit.accumulation.u();
  // Products rounded to nearest in their format (subnormals kept): u_p and eta_p per product.
  const double u_p = unit.exact_products ? 0.0 : unit.product.u();
  const double eta_p = unit.exact_products ? 0.0 : underflow_error(unit.product, true, true);
  r.product_roundoff = u_p;
  // Correction (overflow): beyond fmax the relative model fails (inputs and sums become
  // infinite, NaN or, in saturating formats, +-fmax); such data get an infinite bound.
  // (A rounded product beyond its format's fmax overflows too: the smaller fmax counts; so do
  // sums of T_s < t bits rounded to nearest, above the largest T_s-bit value.)
  const double fmax_in = unit.input.fmax();
  const double fmax = unit.exact_products ? sums_fmax(unit) : std::min(sums_fmax(unit), unit.product.fmax());
  // The bounds are evaluated in binary64; every sum of m nonnegative terms rounded to nearest
  // is at most gamma_m (binary64) below the exact one. Inflating by `slack` (and an absolute
  // 2^-1074 per term for products below binary64's range) keeps them upper bounds. The longest
  // sums: n + nj terms (rows of B'), ni (columns of B' and of the bounds), n (|B| |C|^T).
  const std::size_t terms = std::max(n + nj, ni);
  const double slack = 1 + static_cast<double>(4 * terms + 16) * 0x1p-53;
  const double tiny = static_cast<double>(2 * n + 4) * 0x1p-1074;
  const double subnormal_margin = static_cast<double>(4 * (terms + ni + nj) + 16) * 0x1p-1074;

  // Whether the data are in the unit's formats (then their rounding is exact: no u_in, eta_in).
  std::vector<char> c_row_exact(nj, 1);
  std::vector<double> c_row_sum(nj, 0.0), c_col_sum(n, 0.0);
  ReadInputs c_read, b_read;  // for the alignment of exponent-sum units with subnormal inputs
  if (acc.subnormal_alignment) c_read.resize(nj * n);
  bool c_exact = true, c_overflows = false;
  for (std::size_t j = 0; j < nj; ++j)
    for (std::size_t l = 0; l < n; ++l) {
      const double v = C(j, l), q = detail::prepare_input(p, v);
      c_exact = c_exact && q == v;
      c_overflows = c_overflows || !detail::is_finite(q) || !(std::fabs(v) <= fmax_in);
      c_row_sum[j] += std::fabs(v);
      c_col_sum[l] += std::fabs(v);
      if (acc.subnormal_alignment) c_read.set(j * n + l, q, unit.input);
    }
  // C' = [C^T ; I_nj]: column j holds C(j, :) and a one; row l < n holds C(:, l), the rest
  // are rows of the identity.
  double c1 = 0, cinf = nj > 0 ? 1.0 : 0.0;
  for (std::size_t j = 0; j < nj; ++j) c1 = std::max(c1, c_row_sum[j] + 1);
  for (std::size_t l = 0; l < n; ++l) cinf = std::max(cinf, c_col_sum[l]);
  r.norm_c1 = c1 * slack;
  r.norm_cinf = cinf * slack;
  // Frobenius norms scaled (norm2_upper), so that data near the range's ends neither overflow
  // nor underflow in their squares
  r.norm_cf = norm2_upper([&](auto add) {
    for (std::size_t j = 0; j < nj; ++j) {
      for (std::size_t l = 0; l < n; ++l) add(C(j, l));
      add(1.0);
    }
  });

  r.componentwise = Kokkos::View<double***, Kokkos::HostSpace>("weakform bound (14')", ni, nj, nk);
  r.paper = Kokkos::View<double***, Kokkos::HostSpace>("weakform bound (14)", ni, nj, nk);
  r.layers.resize(nk);
  std::vector<double> t_entry(ni * nj), b_row_sum(ni), bp_col(n + nj), bp_row(ni);
  if (acc.subnormal_alignment) b_read.resize(ni * n);
  for (std::size_t k = 0; k < nk; ++k) {
    // the layer's data: in the formats, and overflowing when rounded
    bool b_exact = true, a_exact = true, overflows = c_overflows;
    std::fill(bp_col.begin(), bp_col.end(), 0.0);
    for (std::size_t i = 0; i < ni; ++i) {
      b_row_sum[i] = 0;
      bp_row[i] = 0;
      for (std::size_t l = 0; l < n; ++l) {
        const double v = B(i, l, k), q = detail::prepare_input(p, v);
        b_exact = b_exact && q == v;
        overflows = overflows || !detail::is_finite(q) || !(std::fabs(v) <= fmax_in);
        b_row_sum[i] += std::fabs(v);
        bp_col[l] += std::fabs(v);
        if (acc.subnormal_alignment) b_read.set(i * n + l, q, unit.input);
      }
      bp_row[i] = b_row_sum[i];
      for (std::size_t j = 0; j < nj; ++j) {
        const double v = A(i, j, k), q = detail::prepare_addend(p, v);
        a_exact = a_exact && q == v;
        overflows = overflows || !detail::is_finite(q) || !(std::fabs(v) <= fmax);
        bp_row[i] += std::fabs(v);
        bp_col[n + j] += std::fabs(v);
      }
    }
    // Correction (inputs): the kernel rounds B and C to the input format and A0 to the
    // accumulation format; the seed assumes them in the format. Their rounding errors
    // |x_hat - x| <= u |x| + eta enter as (1 + u_in)^2 on the products, (1 + u_a) on A0 and the
    // eta terms of T.
    const bool inputs_exact = b_exact && c_exact;
    const double ui = inputs_exact ? 0.0 : u_in, ei = inputs_exact ? 0.0 : eta_in;
    const double ua = a_exact ? 0.0 : u_a, ea = a_exact ? 0.0 : eta_a;
    const double kappa_p = (1 + g) * (1 + u_p) * (1 + ui) * (1 + ui) - 1;
    const double kappa_a = (1 + g) * (1 + ua) - 1;
    // Rounded products: each product's rounding, u_p |p| + eta_p, enters like an input's, so
    // the input terms of the products take (1 + u_p) and T has n eta_p (1 + g) more. The
    // accumulation's own absolute term (r eta_s (1 + gamma_r), or N G (1 + g)) comes per entry.
    const double t_inputs =
        (1 + g) * ((1 + u_p) * static_cast<double>(n) * ei * ei + static_cast<double>(n) * eta_p + ea);

    WeakformLayerBound& L = r.layers[k];
    L.kappa = std::max(kappa_p, kappa_a);
    double t1 = 0, tinf = 0, m1 = 0, minf = 0;
    std::vector<double> t_col(nj, 0.0), m_col(nj, 0.0);
    for (std::size_t i = 0; i < ni; ++i) {
      double t_row = 0, m_row = 0;
      for (std::size_t j = 0; j < nj; ++j) {
        double bc = 0;  // (|B(k)| |C|^T)_ij
        for (std::size_t l = 0; l < n; ++l) bc += std::fabs(B(i, l, k)) * std::fabs(C(j, l));
        bc = bc * slack + tiny;
        const double a0 = std::fabs(A(i, j, k));
        const double absolute = entry_absolute(
            acc, acc.subnormal_alignment ? subnormal_exponent(b_read, i * n, c_read, j * n, n) : no_exponent);
        const double t_const = t_inputs + absolute;
        const double t =
            ((1 + g) * (1 + u_p) * ei * (1 + ui) * (b_row_sum[i] + c_row_sum[j]) + t_const) * slack;
        const double bound = (kappa_p * bc + kappa_a * a0 + t) * slack;
        // Correction (overflow): the relative model needs every partial sum inside the range;
        // |s_hat| <= (1 + kappa)(|B'| |C'|)_ij + T_ij bounds them all.
        const bool in_range = !overflows && (1 + L.kappa) * (bc + a0) + t <= fmax;
        r.componentwise(i, j, k) = in_range ? bound : infinity;
        r.paper(i, j, k) = r.paper_gamma * (bc + a0);
        t_row += t;
        t_col[j] += t;
        t_entry[i * nj + j] = t;
        m_row += r.componentwise(i, j, k);
        m_col[j] += r.componentwise(i, j, k);
      }
      tinf = std::max(tinf, t_row);
      minf = std::max(minf, m_row);
    }
    for (std::size_t j = 0; j < nj; ++j) {
      t1 = std::max(t1, t_col[j]);
      m1 = std::max(m1, m_col[j]);
    }
    L.entry1 = m1 * slack;
    L.entry_inf = minf * slack;
    L.entry_f = norm2_upper([&](auto add) {
      for (std::size_t i = 0; i < ni; ++i)
        for (std::size_t j = 0; j < nj; ++j) add(r.componentwise(i, j, k));
    });
    L.norm_b1 = (bp_col.empty() ? 0.0 : *std::max_element(bp_col.begin(), bp_col.end())) * slack;
    L.norm_binf = (ni > 0 ? *std::max_element(bp_row.begin(), bp_row.end()) : 0.0) * slack;
    L.norm_bf = norm2_upper([&](auto add) {  // B'(k) = [B(k) | A0(k)]
      for (std::size_t i = 0; i < ni; ++i) {
        for (std::size_t l = 0; l < n; ++l) add(B(i, l, k));
        for (std::size_t j = 0; j < nj; ++j) add(A(i, j, k));
      }
    });
    bool finite = !overflows;
    for (std::size_t i = 0; i < ni && finite; ++i)
      for (std::size_t j = 0; j < nj && finite; ++j) finite = std::isfinite(r.componentwise(i, j, k));
    // Below 2^-1022 the relative slack does not cover binary64's roundings (each off by up to
    // 2^-1075): subnormal_margin covers those of the norm bounds and of the norms of (14') they bound.
    const auto norm_bound = [&](double nb, double nc, double nt) {
      return finite ? (L.kappa * nb * nc + nt * slack) * slack + subnormal_margin : infinity;
    };
    L.bound1 = norm_bound(L.norm_b1, r.norm_c1, t1);
    L.bound_inf = norm_bound(L.norm_binf, r.norm_cinf, tinf);
    L.bound_f = norm_bound(L.norm_bf, r.norm_cf, norm2_upper([&](auto add) {
                             for (double t : t_entry) add(t);
                           }));
    L.paper1 = r.paper_gamma * L.norm_b1 * r.norm_c1;
    L.paper_inf = r.paper_gamma * L.norm_binf * r.norm_cinf;
    L.paper_f = r.paper_gamma * L.norm_bf * r.norm_cf;
  }
  return r;
}

}  // namespace ebla
