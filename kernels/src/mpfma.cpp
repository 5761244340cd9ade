// mpfma: presets, validation, the constants of the bounds, and the Kokkos kernel.
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/kernels/mpfma.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace ebla {

MpfmaConfig MpfmaConfig::fma(const Format& f, Rounding mode) {
  MpfmaConfig c;
  c.input = c.addend = c.product = c.sum = c.output = f;
  c.product_step = ProductStep::fused;
  c.rounding = mode;
  return c;
}

MpfmaConfig MpfmaConfig::mac(const Format& f, Rounding mode) {
  MpfmaConfig c = fma(f, mode);
  c.product_step = ProductStep::rounded;
  return c;
}

MpfmaConfig MpfmaConfig::mpfma(const Format& low, const Format& high, Rounding mode) {
  MpfmaConfig c = fma(high, mode);
  c.input = low;
  c.product_step = ProductStep::exact;
  return c;
}

bool holds_all_products(const Format& product, const Format& input) {
  // every product has at most 2 t_low significant bits (22 for binary16, not the 20 that seed
  // 000 section 3.2 states: correction 3 in mpfma.hpp) ...
  if (2 * input.t > product.t) return false;
  // ... its lowest bit is at least the square of the input's finest quantum ...
  const int finest_in = input.emin - input.t + 1;
  if (2 * finest_in < product.emin - product.t + 1) return false;
  // ... without subnormals, the smallest product must be normal ...
  const int smallest_in = input.subnormals ? finest_in : input.emin;
  if (!product.subnormals && 2 * smallest_in < product.emin) return false;
  // ... and the largest fits: fmax_low^2 = M^2 2^(2 (emax - t + 1)), M^2 < 2^53 exact
  const double m = std::ldexp(input.fmax(), input.t - 1 - input.emax);
  return std::ldexp(m * m, 2 * (input.emax - input.t + 1)) <= product.fmax();
}

bool contains(const Format& outer, const Format& inner) {
  return inner.t <= outer.t && inner.fmax() <= outer.fmax() &&
         inner.emin - inner.t + 1 >= outer.emin - outer.t + 1 &&
         (outer.subnormals || inner.smallest_positive() >= outer.fmin());
}

namespace {

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool is_binary64(const Format& f) { return f == formats::binary64(); }

}  // namespace

void validate(const MpfmaConfig& cfg, const char* function) {
  const std::string fn = function;
  validate(cfg.input, (fn + " (input format)").c_str());
  validate(cfg.addend, (fn + " (addend format)").c_str());
  if (cfg.product_step != ProductStep::fused) validate(cfg.product, (fn + " (product format)").c_str());
  validate(cfg.sum, (fn + " (sum format)").c_str());
  validate(cfg.output, (fn + " (output format)").c_str());
  if (!(cfg.failure > 0 && cfg.failure < 1))
    throw_invalid(fn, "failure probability " + str(cfg.failure) + " is outside (0, 1)");
  const Format& in = cfg.input;
  if (cfg.product_step == ProductStep::exact && !holds_all_products(cfg.product, in))
    throw_invalid(fn, "the product format " + format_name(cfg.product) +
                          " cannot hold every product of two " + format_name(in) +
                          " values exactly (needs t >= " + std::to_string(2 * in.t) +
                          " and the products' exponent range)");
  // what the emulation computes exactly (see the top of mpfma.hpp)
  const bool rn = cfg.rounding == Rounding::nearest_even;
  const bool rounded = cfg.product_step == ProductStep::rounded;
  const bool native_fma = cfg.product_step == ProductStep::fused && 2 * in.t > 53;
  const auto emulable = [&](const Format& f, const char* what) {
    if (f.t > 51 && !is_binary64(f))
      throw_invalid(fn, std::string("the ") + what + " format " + format_name(f) + " (t = " +
                            std::to_string(f.t) + ") is emulated exactly only for t <= 51 or binary64");
  };
  if (native_fma) {
    if (!(is_binary64(cfg.sum) && rn))
      throw_invalid(fn,
                    "a fused product of " + format_name(in) + " inputs (t = " + std::to_string(in.t) +
                        " > 26) is emulated only with a binary64 sum and round to nearest (std::fma), not " +
                        format_name(cfg.sum) + " " + to_string(cfg.rounding));
    return;
  }
  if (rounded) emulable(cfg.product, "product");
  emulable(cfg.sum, "sum");
  // exact products: TwoProd (or the double product) must be exact and finite
  if (!rounded || !(is_binary64(cfg.product) && rn)) {
    if (in.emin - in.t + 1 < -537)
      throw_invalid(fn, "products of " + format_name(in) +
                            " values can fall below 2^-1074 (needs emin - t + 1 >= -537, not " +
                            std::to_string(in.emin - in.t + 1) + ")");
    if (!std::isfinite(in.fmax() * in.fmax()))
      throw_invalid(fn, "products of " + format_name(in) +
                            " values can exceed binary64 (needs emax <= 511, not " + std::to_string(in.emax) +
                            ")");
  }
  // exact sums: TwoSum must not overflow
  if (!(is_binary64(cfg.sum) && rn)) {
    const double pmax = rounded ? std::min(cfg.product.fmax(), in.fmax() * in.fmax()) : in.fmax() * in.fmax();
    if (!std::isfinite(pmax + cfg.addend.fmax()))
      throw_invalid(fn, "sums of products and " + format_name(cfg.addend) + " values can exceed binary64");
  }
}

namespace detail {

MpfmaPlan mpfma_plan(const MpfmaConfig& cfg, const char* function) {
  validate(cfg, function);
  const bool rn = cfg.rounding == Rounding::nearest_even;
  const auto target = [](const Format& f) {
    return ExactTarget{rounding_constants(f), f.t, f.emin, f.subnormals, is_binary64(f)};
  };
  // |delta| <= u, |eta| <= gmin for round to nearest; twice both for directed and stochastic
  // rounding (the lemmas' u is round to nearest's: correction 2 in mpfma.hpp)
  const auto model = [rn](const Format& f) {
    const double scale = rn ? 1.0 : 2.0;
    const double gmin = std::ldexp(1.0, f.subnormals ? f.emin - f.t : f.emin - 1);
    return StepModel{scale * f.u(), scale * std::max(gmin, 0x1p-1074), f.fmin(), f.fmax()};
  };
  MpfmaPlan p{};
  p.input = target(cfg.input);
  p.addend = target(cfg.addend);
  p.product = target(cfg.product_step == ProductStep::fused ? cfg.sum : cfg.product);
  p.sum = target(cfg.sum);
  p.output = target(cfg.output);
  p.product_step = cfg.product_step;
  p.native_fma = cfg.product_step == ProductStep::fused && 2 * cfg.input.t > 53;
  p.output_rounds = !contains(cfg.output, cfg.sum);
  p.m_input = model(cfg.input);
  p.m_addend = model(cfg.addend);
  p.m_product = cfg.product_step == ProductStep::rounded ? model(cfg.product) : StepModel{};
  p.m_sum = model(cfg.sum);
  p.m_output = p.output_rounds ? model(cfg.output) : StepModel{};
  // Lemma 2.1 for the k inputs among a, b that were rounded; for the probabilistic version
  // (Lemmas 3.3, 3.6) Lemma 2.2's p_b (round to nearest: errors uniform on [-u, u], the seed's
  // VIBEA) or Higham and Mary's P(lambda) (stochastic rounding: errors only mean-zero)
  const double u = p.m_input.u;
  p.failure =
      cfg.rounding == Rounding::nearest_even || cfg.rounding == Rounding::stochastic ? cfg.failure : 0.0;
  for (int k = 0; k <= 2; ++k) {
    p.gamma_rep[k] = bounds::gamma(k, u);
    p.gamma_rep_prob[k] = p.gamma_rep[k];
    if (k == 0 || p.failure == 0) continue;
    const double lambda = cfg.rounding == Rounding::stochastic ? bounds::hm_lambda(cfg.failure, u)
                                                               : bounds::vibea_lambda(cfg.failure, u, k);
    p.gamma_rep_prob[k] = bounds::gamma_tilde(k, u, lambda);
    if (k == 2) p.lambda = lambda;
  }
  return p;
}

namespace {

template <Rounding mode>
struct MpfmaFunctor {
  Kokkos::View<const double*> a, b, c;
  Kokkos::View<double*> z, bound, probable;
  MpfmaPlan plan;
  std::uint64_t seed;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    const MpfmaValue v = mpfma_element<mode>(plan, a(i), b(i), c(i), seed, i);
    z(i) = v.z;
    bound(i) = v.bound;
    probable(i) = v.probable_bound;
  }
};

// Throws if x has a NaN or an infinity, naming the first one.
void check_finite(const Kokkos::View<const double*>& x, const char* name) {
  const std::size_t n = x.extent(0);
  std::size_t first = n;
  Kokkos::parallel_reduce(
      "ebla::mpfma(check)", Kokkos::RangePolicy<>(0, n),
      KOKKOS_LAMBDA(const std::size_t i, std::size_t& m) {
        if (!finite(x(i)) && i < m) m = i;
      },
      Kokkos::Min<std::size_t>(first));
  if (first >= n) return;
  double v = 0;
  Kokkos::deep_copy(v, Kokkos::subview(x, first));
  throw_invalid("ebla::mpfma",
                std::string(name) + "(" + std::to_string(first) + ") = " + str(v) + " is not finite");
}

}  // namespace
}  // namespace detail

