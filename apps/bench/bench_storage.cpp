// Time to a certified relative residual with the Krylov vectors stored narrow, against exact
// binary64 CG in the same run: the speeds docs/solvers.md "When approximation pays" quotes.
//
// Problems (sizes past the 260 MB last-level cache of the machines the docs quote; flags
// change them):
//  - stencil: HPCCG's 27-point problem on a 160^3 grid, matrix-free (StencilOperator),
//    n = 4,096,000, b = A 1;
//  - csr: HPCCG's problem on a 128^3 grid in CSR (n = 2,097,152, 56.0 million nonzeros);
//  - diffusion: the 7-point variable-coefficient problem on a 128^3 grid (cell coefficients
//    spanning 1e-3 .. 1e3, seed 1; no narrow format holds its values), with Jacobi.
// Every solve runs to ||b - A x|| <= 1e-10 ||b|| (--tolerance=X), x0 = 0, and must end
// converged: its double-double true residual within tau.
//
// Solves of each problem (rows "<problem>/<solve>"):
//  - exact:     ebla::cg, exact dot products, vectors in binary64 (the baseline);
//  - qdot_auto: --qdot-tol auto, vectors in binary64;
//  - auto:      --storage auto --qdot-tol auto (the rule chooses the storage; the dot
//               products then ride in the passes in binary64);
//  - binary32, block16: every stored vector (p, q, r) in that format, exact dot products;
//    on the CSR problems these three run, as `ebla cg --storage` does, on the operator that
//    holds A in its narrowest exact words (CsrOperator::narrowest, built once with the
//    problem like the binary64 matrix), the others on the binary64 CsrOperator;
//  - ir32:      mixed-precision iterative refinement (refined_cg.hpp: the inner CG wholly in
//               binary32, residual and x in binary64), HPCCG problems only: refined_cg has no
//               preconditioner, and the diffusion problem needs Jacobi;
//  - triad:     STREAM's triad a = b + s c on three binary64 arrays of the problem's n, the
//               physical limit (bytes per iteration / triad bandwidth).
// Each solve is one benchmark iteration, repeated 5 times (--benchmark_repetitions=N),
// repetitions interleaved at random with the other rows, so that a slow spell of the shared
// machine falls on every solve alike. The table at the end takes medians and divides exact's
// time by each solve's: "speed" > 1 is faster than exact binary64 CG.
//
// Bytes per iteration: narrow storage reports the solver's own model of its passes
// (CgResult::bytes_moved, docs/solvers.md "Stored Krylov vectors"); binary64 storage uses
// bench_cg's model: the matrix once (CSR: 12 bytes per nonzero and 8 per row offset; the
// stencil: none) and 104 bytes per row, 16 more with Jacobi (D^-1 read in the update and
// the direction pass); refined_cg its inner CG's: the float matrix and 52 bytes per row.
//
//   bench_storage [--problems=stencil,csr,diffusion] [--stencil_grid=160] [--csr_grid=128]
//                 [--diffusion_grid=128] [--tolerance=1e-10] [Google Benchmark flags]
//   bench_storage --benchmark_out=storage.json --benchmark_out_format=json  (apps/plot_storage.py)
#include <ebla/core/parallel.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/problems.hpp>
#include <ebla/solvers/refined_cg.hpp>
#include <ebla/solvers/storage_rule.hpp>

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ebla::experiments::Sample;
using ebla::experiments::Stopwatch;

// One problem: its operator (CSR or matrix-free), b, and whether it takes Jacobi.
struct Problem {
  std::string name;
  std::string what;
  ebla::Vector b, x0;
  std::unique_ptr<ebla::CsrOperator> csr;
  std::unique_ptr<ebla::CsrOperator> narrow;  // csr: A in its narrowest exact words
  std::unique_ptr<ebla::StencilOperator> stencil;
  bool jacobi = false;
  std::size_t n = 0, nonzeros = 0;
  double matrix_bytes = 0;    // one binary64 pass over the matrix (0 matrix-free)
  double matrix32_bytes = 0;  // refined_cg's float copy
};

// What the rows of a problem measured, by solve name (the last repetition's solve).
struct Outcome {
  int iterations = 0;
  int replacements = 0;
  double true_residual = 0;
  double bytes_per_iteration = 0;
  std::vector<double> seconds;  // one per repetition
  std::string storage;
};
std::map<std::string, Outcome> outcomes;  // "<problem>/<solve>"
std::map<std::string, std::vector<double>> triad_seconds;
double tolerance = 1e-10;

