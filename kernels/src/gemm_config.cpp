// The config of ebla::gemm as it runs (its formats settled, validated, described) and the
// accumulation model of its engine.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>
#include <ebla/kernels/gemm_host.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace ebla {

namespace {

bool contains_format(const Format& outer, const Format& inner) {
  return inner.t <= outer.t && inner.emin >= outer.emin && inner.emax <= outer.emax &&
         (outer.subnormals || !inner.subnormals ||
          inner.emin - inner.t + 1 >= outer.emin);  // inner subnormals normal in outer
}

}  // namespace

// ---- the config as it runs ------------------------------------------------------------------

namespace gemm_detail {

/// The config with its formats settled: the words' subnormals, the unit's input format.
GemmConfig settled(const GemmConfig& c) {
  GemmConfig s = c;
  if (s.engine == GemmEngine::dgemm) {
    s.input = formats::binary64();
    s.scaling = false;
    return s;
  }
  if (!s.subnormals) s.input.subnormals = false;
  if (s.engine == GemmEngine::emulated) {
    if (!s.subnormals) {
      s.unit.input_subnormals = false;
      s.unit.output_subnormals = false;
    }
    if (!s.unit.input_subnormals) s.input.subnormals = false;  // DAZ would flush subnormal words
    s.unit.input = s.input;
  }
  // VDPBF16PS reads bfloat16 subnormals as zero: such words are not made at all
  if (s.engine == GemmEngine::onednn_bf16 && s.input.subnormals &&
      s.input.emin - s.input.t + 1 < formats::bfloat16().emin)
    s.input.subnormals = false;
  return s;
}

Format accumulation_format(const GemmConfig& s) {
  switch (s.engine) {
    case GemmEngine::emulated: return s.unit.accumulation;
    case GemmEngine::dgemm: return formats::binary64();
    default: return formats::binary32();
  }
}

}  // namespace gemm_detail

using gemm_detail::accumulation_format;
using gemm_detail::settled;

const char* to_string(GemmEngine e) {
  switch (e) {
    case GemmEngine::emulated: return "emulated";
    case GemmEngine::sgemm: return "sgemm";
    case GemmEngine::onednn_bf16: return "onednn_bf16";
    case GemmEngine::dgemm: return "dgemm";
  }
  return "?";
}

GemmEngine gemm_engine_by_name(const std::string& name) {
  if (name == "emulated") return GemmEngine::emulated;
  if (name == "sgemm") return GemmEngine::sgemm;
  if (name == "onednn_bf16" || name == "onednn") return GemmEngine::onednn_bf16;
  if (name == "dgemm") return GemmEngine::dgemm;
  throw_invalid("ebla::gemm_engine_by_name",
                "unknown engine '" + name + "' (emulated, sgemm, onednn_bf16, dgemm)");
}

Format unbounded_range(const Format& f) {
  Format w = f;
  w.emin = -1022;
  w.emax = 1023;
  return w;
}

void validate(const GemmConfig& config, const char* function) {
  if (config.words < 1 || config.words > 3)
    throw_invalid(function, "words = " + std::to_string(config.words) + " is outside 1..3");
  if (!(config.failure > 0 && config.failure < 1))
    throw_invalid(function, "failure = " + std::to_string(config.failure) + " is outside (0, 1)");
  validate(config.input, function);
  const GemmConfig s = settled(config);
  switch (s.engine) {
    case GemmEngine::emulated:
      validate(s.unit, function);  // also: the accumulation format contains the input format
      break;
    case GemmEngine::sgemm:
      if (!contains_format(formats::binary32(), s.input))
        throw_invalid(function, "engine sgemm needs an input format inside binary32, not " +
                                    format_name(config.input));
      break;
    case GemmEngine::onednn_bf16:
      if (!contains_format(formats::bfloat16(), s.input))
        throw_invalid(function, "engine onednn_bf16 needs an input format inside bfloat16, not " +
                                    format_name(config.input));
      if (!host::gemm_engines().onednn_bf16)
        throw_invalid(function, "engine onednn_bf16: oneDNN does not run bfloat16 on this CPU");
      break;
    case GemmEngine::dgemm:
      if (config.words != 1)
        throw_invalid(function, "engine dgemm computes with one word, not words = " +
                                    std::to_string(config.words));
      break;
  }
}

std::string describe(const GemmConfig& config) {
  std::ostringstream s;
  if (config.engine == GemmEngine::dgemm) return "binary64 on dgemm";
  s << format_name(config.input) << " x" << config.words << " on " << to_string(config.engine);
  if (config.engine == GemmEngine::emulated) {
    // the preset the unit is, its input format aside (gemm replaces it); among presets that
    // differ only in their input format, the first with the config's
    auto same = [](const Format& x, const Format& y) {
      return x.t == y.t && x.emin == y.emin && x.emax == y.emax && x.subnormals == y.subnormals &&
             x.specials == y.specials && x.overflow == y.overflow;
    };
    std::string unit = "custom unit";
    bool input_matches = false;
    for (const auto& entry : matrix_unit_catalogue()) {
      MatrixUnit a = entry.unit, b = config.unit;
      a.input = b.input = Format{};
      if (to_string(a) != to_string(b)) continue;
      const bool matches = same(entry.unit.input, config.input);
      if (unit == "custom unit" || (matches && !input_matches)) {
        unit = entry.name;
        input_matches = matches;
      }
    }
    s << "(" << unit << ")";
  }
  if (!config.scaling) s << ", unscaled";
  if (!config.subnormals) s << ", no subnormals";
  return s.str();
}

// ---- the accumulation model -----------------------------------------------------------------

