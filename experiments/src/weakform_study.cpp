#include <ebla/experiments/weakform_study.hpp>

#include <ebla/core/norm2.hpp>
#include <ebla/core/rounding.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace ebla::experiments {

namespace {

using Quad = __float128;
Quad magnitude(Quad x) { return x < 0 ? -x : x; }

std::vector<WeakformLayer> evaluate(const WeakformSpec& c, const WeakformData& d, const WeakformView3& result,
                                    const WeakformBounds& b) {
  std::vector<WeakformLayer> layers(c.nk);
  for (std::size_t k = 0; k < c.nk; ++k) {
    WeakformLayer& L = layers[k];
    std::vector<double> col(c.nj, 0.0), col_low(c.nj, 0.0), errors, lows;
    double row_low_max = 0;
    for (std::size_t i = 0; i < c.ni; ++i) {
      double row = 0, row_low = 0;
      for (std::size_t j = 0; j < c.nj; ++j) {
        Quad exact = d.A(i, j, k), size = magnitude(d.A(i, j, k));
        for (std::size_t l = 0; l < c.n; ++l) {
          const Quad p = static_cast<Quad>(d.B(i, l, k)) * d.C(j, l);
          exact += p;
          size += magnitude(p);
        }
        const Quad own = static_cast<Quad>(c.n + 2) * size * static_cast<Quad>(0x1p-112);
        const Quad observed = magnitude(static_cast<Quad>(result(i, j, k)) - exact);
        const double e = static_cast<double>(observed);
        const double low = observed > own ? static_cast<double>(observed - own) : 0.0;  // certainly this much
        const double bound = b.componentwise(i, j, k);
        if (std::isfinite(bound) && !(low <= bound)) ++L.violations;  // infinite: no guarantee
        if (bound > 0 && std::isfinite(bound)) L.max_ratio = std::max(L.max_ratio, e / bound);
        if (!(low <= b.paper(i, j, k))) ++L.paper_exceeded;
        row += e;
        row_low += low;
        col[j] += e;
        col_low[j] += low;
        errors.push_back(e);
        lows.push_back(low);
      }
      L.errinf = std::max(L.errinf, row);
      row_low_max = std::max(row_low_max, row_low);
    }
    L.err1 = *std::max_element(col.begin(), col.end());
    // Frobenius norms scaled (norm2): wide data's squares overflow binary64
    L.errf = norm2([&](auto add) {
      for (double e : errors) add(e);
    });
    const double fro_low = norm2_lower([&](auto add) {
      for (double low : lows) add(low);
    });
    const double down = 1 - static_cast<double>(c.ni + c.nj + 4) * 0x1p-52;
    const WeakformLayerBound& B = b.layers[k];
    if (std::isfinite(B.bound1))  // the three are finite together
      L.violations += !(*std::max_element(col_low.begin(), col_low.end()) * down <= B.bound1) +
                      !(row_low_max * down <= B.bound_inf) + !(fro_low <= B.bound_f);
  }
  return layers;
}

}  // namespace

WeakformData draw_weakform_data(const WeakformSpec& c) {
  WeakformData d{WeakformView3("A", c.ni, c.nj, c.nk), WeakformView3("B", c.ni, c.n, c.nk),
                 WeakformView2("C", c.nj, c.n)};
  std::mt19937_64 gen(c.seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0), sym(-1.0, 1.0);
  std::bernoulli_distribution coin(0.5);
  const Format& in = c.unit.input;
  const Format& acc = c.unit.accumulation;
  // wide: exponents over the input range, products and sums kept inside the accumulation range;
  // tiny: around the input format's underflow threshold, subnormals included
  const int wide_lo = in.emin + 2, wide_hi = std::min(in.emax, acc.emax / 2) - 6;
  std::uniform_int_distribution<int> wide_exp(wide_lo, std::max(wide_lo, wide_hi));
  std::uniform_int_distribution<int> tiny_exp(in.emin - in.t, in.emin + 2);
  auto value = [&]() -> double {
    switch (c.distribution) {
      case WeakformDistribution::uniform:
      case WeakformDistribution::cancellation: return sym(gen);
      case WeakformDistribution::positive: return u01(gen);
      case WeakformDistribution::wide: return (coin(gen) ? -1 : 1) * (1 + u01(gen)) * std::ldexp(1.0, wide_exp(gen));
      case WeakformDistribution::tiny: return (coin(gen) ? -1 : 1) * (1 + u01(gen)) * std::ldexp(1.0, tiny_exp(gen));
    }
    return 0;
  };
  auto input = [&] { return c.in_format ? round_to(value(), in, Rounding::nearest_even) : value(); };
  for (std::size_t j = 0; j < c.nj; ++j)
    for (std::size_t l = 0; l < c.n; ++l) d.C(j, l) = input();
  for (std::size_t k = 0; k < c.nk; ++k)
    for (std::size_t i = 0; i < c.ni; ++i) {
      for (std::size_t l = 0; l < c.n; ++l) d.B(i, l, k) = input();
      for (std::size_t j = 0; j < c.nj; ++j) d.A(i, j, k) = value();
    }
  // cancellation: A0 = -(B C^T) as the kernel reads B and C, so that the result is tiny
  if (c.distribution == WeakformDistribution::cancellation)
    for (std::size_t k = 0; k < c.nk; ++k)
      for (std::size_t i = 0; i < c.ni; ++i)
        for (std::size_t j = 0; j < c.nj; ++j) {
          Quad s = 0;
          for (std::size_t l = 0; l < c.n; ++l)
            s += static_cast<Quad>(round_to(d.B(i, l, k), in, Rounding::nearest_even)) *
                 round_to(d.C(j, l), in, Rounding::nearest_even);
          d.A(i, j, k) = -static_cast<double>(s);
        }
  if (c.in_format)
    for (std::size_t k = 0; k < c.nk; ++k)
      for (std::size_t i = 0; i < c.ni; ++i)
        for (std::size_t j = 0; j < c.nj; ++j) d.A(i, j, k) = round_to(d.A(i, j, k), acc, Rounding::nearest_even);
  return d;
}

long WeakformResult::violations() const {
  long v = 0;
  for (const WeakformLayer& L : layers) v += L.violations;
  return v;
}

long WeakformResult::paper_exceeded() const {
  long v = 0;
  for (const WeakformLayer& L : layers) v += L.paper_exceeded;
  return v;
}

WeakformResult weakform_study(const WeakformSpec& spec) {
  constexpr std::size_t steps = 3;
  report(spec.progress, 0, steps, "drawing the data");
  const WeakformData d = draw_weakform_data(spec);
  WeakformResult r;
  report(spec.progress, 1, steps, "bounds and kernel");
  r.bounds = weakform_bounds(spec.unit, d.A, d.B, d.C);
  WeakformView3 result("result", spec.ni, spec.nj, spec.nk);
  Kokkos::deep_copy(result, d.A);
  weakform(spec.unit, result, d.B, d.C);
  report(spec.progress, 2, steps, "errors against the exact A0 + B C");
  r.layers = evaluate(spec, d, result, r.bounds);
  report(spec.progress, steps, steps, "done");
  return r;
}

}  // namespace ebla::experiments
