// The power method with a stored iterate (PowerOptions::storage) against the binary64 power
// method, in one run.
//
// Problems (--n=N sets the Laplacian's size, default 2,000,000):
//  - laplacian: L = D - A of G(n, 10 / (n - 1)) (ebla::graph_laplacian, seed 1), CSR, about
//    11 n nonzeros; its values (degrees and -1) are exact in bfloat16, so the stored
//    iteration reads a 2-byte copy of them;
//  - stencil: HPCCG's 27-point operator on a 128^3 grid, matrix-free (n = 2,097,152).
// Every solve starts from the same random unit vector (seed 2) and stops when
// |lambda_k - lambda_(k-1)| <= tau (--tau=X, default 1e-6) or after --iterations=K iterations
// (default 100): both problems' top eigenvalues are close (the Laplacian at n = 2e6 takes
// about 1,200 iterations to 1e-6, the stencil more), so the solves are compared per iteration
// (binary32 and auto take the binary64 method's iteration counts where they run to the end:
// tests/solvers/test_power_storage.cpp):
//  - pm_*_binary64: the binary64 power method (ebla power's default): per iteration one
//    product, y^T y, the scaling, x^T y (five passes over n-vectors);
//  - pm_*_auto, pm_*_binary32, pm_*_bfloat16, pm_*_block16: the stored iteration, one pass
//    per iteration (the rule, or a fixed format).
// Each solve is one benchmark iteration, repeated 5 times by default, interleaved; the table
// at the end uses the medians: total ms, iterations, ms per iteration, |lambda - lambda_PM|
// against the binary64 run, and the ratio of time per iteration to the binary64 run's.
#include <ebla/core/parallel.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/problems.hpp>

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Setup {
  std::size_t n = 2000000;
  double tau = 1e-6;
  int iterations = 100;
  std::unique_ptr<ebla::CsrOperator> laplacian;
  std::unique_ptr<ebla::StencilOperator> stencil;
  ebla::Vector x0_laplacian, x0_stencil;
};
std::unique_ptr<Setup> setup;

struct Outcome {
  int iterations = 0;
  double eigenvalue = 0;
  std::string status;
};
std::map<std::string, Outcome> outcome;

template <class Op>
void pm(benchmark::State& state, const std::string& name, const Op& A, ebla::ConstVector x0, const char* storage,
        int max_iterations) {
  ebla::PowerOptions o;
  o.tolerance = setup->tau;
  o.max_iterations = max_iterations;
  o.storage = ebla::storage_policy_by_name(storage);
  ebla::PowerResult r;
  for (auto _ : state) {
    r = ebla::power_method(A, x0, ebla::DotPolicy::exact(), o);
    benchmark::DoNotOptimize(r.eigenvector.data());
  }
  outcome[name] = {r.iterations, r.eigenvalue, ebla::to_string(r.status)};
  state.counters["iterations"] = r.iterations;
  state.counters["n"] = static_cast<double>(A.size());
  if (r.bytes_moved > 0) state.counters["GBps"] = 1e-9 * r.bytes_moved / r.seconds;
}

void laplacian(benchmark::State& state, const char* storage) {
  pm(state, std::string("pm_laplacian_") + storage, *setup->laplacian, setup->x0_laplacian, storage,
     setup->iterations);
}
void stencil(benchmark::State& state, const char* storage) {
  pm(state, std::string("pm_stencil_") + storage, *setup->stencil, setup->x0_stencil, storage, setup->iterations);
}

const char* const formats[] = {"binary64", "auto", "binary32", "bfloat16", "block16"};

void register_solves() {
  for (const char* f : formats) {
    benchmark::RegisterBenchmark((std::string("pm_laplacian_") + f).c_str(), laplacian, f)
        ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark((std::string("pm_stencil_") + f).c_str(), stencil, f)
        ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
}

// Takes --name=value from args (removing it); returns whether it was there.
bool take(std::vector<char*>& args, const char* name, std::string& value) {
  const std::string prefix = std::string("--") + name + "=";
  for (std::size_t i = 1; i < args.size(); ++i)
    if (std::string(args[i]).rfind(prefix, 0) == 0) {
      value = args[i] + prefix.size();
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
  return false;
}

void print_table(std::map<std::string, double>& m) {
  std::printf("\n%d threads; tau %.0e; medians\n", ebla::detail::host_threads(), setup->tau);
  std::printf("%-22s %10s %6s %9s %18s %12s %8s\n", "solve", "total ms", "iters", "ms/iter", "eigenvalue",
              "|l - l_PM|", "ratio");
  for (const char* problem : {"laplacian", "stencil"}) {
    const std::string base = std::string("pm_") + problem + "_binary64";
    for (const char* f : formats) {
      const std::string name = std::string("pm_") + problem + "_" + f;
      if (!m.count(name) || !outcome.count(name)) continue;
      const Outcome& o = outcome[name];
      const double per = o.iterations > 0 ? m[name] / o.iterations : 0.0;
      const bool have_base = m.count(base) && outcome.count(base) && outcome[base].iterations > 0;
      const double ratio = have_base ? per / (m[base] / outcome[base].iterations) : 0.0;
      std::printf("%-22s %10.1f %6d %9.3f %18.12g %12.3e %8.2f  %s\n", name.c_str(), m[name], o.iterations, per,
                  o.eigenvalue, have_base ? std::fabs(o.eigenvalue - outcome[base].eigenvalue) : NAN, ratio,
                  o.status.c_str());
    }
  }
  std::printf("ratio: time per iteration / the binary64 method's\n");
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::vector<char*> args(argv, argv + argc);
    setup = std::make_unique<Setup>();
    std::string value;
    if (take(args, "n", value)) setup->n = std::strtoull(value.c_str(), nullptr, 10);
    if (take(args, "tau", value)) setup->tau = std::strtod(value.c_str(), nullptr);
    if (take(args, "iterations", value)) setup->iterations = std::atoi(value.c_str());
    if (setup->n < 2 || !(setup->tau > 0) || setup->iterations < 1) {
      std::fprintf(stderr, "bench_power: --n must be at least 2, --tau positive, --iterations at least 1\n");
      setup.reset();
      Kokkos::finalize();
      return 1;
    }
    const int count = initialize_benchmarks(args, 5);
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
      setup.reset();
      Kokkos::finalize();
      return 1;
    }
    setup->laplacian = std::make_unique<ebla::CsrOperator>(ebla::graph_laplacian(setup->n, 10, 1));
    setup->stencil = std::make_unique<ebla::StencilOperator>(128, 128, 128);
    setup->x0_laplacian = ebla::random_unit_vector(setup->n, 2);
    setup->x0_stencil = ebla::random_unit_vector(setup->stencil->size(), 2);
    std::printf("laplacian: n = %zu, %zu nonzeros; stencil: 128^3 = %zu rows\n", setup->n,
                setup->laplacian->nonzeros(), setup->stencil->size());
    register_solves();
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    print_table(reporter.median);
    benchmark::Shutdown();
    setup.reset();
  }
  Kokkos::finalize();
  return 0;
}