ebla::CgOptions cg_options(const Problem& p, const char* storage) {
  ebla::CgOptions o;
  o.tolerance = tolerance;
  o.norm = ebla::Norm::relative;
  o.max_iterations = 20000;
  o.jacobi = p.jacobi;
  o.storage = ebla::storage_policy_by_name(storage);
  return o;
}

// The bytes per iteration of a binary64-storage solve (the model above).
double binary64_bytes(const Problem& p) { return p.matrix_bytes + (p.jacobi ? 120.0 : 104.0) * p.n; }

void record(benchmark::State& state, Outcome& o, double seconds) {
  o.seconds.push_back(seconds);
  state.counters["iterations"] = o.iterations;
  state.counters["replacements"] = o.replacements;
  state.counters["true_residual"] = o.true_residual;
  state.counters["bytes_per_iteration"] = o.bytes_per_iteration;
  state.counters["seconds_per_iteration"] = seconds / o.iterations;
  state.counters["GBps"] = 1e-9 * o.bytes_per_iteration * o.iterations / seconds;
  state.counters["threads"] = ebla::detail::host_threads();
}

// solve(), timed once per benchmark iteration: its last result, in `seconds` that run's time;
// none where it did not converge (the row is then skipped with the solver's reason).
template <class Solve>
auto timed(benchmark::State& state, const std::string& row, double& seconds, Solve&& solve)
    -> std::optional<decltype(solve())> {
  decltype(solve()) res;
  for (auto _ : state) {
    const Stopwatch clock;
    res = solve();
    seconds = clock.seconds();
    benchmark::DoNotOptimize(res.x.data());
  }
  if (res.status != ebla::SolverStatus::converged) {
    state.SkipWithError((row + ": " + res.stop_reason).c_str());
    return std::nullopt;
  }
  return res;
}

template <class Op>
void run_cg(benchmark::State& state, const Problem& p, const Op& A, const std::string& solve,
            const ebla::DotPolicy& dots, const char* storage) {
  const std::string row = p.name + "/" + solve;
  const ebla::CgOptions o = cg_options(p, storage);
  double seconds = 0;
  const auto res = timed(state, row, seconds, [&] { return ebla::cg(A, p.b, p.x0, dots, o); });
  if (!res) return;
  Outcome& out = outcomes[row];
  out.iterations = res->iterations;
  out.replacements = res->replacements;
  out.true_residual = res->true_residual / res->b_norm;
  out.storage = res->storage;
  out.bytes_per_iteration = o.storage.narrow() ? res->bytes_moved / res->iterations : binary64_bytes(p);
  record(state, out, seconds);
  state.counters["n"] = static_cast<double>(p.n);
}

template <class Op>
void run_ir32(benchmark::State& state, const Problem& p, const Op& A) {
  const std::string row = p.name + "/ir32";
  ebla::RefinedCgOptions o;
  o.tolerance = tolerance;
  double seconds = 0;
  const auto res = timed(state, row, seconds, [&] { return ebla::refined_cg(A, p.b, p.x0, o); });
  if (!res) return;
  Outcome& out = outcomes[row];
  out.iterations = res->inner_iterations;    // float iterations
  out.replacements = res->outer_iterations;  // corrections, in the replacements column
  out.true_residual = res->true_residual / res->b_norm;
  out.storage = "binary32 inner";
  out.bytes_per_iteration = p.matrix32_bytes + 52.0 * p.n;
  record(state, out, seconds);
  state.counters["n"] = static_cast<double>(p.n);
}

void run_triad(benchmark::State& state, const Problem& p) {
  Kokkos::View<double*> a("triad a", p.n), b("triad b", p.n), c("triad c", p.n);
  Kokkos::deep_copy(b, 1.0);
  Kokkos::deep_copy(c, 2.0);
  const double s = 3.0;
  double seconds = 0;
  for (auto _ : state) {
    const Stopwatch clock;
    Kokkos::parallel_for("triad", Kokkos::RangePolicy<>(0, p.n), KOKKOS_LAMBDA(const std::size_t i) {
      a(i) = b(i) + s * c(i);
    });
    Kokkos::fence();
    seconds += clock.seconds();
    benchmark::DoNotOptimize(a.data());
  }
  const double per_call = seconds / static_cast<double>(state.iterations());
  triad_seconds[p.name].push_back(per_call);
  state.counters["GBps"] = 24e-9 * static_cast<double>(p.n) / per_call;
  state.counters["n"] = static_cast<double>(p.n);
  state.counters["threads"] = ebla::detail::host_threads();
}

