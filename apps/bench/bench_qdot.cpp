// qdot against KokkosBlas::dot on the same vectors.
//
// Vectors from distribution B of seed 002 (section 4.1: s 2^p, s ~ U[0.5, 1),
// p ~ N(0, t/2) rounded, t = 9, random signs), tolerance 1e-8, budget policy, at
// n = 1e5, 1e6 and 1e7. Each benchmark is repeated (10 times by default) and the medians
// are compared: select / dot, compute / dot and full qdot / dot, where
//  - full: ebla::qdot called again and again on the same vectors, as an iterative solver
//    calls it: it tries the plan of its last call on the same arrays, which holds, and
//    takes one pass over x and y (stats.passes = 1);
//  - full_two_pass: ebla::qdot with QdotOptions::reuse_plan = false: selection, then
//    computation, two passes (what a plan that moved costs, plus nothing).
// Every kernel runs on the threads of Kokkos' default host execution space (OpenMP:
// OMP_NUM_THREADS or --kokkos-num-threads; KokkosBlas::dot too); the summary names the
// count. scripts/bench.sh runs the program on 1 and on 2 threads.
#include <ebla/kernels/qdot.hpp>

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

struct Data {
  Kokkos::View<double*> x, y;
};
std::map<std::size_t, Data> data;  // released before Kokkos::finalize

const Data& vectors(std::size_t n) {
  auto it = data.find(n);
  if (it != data.end()) return it->second;
  Data d{Kokkos::View<double*>("x", n), Kokkos::View<double*>("y", n)};
  fill_distribution_b(d.x, d.y);
  return data.emplace(n, d).first->second;
}

ebla::QdotOptions options() {
  ebla::QdotOptions o;
  o.tolerance = 1e-8;
  return o;
}

void dot(benchmark::State& state) {
  const auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(KokkosBlas::dot(d.x, d.y));
}

void select(benchmark::State& state) {
  const auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ebla::qdot_select(d.x, d.y, options()));
}

void compute(benchmark::State& state) {
  const auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  const auto plan = ebla::qdot_select(d.x, d.y, options());
  for (auto _ : state) benchmark::DoNotOptimize(ebla::qdot_compute(d.x, d.y, plan));
}

int passes_seen = 0;  // stats.passes of the last full qdot

void full(benchmark::State& state) {
  const auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    const auto r = ebla::qdot(d.x, d.y, options());
    passes_seen = r.stats.passes;
    benchmark::DoNotOptimize(r);
  }
  state.counters["passes"] = passes_seen;
}

void full_two_pass(benchmark::State& state) {
  const auto& d = vectors(static_cast<std::size_t>(state.range(0)));
  auto o = options();
  o.reuse_plan = false;
  for (auto _ : state) benchmark::DoNotOptimize(ebla::qdot(d.x, d.y, o));
}

}  // namespace

BENCHMARK(dot)->Arg(100000)->Arg(1000000)->Arg(10000000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(select)->Arg(100000)->Arg(1000000)->Arg(10000000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(compute)->Arg(100000)->Arg(1000000)->Arg(10000000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(full)->Arg(100000)->Arg(1000000)->Arg(10000000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(full_two_pass)->Arg(100000)->Arg(1000000)->Arg(10000000)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::vector<char*> args(argv, argv + argc);
    initialize_benchmarks(args, 10);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    std::printf("\ndistribution B, t = 9, tolerance 1e-8, budget policy; %s, %d thread(s); medians;\n"
                "ratios to KokkosBlas::dot on the same vectors and threads (qdot: one pass, plan of the last call;\n"
                "2-pass: select then compute)\n",
                Kokkos::DefaultHostExecutionSpace::name(), Kokkos::DefaultHostExecutionSpace().concurrency());
    std::printf("%10s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n", "n", "dot ms", "select", "compute", "qdot", "2-pass",
                "sel/dot", "cmp/dot", "qdot/dot", "2p/dot");
    for (const char* n : {"100000", "1000000", "10000000"}) {
      auto m = [&](const char* f) { return reporter.median[std::string(f) + "/" + n]; };
      const double d = m("dot"), s = m("select"), c = m("compute"), f = m("full"), t = m("full_two_pass");
      if (d > 0)
        std::printf("%10s %9.3f %9.3f %9.3f %9.3f %9.3f %8.2f %8.2f %8.2f %8.2f\n", n, d, s, c, f, t, s / d, c / d,
                    f / d, t / d);
    }
    benchmark::Shutdown();
    data.clear();
  }
  Kokkos::finalize();
  return 0;
}
