// The stored, quantized vector (qdot_store once, then qdot(stored, y)) against
// KokkosBlas::dot on the same binary64 vectors.
//
// x and y from distribution B of seed 002 (s 2^p, s ~ U[0.5, 1), p ~ N(0, t/2) rounded,
// t = 9, random signs), n = 1e6 and 1e7. x is stored at several tolerances, each giving
// another mix of tile formats (printed below the table); the benchmark times only the dot
// product from the stored form, as a power method or a block of right-hand sides would call
// it again and again, y a binary64 View. Each benchmark is repeated (10 times by default,
// interleaved) and the medians are compared. Every kernel runs on the threads of Kokkos'
// default host execution space (OpenMP: OMP_NUM_THREADS); scripts/bench.sh runs the program
// on 1 and on 2 threads.
#include <ebla/kernels/qdot_stored.hpp>

#include <KokkosBlas1_dot.hpp>
#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"
#include "bench_vectors.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

const double tolerances[] = {1e-12, 1e-6, 1e-3, 1e-2};
constexpr int tolerance_count = 4;
const long sizes[] = {1000000, 10000000};

struct Data {
  Kokkos::View<double*> x, y;
  std::map<int, ebla::QdotStored> stored;  // by index into tolerances
};
std::map<std::size_t, Data> data;  // released before Kokkos::finalize

Data& vectors(std::size_t n) {
  auto it = data.find(n);
  if (it != data.end()) return it->second;
  Data d{Kokkos::View<double*>("x", n), Kokkos::View<double*>("y", n), {}};
  fill_distribution_b(d.x, d.y);
  return data.emplace(n, d).first->second;
}

const ebla::QdotStored& stored(Data& d, int k) {
  auto it = d.stored.find(k);
  if (it != d.stored.end()) return it->second;
  ebla::QdotOptions o;
  o.tolerance = tolerances[k];
  return d.stored.emplace(k, ebla::qdot_store(Kokkos::View<const double*>(d.x), o)).first->second;
}

void dot(benchmark::State& state) {
  const auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(KokkosBlas::dot(d.x, d.y));
}

void stored_dot(benchmark::State& state) {
  auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  const auto& s = stored(d, static_cast<int>(state.range(1)));
  const Kokkos::View<const double*> y = d.y;
  for (auto _ : state) benchmark::DoNotOptimize(ebla::qdot(s, y));
  state.counters["bytes_per_x"] = static_cast<double>(s.bytes()) / static_cast<double>(s.n);
}

void arguments(benchmark::internal::Benchmark* b) {
  for (const long n : sizes)
    for (int k = 0; k < tolerance_count; ++k) b->Args({n, k});
}

}  // namespace

BENCHMARK(dot)->Arg(1000000)->Arg(10000000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(stored_dot)->Apply(arguments)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::vector<char*> args(argv, argv + argc);
    initialize_benchmarks(args, 10);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    std::printf("\ndistribution B, t = 9; %s, %d thread(s); medians; stored x, binary64 y; ratio = dot / stored\n",
                Kokkos::DefaultHostExecutionSpace::name(), Kokkos::DefaultHostExecutionSpace().concurrency());
    std::printf("%10s %10s %9s %9s %8s %8s %26s  %s\n", "n", "tolerance", "dot ms", "stored", "ratio", "B/x_i",
                "tiles b64/b32/b16/skip", "value (the same bits on any thread count)");
    for (const long n : sizes) {
      const double d = reporter.median["dot/" + std::to_string(n)];
      for (int k = 0; k < tolerance_count; ++k) {
        const double t = reporter.median["stored_dot/" + std::to_string(n) + "/" + std::to_string(k)];
        if (!(d > 0 && t > 0)) continue;
        const auto& s = stored(vectors(static_cast<std::size_t>(n)), k);
        std::string mix;
        for (const auto c : s.tiles_per_level) mix += (mix.empty() ? "" : "/") + std::to_string(c);
        const double value = ebla::qdot(s, Kokkos::View<const double*>(vectors(static_cast<std::size_t>(n)).y)).value;
        std::printf("%10ld %10.0e %9.3f %9.3f %8.2f %8.2f %26s  %a\n", n, tolerances[k], d, t, d / t,
                    static_cast<double>(s.bytes()) / static_cast<double>(n), mix.c_str(), value);
      }
    }
    benchmark::Shutdown();
    data.clear();
  }
  Kokkos::finalize();
  return 0;
}