std::vector<std::unique_ptr<Problem>> problems;

// HPCCG's problem on a g^3 grid: b = A 1, x0 = 0; `what` names the operator.
std::unique_ptr<Problem> hpccg(const std::string& name, int g, const char* what, ebla::HpccgProblem& h) {
  auto p = std::make_unique<Problem>();
  p->name = name + std::to_string(g);
  p->what = "HPCCG " + std::to_string(g) + "^3, " + what;
  h = ebla::hpccg_problem(g, g, g);
  p->b = h.b;
  p->x0 = h.x0;
  p->n = h.b.extent(0);
  p->nonzeros = h.A.nnz();
  return p;
}

std::unique_ptr<Problem> make_stencil(int g) {
  ebla::HpccgProblem h;
  auto p = hpccg("stencil", g, "matrix-free", h);
  p->stencil = std::make_unique<ebla::StencilOperator>(g, g, g);
  return p;
}

std::unique_ptr<Problem> make_csr(int g) {
  ebla::HpccgProblem h;
  auto p = hpccg("csr", g, "CSR", h);
  p->csr = std::make_unique<ebla::CsrOperator>(h.A);
  p->narrow = std::make_unique<ebla::CsrOperator>(ebla::CsrOperator::narrowest(h.A));
  p->matrix_bytes = 12.0 * p->nonzeros + 8.0 * (p->n + 1);
  p->matrix32_bytes = 8.0 * p->nonzeros + 8.0 * (p->n + 1);
  return p;
}

std::unique_ptr<Problem> make_diffusion(int g) {
  auto p = std::make_unique<Problem>();
  p->name = "diffusion" + std::to_string(g);
  p->what = "diffusion " + std::to_string(g) + "^3, CSR, Jacobi";
  ebla::DiffusionProblem d = ebla::diffusion_problem(g, g, g, 1);
  p->b = d.b;
  p->x0 = d.x0;
  p->n = d.b.extent(0);
  p->nonzeros = d.A.nnz();
  p->csr = std::make_unique<ebla::CsrOperator>(d.A);
  p->narrow = std::make_unique<ebla::CsrOperator>(ebla::CsrOperator::narrowest(d.A));
  p->jacobi = true;
  p->matrix_bytes = 12.0 * p->nonzeros + 8.0 * (p->n + 1);
  return p;
}

const char* const solves[] = {"exact", "qdot_auto", "auto", "binary32", "block16", "ir32"};

// The operator the stored solves run on: the stencil itself; for CSR, A in narrow words.
const ebla::StencilOperator& stored_operator(const Problem&, const ebla::StencilOperator& A) { return A; }
const ebla::CsrOperator& stored_operator(const Problem& p, const ebla::CsrOperator&) { return *p.narrow; }

