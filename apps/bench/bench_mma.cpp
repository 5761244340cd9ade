// Throughput of matrix-unit emulation in batches: ebla::unit_dot_rows on 2^16 rows of k
// elements (random values of the unit's input format in [-1, 1], c in [-1, 1]), in dot
// products per second (items/s), against the same rows computed by one unit_dot call each.
//
// unit_dot_rows shares the rows among the threads of Kokkos's default host execution space
// (OpenMP: OMP_NUM_THREADS or --kokkos-num-threads; Debian's Serial Kokkos runs one);
// scripts/bench.sh runs the program on 1 and on 2 threads. The summary names the count.
#include <ebla/core/parallel.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr std::size_t rows = std::size_t{1} << 16;

/// The rows of one benchmark: A and B row-major (rows x k), c and the results.
struct Rows {
  std::size_t k = 0;
  std::vector<double> a, b, c, d;
};

Rows make_rows(const ebla::MatrixUnit& unit, std::size_t k) {
  Rows r;
  r.k = k;
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto value = [&](const ebla::Format& f) { return ebla::round_to(uniform(gen), f, ebla::Rounding::nearest_even); };
  for (std::size_t i = 0; i < rows * k; ++i) r.a.push_back(value(unit.input)), r.b.push_back(value(unit.input));
  for (std::size_t i = 0; i < rows; ++i) r.c.push_back(value(unit.accumulation));
  r.d.resize(rows);
  return r;
}

void batch(benchmark::State& state, const std::string& name, std::size_t k) {
  const ebla::MatrixUnit unit = ebla::matrix_unit_by_name(name);
  Rows r = make_rows(unit, k);
  for (auto _ : state) {
    ebla::unit_dot_rows(unit, r.a.data(), r.b.data(), r.c.data(), r.d.data(), rows, k);
    benchmark::DoNotOptimize(r.d.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows));
}

// One unit_dot per row on one thread: the unit validated and prepared again for every row.
void per_call(benchmark::State& state, const std::string& name, std::size_t k) {
  const ebla::MatrixUnit unit = ebla::matrix_unit_by_name(name);
  Rows r = make_rows(unit, k);
  for (auto _ : state) {
    for (std::size_t i = 0; i < rows; ++i) r.d[i] = ebla::unit_dot(unit, &r.a[i * k], &r.b[i * k], k, r.c[i]);
    benchmark::DoNotOptimize(r.d.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows));
}

// (unit, k): one H100 operation of 16 binary16 products; two A100 operations of 8; one B200
// fp8 operation of 32; a binary32 FMA chain of 16 steps
const struct {
  const char* unit;
  std::size_t k;
} cases[] = {{"h100_fp16", 16}, {"a100_fp16", 16}, {"b200_fp8_e4m3", 32}, {"fma_binary32", 16}};

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::vector<char*> args(argv, argv + argc);
    for (const auto& c : cases) {
      const std::string suffix = std::string(c.unit) + "/k" + std::to_string(c.k);
      benchmark::RegisterBenchmark(("unit_dot_rows/" + suffix).c_str(), batch, c.unit, c.k)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("unit_dot/" + suffix).c_str(), per_call, c.unit, c.k)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
    initialize_benchmarks(args, 5);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    std::printf("\n%zu rows per call, %d thread(s) of %s; medians; dot products per second\n", rows,
                ebla::detail::host_threads(), Kokkos::DefaultHostExecutionSpace::name());
    for (const auto& c : cases) {
      const std::string suffix = std::string(c.unit) + "/k" + std::to_string(c.k);
      const double batch_ms = reporter.median["unit_dot_rows/" + suffix];
      const double call_ms = reporter.median["unit_dot/" + suffix];
      if (batch_ms > 0 && call_ms > 0)
        std::printf("%-24s unit_dot_rows %6.2f M/s, unit_dot per row (1 thread) %6.2f M/s\n", suffix.c_str(),
                    rows / batch_ms / 1e3, rows / call_ms / 1e3);
    }
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  return 0;
}
