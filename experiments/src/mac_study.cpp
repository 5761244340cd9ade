#include <ebla/experiments/mac_study.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <random>

namespace ebla::experiments {

namespace {

Kokkos::View<const double*> to_view(const std::vector<double>& v, const char* name) {
  Kokkos::View<double*> d(std::string(name), v.size());
  Kokkos::deep_copy(d, Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(v.data(), v.size()));
  return d;
}

std::vector<double> to_vector(const Kokkos::View<double*>& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

using Quad = __float128;
Quad magnitude(Quad x) { return x < 0 ? -x : x; }

// d = a b + c is exact in __float128: for a, b, c in [1, 2] with at most 53 bits, a b has at
// most 106 bits from 2^1 down to 2^-104, and d < 8 needs bits 2^2 .. 2^-104: 107 <= 113. The
// difference d_hat - d is exact as well (d_hat, a double in [1, 16) near d, is a multiple of
// 2^-52), so each relative value is rounded once, in its division.
MacOutcome evaluate(const MacOperation& op, const MacSamples& s, const Kokkos::View<const double*>& a,
                    const Kokkos::View<const double*>& b, const Kokkos::View<const double*>& c,
                    std::uint64_t seed) {
  const MpfmaResult r = mpfma(a, b, c, op.config, seed);
  const std::vector<double> z = to_vector(r.z), bound = to_vector(r.bound), probable = to_vector(r.probable_bound);
  MacOutcome o;
  o.failure = r.failure;
  o.lambda = r.lambda;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const Quad d = static_cast<Quad>(s.a[i]) * s.b[i] + s.c[i];
    const Quad err = magnitude(static_cast<Quad>(z[i]) - d);
    // the three divided by the same |d| and rounded once: error <= bound gives error <= dbea
    const auto relative = [&](Quad x) { return static_cast<double>(x / magnitude(d)); };
    o.error.add(relative(err));
    o.dbea.add(relative(bound[i]));
    o.vibea.add(relative(probable[i]));
    // compared absolutely and exactly; an infinite bound (overflow) states nothing
    if (!(std::isinf(bound[i]) || err <= static_cast<Quad>(bound[i]))) ++o.violations;
    if (!(std::isinf(probable[i]) || err <= static_cast<Quad>(probable[i]))) ++o.vibea_exceeded;
  }
  return o;
}

}  // namespace

std::vector<MacOperation> mac_operations(const Format& low, const Format& high, Rounding rounding, double failure) {
  const std::string lo = format_name(low), hi = format_name(high);
  std::vector<MacOperation> ops = {
      {"mac", "MAC without FMA, " + hi, MpfmaConfig::mac(high, rounding)},
      {"fma", "FMA, " + hi, MpfmaConfig::fma(high, rounding)},
      {"mpfma", "MPFMA, " + lo + " inputs, " + hi + " sum", MpfmaConfig::mpfma(low, high, rounding)}};
  for (MacOperation& op : ops) op.config.failure = failure;
  return ops;
}

MacSamples draw_mac_samples(const MacSpec& spec) {
  std::mt19937_64 gen(spec.seed);
  auto uniform = [&] {
    const double x = 1 + static_cast<double>(gen() >> 12) * 0x1p-52;
    return round_to(x, spec.given, Rounding::nearest_even);
  };
  const auto n = static_cast<std::size_t>(spec.samples);
  MacSamples s{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    s.a[i] = uniform();
    s.b[i] = uniform();
    s.c[i] = uniform();
  }
  return s;
}

std::int64_t MacResult::violations() const {
  std::int64_t v = 0;
  for (const MacOutcome& o : outcomes) v += o.violations;
  return v;
}

MacResult mac_study(const MacSpec& spec) {
  MacResult result;
  result.operations = mac_operations(spec.low, spec.high, spec.rounding, spec.failure);
  for (const MacOperation& op : result.operations) validate(op.config, ("MpfmaConfig::" + op.key).c_str());
  const std::size_t steps = 1 + result.operations.size();
  const MacSamples s = draw_mac_samples(spec);
  report(spec.progress, 1, steps, "samples");
  const auto a = to_view(s.a, "a"), b = to_view(s.b, "b"), c = to_view(s.c, "c");
  for (const MacOperation& op : result.operations) {
    result.outcomes.push_back(evaluate(op, s, a, b, c, spec.seed));
    report(spec.progress, 1 + result.outcomes.size(), steps, op.key);
  }
  return result;
}

namespace {

const char* step_name(ProductStep s) {
  switch (s) {
    case ProductStep::fused: return "fused";
    case ProductStep::exact: return "exact";
    case ProductStep::rounded: return "rounded";
  }
  return "?";
}

void write_parameters(const Hdf5Object& g, const MacSpec& spec) {
  g.attribute("experiment", "Bhola & Duraisamy, section 4.1, Fig. 5: d = a*b + c")
      .attribute("distribution", "a, b, c ~ U[1,2] i.i.d. (uniform over the binary64 numbers of [1, 2)), "
                                 "mt19937_64 of the seed, then rounded to nearest in input_format")
      .attribute("input_format", format_name(spec.given))
      .attribute("low", format_name(spec.low))
      .attribute("high", format_name(spec.high))
      .attribute("rounding", to_string(spec.rounding))
      .attribute("failure", spec.failure)
      .attribute("seed", static_cast<std::int64_t>(spec.seed))
      .attribute("samples", spec.samples)
      .attribute("reference", "exact d = a b + c in __float128");
}

}  // namespace

void write_mac(const Hdf5Group& root, const MacSpec& spec, const MacResult& result,
               const std::function<void(const Hdf5Object&)>& stamp) {
  stamp(root);
  write_parameters(root, spec);
  for (std::size_t k = 0; k < result.outcomes.size(); ++k) {
    const MacOperation& op = result.operations[k];
    const MacOutcome& o = result.outcomes[k];
    const Hdf5Group g = root.group(op.key);
    stamp(g);
    write_parameters(g, spec);
    const MpfmaConfig& m = op.config;
    g.attribute("label", op.label)
        .attribute("input_rounded_to", format_name(m.input))
        .attribute("addend", format_name(m.addend))
        .attribute("product", m.product_step == ProductStep::fused ? std::string("none") : format_name(m.product))
        .attribute("product_step", step_name(m.product_step))
        .attribute("sum", format_name(m.sum))
        .attribute("output", format_name(m.output))
        .attribute("stated_failure", o.failure)
        .attribute("lambda", o.lambda)
        .attribute("violations", o.violations)
        .attribute("vibea_exceeded", o.vibea_exceeded);
    g.dataset("error", o.error.values()).attribute("meaning", "|d_hat - d| / |d|");
    g.dataset("dbea", o.dbea.values()).attribute("meaning", "deterministic bound / |d|: always >= error");
    g.dataset("vibea", o.vibea.values())
        .attribute("meaning", "probabilistic bound / |d|: >= error with probability >= 1 - stated_failure");
  }
}

}  // namespace ebla::experiments