template <class Op>
void register_solves(const Problem& p, const Op& A) {
  const Op& N = stored_operator(p, A);
  auto add = [&](const std::string& solve, auto fn) {
    benchmark::RegisterBenchmark((p.name + "/" + solve).c_str(), fn)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  };
  const ebla::DotPolicy exact = ebla::DotPolicy::exact(), automatic = ebla::DotPolicy::automatic();
  add("exact", [&p, &A, exact](benchmark::State& s) { run_cg(s, p, A, "exact", exact, "binary64"); });
  add("qdot_auto", [&p, &A, automatic](benchmark::State& s) { run_cg(s, p, A, "qdot_auto", automatic, "binary64"); });
  add("auto", [&p, &N, automatic](benchmark::State& s) { run_cg(s, p, N, "auto", automatic, "auto"); });
  add("binary32", [&p, &N, exact](benchmark::State& s) { run_cg(s, p, N, "binary32", exact, "binary32"); });
  add("block16", [&p, &N, exact](benchmark::State& s) { run_cg(s, p, N, "block16", exact, "block16"); });
  if (!p.jacobi) add("ir32", [&p, &A](benchmark::State& s) { run_ir32(s, p, A); });
  benchmark::RegisterBenchmark((p.name + "/triad").c_str(), [&p](benchmark::State& s) { run_triad(s, p); })
      ->MinTime(0.2)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

void print_table() {
  std::printf("\n%d thread(s); relative tolerance %.0e; medians of the repetitions\n", ebla::detail::host_threads(),
              tolerance);
  for (const auto& p : problems) {
    const double triad = triad_seconds.count(p->name) ? Sample(triad_seconds[p->name]).median() : 0.0;
    const double bandwidth = triad > 0 ? 24.0 * p->n / triad : 0.0;
    std::printf("\n%s: n = %zu, %zu nonzeros; triad %.1f GB/s\n", p->what.c_str(), p->n, p->nonzeros, 1e-9 * bandwidth);
    std::printf("%-10s %7s %5s %11s %9s %8s %7s %6s %6s\n", "solve", "iters", "repl", "true res", "ms/iter", "MB/iter",
                "GB/s", "limit", "speed");
    const std::string base = p->name + "/exact";
    const double base_seconds = outcomes.count(base) ? Sample(outcomes[base].seconds).median() : 0.0;
    for (const char* solve : solves) {
      const std::string row = p->name + "/" + solve;
      if (!outcomes.count(row) || outcomes[row].seconds.empty()) continue;
      const Outcome& o = outcomes[row];
      const double seconds = Sample(o.seconds).median(), per_iter = seconds / o.iterations;
      // limit: time per iteration over the time the triad would take to move its bytes
      const double limit = bandwidth > 0 ? per_iter / (o.bytes_per_iteration / bandwidth) : 0.0;
      std::printf("%-10s %7d %5d %11.3e %9.3f %8.1f %7.2f %6.2f %6.2f\n", solve, o.iterations, o.replacements,
                  o.true_residual, 1e3 * per_iter, 1e-6 * o.bytes_per_iteration,
                  1e-9 * o.bytes_per_iteration / per_iter, limit, base_seconds > 0 ? base_seconds / seconds : 0.0);
    }
  }
  std::printf("\nrepl: residual replacements (ir32: corrections; its iterations are binary32 ones); speed: exact's\n"
              "median time over the solve's; limit: time per iteration over bytes per iteration / triad bandwidth\n");
}

// --name=value among argv, removed from it; false if absent
bool take(std::vector<char*>& args, const std::string& name, std::string& value) {
  const std::string prefix = "--" + name + "=";
  for (std::size_t i = 1; i < args.size(); ++i)
    if (std::string(args[i]).rfind(prefix, 0) == 0) {
      value = std::string(args[i]).substr(prefix.size());
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
  return false;
}

int positive_int(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || v < 1 || v > 2000) {
    std::fprintf(stderr, "bench_storage: --%s=%s: not a grid size in 1..2000\n", flag.c_str(), value.c_str());
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    std::vector<char*> args(argv, argv + argc);
    std::string value, list = "stencil,csr,diffusion";
    int stencil_grid = 160, csr_grid = 128, diffusion_grid = 128;
    if (take(args, "stencil_grid", value)) stencil_grid = positive_int("stencil_grid", value);
    if (take(args, "csr_grid", value)) csr_grid = positive_int("csr_grid", value);
    if (take(args, "diffusion_grid", value)) diffusion_grid = positive_int("diffusion_grid", value);
    if (take(args, "tolerance", value)) {
      tolerance = std::strtod(value.c_str(), nullptr);
      if (!(tolerance > 0 && tolerance < 1)) {
        std::fprintf(stderr, "bench_storage: --tolerance=%s: must lie in (0, 1)\n", value.c_str());
        Kokkos::finalize();
        return 2;
      }
    }
    take(args, "problems", list);
    std::stringstream names(list);
    for (std::string name; std::getline(names, name, ',');) {
      const Stopwatch clock;
      if (name == "stencil")
        problems.push_back(make_stencil(stencil_grid));
      else if (name == "csr")
        problems.push_back(make_csr(csr_grid));
      else if (name == "diffusion")
        problems.push_back(make_diffusion(diffusion_grid));
      else {
        std::fprintf(stderr, "bench_storage: --problems=%s: unknown problem '%s' (stencil, csr, diffusion)\n",
                     list.c_str(), name.c_str());
        problems.clear();
        Kokkos::finalize();
        return 2;
      }
      std::printf("%s: n = %zu (set-up %.1f s)\n", problems.back()->what.c_str(), problems.back()->n, clock.seconds());
    }
    for (const auto& p : problems) {
      if (p->stencil)
        register_solves(*p, *p->stencil);
      else
        register_solves(*p, *p->csr);
    }
    const int count = initialize_benchmarks(args, 5);
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
      status = 1;
    } else {
      benchmark::RunSpecifiedBenchmarks();
      print_table();
    }
    benchmark::Shutdown();
    problems.clear();
  }
  Kokkos::finalize();
  return status;
}