MpfmaResult mpfma(const Kokkos::View<const double*>& a, const Kokkos::View<const double*>& b,
                  const Kokkos::View<const double*>& c, const MpfmaConfig& config, std::uint64_t seed) {
  const std::size_t n = a.extent(0);
  if (b.extent(0) != n || c.extent(0) != n)
    throw_invalid("ebla::mpfma", "a, b, c have " + std::to_string(n) + ", " + std::to_string(b.extent(0)) +
                                     ", " + std::to_string(c.extent(0)) + " elements");
  const detail::MpfmaPlan plan = detail::mpfma_plan(config, "ebla::mpfma");
  detail::check_finite(a, "a");
  detail::check_finite(b, "b");
  detail::check_finite(c, "c");
  MpfmaResult r;
  r.z = Kokkos::View<double*>(Kokkos::view_alloc("ebla::mpfma::z", Kokkos::WithoutInitializing), n);
  r.bound = Kokkos::View<double*>(Kokkos::view_alloc("ebla::mpfma::bound", Kokkos::WithoutInitializing), n);
  r.probable_bound = Kokkos::View<double*>(
      Kokkos::view_alloc("ebla::mpfma::probable_bound", Kokkos::WithoutInitializing), n);
  r.failure = plan.failure;
  r.lambda = plan.lambda;
  dispatch_rounding(config.rounding, [&](auto m) {
    Kokkos::parallel_for(
        "ebla::mpfma", Kokkos::RangePolicy<>(0, n),
        detail::MpfmaFunctor<decltype(m)::value>{a, b, c, r.z, r.bound, r.probable_bound, plan, seed});
  });
  return r;
}

}  // namespace ebla
