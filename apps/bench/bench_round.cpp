// Throughput of rounding doubles to binary16 against a plain scaling loop.
//
// Both kernels read the same 1e7 doubles and write 1e7 doubles through Kokkos
// parallel_for on the same views, so the ratio isolates the cost of rounding:
//   ratio = time(y = x * c) / time(y = round_to(x, binary16, nearest_even)).
// Two input sets: magnitudes log-uniform over 2^-30..2^20 (subnormals and overflow of
// binary16 both occur) and uniform in [-1, 1]. Each benchmark is repeated and the
// medians are compared; the ratios are printed at the end of the run.
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/quantize.hpp>

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

namespace {

constexpr std::size_t n = 10'000'000;

Kokkos::View<double*> make_input(bool spread) {
  Kokkos::View<double*> x("x", n);
  auto h = Kokkos::create_mirror_view(x);
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> exponent(-30.0, 20.0), unit(-1.0, 1.0);
  for (std::size_t i = 0; i < n; ++i)
    h(i) = spread ? (i % 2 ? -1.0 : 1.0) * std::exp2(exponent(gen)) : unit(gen);
  Kokkos::deep_copy(x, h);
  return x;
}

// Views live in main()'s Kokkos scope (released before Kokkos::finalize).
Kokkos::View<double*> spread_input, unit_input, result;

const Kokkos::View<double*>& input(bool spread) { return spread ? spread_input : unit_input; }
const Kokkos::View<double*>& output() { return result; }

void scale(benchmark::State& state, bool spread) {
  const auto x = input(spread);
  const auto y = output();
  const double c = 1.0000001;
  for (auto _ : state) {
    Kokkos::parallel_for("scale", Kokkos::RangePolicy<>(0, n),
                         KOKKOS_LAMBDA(const std::size_t i) { y(i) = x(i) * c; });
    Kokkos::fence();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void round_binary16(benchmark::State& state, bool spread) {
  const auto x = input(spread);
  const auto y = output();
  const ebla::Format f = ebla::formats::binary16();
  for (auto _ : state) {
    ebla::quantize(x, y, f, ebla::Rounding::nearest_even);
    Kokkos::fence();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

// One host variant (instruction set) alone, single-threaded, on the spread inputs.
void round_binary16_variant(benchmark::State& state, ebla::detail::HostIsa isa) {
  const auto x = input(true);
  const auto y = output();
  const auto c = ebla::rounding_constants(ebla::formats::binary16());
  for (auto _ : state) {
    ebla::detail::quantize_host(x.data(), y.data(), n, c, ebla::Rounding::nearest_even, isa);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

}  // namespace

BENCHMARK_CAPTURE(scale, spread, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(round_binary16, spread, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(scale, unit, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(round_binary16, unit, false)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    spread_input = make_input(true);
    unit_input = make_input(false);
    result = Kokkos::View<double*>("y", n);
    // default to 10 repetitions with medians unless the caller says otherwise
    std::vector<char*> args(argv, argv + argc);
    for (auto isa : ebla::detail::supported_host_isas())
      benchmark::RegisterBenchmark(("round_binary16_" + std::string(ebla::detail::to_string(isa)) + "/spread").c_str(),
                                   round_binary16_variant, isa)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    initialize_benchmarks(args, 10);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    std::printf("\nn = %zu doubles, binary16, round to nearest even; medians of repetitions;"
                " quantize runs the %s variant\n", n, ebla::detail::to_string(ebla::detail::best_host_isa()));
    for (const char* set : {"spread", "unit"}) {
      const double s = reporter.median["scale/" + std::string(set)];
      const double r = reporter.median["round_binary16/" + std::string(set)];
      if (s > 0 && r > 0)
        std::printf("%-6s inputs (%s): round %.2f ms, scale %.2f ms, throughput ratio %.2fx\n", set,
                    std::string(set) == "spread" ? "2^-30..2^20" : "[-1, 1]", r, s, s / r);
    }
    const double s = reporter.median["scale/spread"];
    for (auto isa : ebla::detail::supported_host_isas()) {
      const std::string name = "round_binary16_" + std::string(ebla::detail::to_string(isa)) + "/spread";
      if (s > 0 && reporter.median[name] > 0)
        std::printf("variant %-8s (spread, one thread): round %.2f ms, throughput ratio %.2fx\n",
                    ebla::detail::to_string(isa), reporter.median[name], s / reporter.median[name]);
    }
    benchmark::Shutdown();
    spread_input = unit_input = result = Kokkos::View<double*>();
  }
  Kokkos::finalize();
  return 0;
}