AccumulationModel accumulation_model(const GemmConfig& config, std::int64_t k) {
  const GemmConfig s = settled(config);
  const Format acc = accumulation_format(s);
  AccumulationModel m;
  m.T = acc.t;
  m.Fmax = acc.fmax();
  const double U = acc.u();
  const double K = static_cast<double>(k);
  if (s.engine != GemmEngine::emulated) {
    // any order: k products, at most k roundings from a product to the result (a product
    // rounding plus k - 1 additions, or k FMAs), at most 2k - 1 roundings in all
    m.delta = U;
    m.depth = K;
    m.steps = std::max(2 * K - 1, 0.0);
    // sgemm / onednn: flush to zero allowed (fmin); dgemm: gradual underflow (u fmin)
    m.G = s.engine == GemmEngine::dgemm ? U * acc.fmin() : acc.fmin();
    return m;
  }
  const MatrixUnit& u = s.unit;
  const bool nearest = u.rounding == Rounding::nearest_even;
  // the sums' precision T_s: the accumulation format's, or the unit's narrower sum_precision
  const int Ts = u.sum_precision != 0 ? u.sum_precision : acc.t;
  const double Us = std::ldexp(1.0, -Ts);
  const double Ur = nearest ? Us : 2 * Us;  // one rounding of a sum: u, or 2u toward zero
  const bool after = u.addend == AddendJoin::after_products;
  const double b = u.block, h = u.chains;
  const double q = std::ceil(K / b);  // unit operations per entry (seed 000 Algorithm 1)
  // operands of one multi-operand addition, and what alignment truncation loses of their sum
  // (b + 1 also covers the two-term addition of c after the products)
  const double operands = u.normalisation == Normalisation::at_end ? b + 1 : 2;
  // Aligned on exponent sums (docs/matrix-units.md), a product with a subnormal input x has
  // e_x = emin above log2 |x|. Where such a product sets the alignment exponent E, the other
  // input y gives 2^E = 2^(emin + e_y) <= 2^(emin + emax) (|y| < 2^(emax + 1)), and every operand
  // loses less than 2^(E - T_s + 1 - extra_bits): an absolute loss per operation (in G below),
  // not one relative to the largest term. Otherwise E is at most the largest term's leading
  // exponent, and the relative truncation term holds as for leading-bit alignment.
  const bool sums = u.normalisation == Normalisation::at_end &&
                    u.alignment == Alignment::exponent_sum && u.input_subnormals;
  const bool bounded = u.extra_bits != MatrixUnit::unbounded;
  const double truncation = !bounded ? 0 : operands * std::ldexp(1.0, 1 - Ts - u.extra_bits);
  // Seed 000's (7) gives every addition of a block its own (1 + delta) with delta <= U; a
  // unit that normalises at the end rounds once per block but truncates its operands first,
  // and a V100-like unit rounds toward zero: delta must cover both (docs/gemm.md).
  m.delta = Ur + truncation * (1 + Ur);
  // longest path from a product to the result, and the steps, per unit operation
  double depth_op = 1, steps_op = 1;
  if (u.normalisation == Normalisation::each_addition) {
    depth_op = std::ceil(b / h) + (h - 1);  // its chain, then the chains added in order
    steps_op = b + (h - 1);
  }
  if (after) {  // d = c + (sum of the products): one more addition
    depth_op += 1;
    steps_op += 1;
  }
  m.depth = q * depth_op;
  m.steps = q * steps_op;
  if (u.normalisation == Normalisation::each_addition && u.pairwise) {
    // a product passes the log2(b) additions of its tree, then the addition of c in its own
    // operation and in every later one (c, after the products, passes only those): the
    // longest path has log2(b) + q additions; b - 1 tree additions and c's per operation
    m.depth = std::log2(b) + q;
    m.steps = q * b;
    // without subnormal outputs, a product below fmin enters the tree as +-0: one more step
    // that may underflow (error < fmin = G, no relative error: not on d)
    if (!u.output_subnormals) m.steps += q * b;
  }
  m.G = u.output_subnormals ? Ur * acc.fmin() : acc.fmin();  // FTZ: anything below fmin
  if (bounded && u.normalisation == Normalisation::at_end) {
    // absolute alignment losses per operation, where E is not a leading exponent of a term:
    // E raised to the floor, E <= emin + emax of the input format (a subnormal input, above),
    // or E = emin of the accumulation format (a subnormal c, aligned on emin above its leading
    // bit): each operand loses < 2^(E - T_s + 1 - extra_bits), for the largest such E
    int E = std::numeric_limits<int>::min();
    if (u.alignment_floor != MatrixUnit::no_floor) E = u.alignment_floor;
    if (sums) E = std::max(E, u.input.emin + u.input.emax);
    if (u.alignment == Alignment::exponent_sum && u.addend == AddendJoin::with_products)
      E = std::max(E, acc.emin);
    if (E != std::numeric_limits<int>::min())
      m.G += operands * std::ldexp(1.0, E - Ts + 1 - u.extra_bits);
  }
  if (Ts < acc.t) m.G += Ur * std::ldexp(1.0, acc.emin);  // a subnormal sum of T_s bits
  if (!u.exact_products) {  // one more rounding (nearest, gradual underflow) per product
    // where the product format holds every product of two inputs (2 t_in <= t_p), the rounding
    // is exact but for underflow (G below) and overflow (Fmax below): no relative error
    if (2 * u.input.t > u.product.t) {
      m.delta = std::max(m.delta, u.product.u());
      m.depth += 1;
    }
    m.steps += q * b;
    m.G = std::max(m.G, u.product.u() * u.product.fmin());
    m.Fmax = std::min(m.Fmax, u.product.fmax());  // a product beyond it would saturate or overflow
  }
  m.unbiased = nearest && truncation == 0;
  if (k == 0) m.depth = m.steps = 0;
  return m;
}

}  // namespace ebla
