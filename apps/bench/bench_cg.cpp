// Conjugate gradients on HPCCG's problem: ebla::cg against a baseline that does what
// Mantevo HPCCG's serial code does.
//
// Problem: the 27-point stencil on a 100 x 100 x 100 grid (ebla::hpccg_problem: n = 1e6
// rows, 26,463,592 nonzeros), b = A 1, x0 = 0. HPCCG's default driver runs 149 iterations
// (max_iter = 150, tolerance 0, loop k = 1 .. max_iter - 1); every solve here runs 149
// iterations too, so that times per iteration compare like with like:
//  - hpccg_reference: HPCCG's serial algorithm written from its description (matrix as
//    per-row pointers to values and column indices with a count per row; HPC_sparsemv,
//    ddot, waxpby as plain loops; HPCCG's order of operations), compiled with this file's
//    flags, 149 iterations;
//  - cg_csr_exact, cg_stencil_exact: ebla::cg with DotPolicy::exact() on CsrOperator and
//    on StencilOperator(100, 100, 100), absolute tolerance tau = the residual ||r_149|| that
//    exact CG reports on that operator (measured once at startup, untimed), so that exact
//    CG stops after exactly 149 iterations by its own test;
//  - acg_csr_qdot, acg_stencil_qdot: ebla::cg with DotPolicy::approximate(qdot options), same
//    tau, up to 298 iterations: the number it takes is its real count. The qdot tolerance is
//    the largest of 1e-16, 1e-15, ..., 1e3 with which ACG (budget policy) reaches tau in
//    149 iterations on the stencil operator, as exact CG does, found by ebla's qdot-tolerance sweep
//    (sweep.hpp) at startup (untimed, both policies printed); --qdot_tolerance=X skips the sweep
//    and uses X;
//    The qdot options are the defaults but for the tolerance: in the solver the last plan,
//    widened by up to QdotOptions::solver_margin = 8 bins, is kept (one pass) wherever it
//    computed every bin at least as precisely as the plan selected for the new vectors;
//  - acg_csr_margin0, acg_stencil_margin0: the same with QdotOptions::plan_margin = 0, so
//    that every qdot gives the bits of selection then computation (a second pass where the
//    plan moved);
//  - cg_csr_relative, cg_stencil_relative, ir32_csr, ir32_stencil: the time to a relative
//    true residual ||b - A x|| <= 1e-10 ||b|| (--ir_tolerance=X sets it; tau above is far
//    below what a true residual attains in binary64), by exact CG (Norm::relative; its test is
//    the recursive residual, its true residual is printed) and by ebla::refined_cg
//    (refined_cg.hpp), the alternative a user would otherwise pick: binary64 residuals
//    outside (its test the binary64 ||b - A x||, confirmed in double-double at exit), CG
//    entirely in binary32 inside, at its default inner tolerance (1e-5); a sweep at startup
//    prints what 1e-2 .. 1e-6 take on the stencil operator (untimed by Google Benchmark);
//    --ir_inner_tolerance=X skips it and uses X. The ir32 rows' "iterations" are the inner
//    (float) iterations; the corrections are printed beside them;
//  - storage_csr_auto, storage_stencil_auto, storage_*_binary32, storage_stencil_block16:
//    exact CG to the same relative tolerance with p, q and r stored narrow (CgOptions::storage,
//    docs/solvers.md "Stored Krylov vectors"); their bytes are the solver's own model.
// Each solve is one benchmark iteration (Iterations(1)), repeated 5 times by default
// (--benchmark_repetitions=N overrides); the table at the end uses the medians. Time per
// iteration = total / iterations (for ebla::cg the total includes its input checks and the
// double-double true residual at exit).
//
// part_* benchmarks time the pieces of one iteration on vectors of a CG run (r, p, A p
// after 75 HPCCG iterations): the sparse products, dot products, qdot, HPCCG's vector updates,
// and the true residual that ebla::cg computes once at exit. part_stream_triad is the
// physical limit the solves are held against: STREAM's triad a = b + s c on three binary64
// arrays, at the problem's n and at 2^25 entries (805 MB, past every cache).
//
// Memory traffic. Every solve reports bytes_per_iteration (the bytes its code reads and
// writes, modelled below in "the traffic model", averaged over its iterations with the work
// done once per solve), GBps = those bytes / its time per iteration, and limit_ratio = its
// time per iteration / (bytes_per_iteration / the triad's bandwidth at the problem's n), once
// the triad has run earlier in the same run (the median of its repetitions so far; the table
// at the end uses the median of all). limit_ratio 1 would be a solve moving its bytes at the
// triad's speed.
#include <ebla/core/parallel.hpp>
#include <ebla/experiments/hpccg_baseline.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_host.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/problems.hpp>
#include <ebla/solvers/refined_cg.hpp>
#include <ebla/solvers/sweep.hpp>

#include <KokkosBlas1_dot.hpp>
#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace ebla::experiments::hpccg;  // the baseline: hpc_matrix, hpc_cg and its kernels

constexpr int grid = 100;
constexpr int hpccg_max_iter = 150;  // HPCCG's default: iterations k = 1 .. 149
constexpr int iterations = hpccg_max_iter - 1;

// ---- setup ---------------------------------------------------------------------------------

struct Setup {
  ebla::HpccgProblem problem;
  ebla::CsrOperator csr;
  ebla::StencilOperator stencil;
  HpcMatrix hpc;
  std::vector<double> hpc_b;
  double tau_csr = 0, tau_stencil = 0;  // ||r_149|| of exact CG on each operator
  ebla::DotPolicy acg;                  // the chosen qdot options
  ebla::DotPolicy acg_margin0;          // the same with QdotOptions::plan_margin = 0
  double relative_tolerance = 1e-10;    // cg_*_relative and ir32_*: ||b - A x|| <= this ||b||
  ebla::RefinedCgOptions ir;            // refined_cg to it, at the chosen inner tolerance
  ebla::Vector r, p, q;                 // CG vectors for the part_* benchmarks
};
std::unique_ptr<Setup> setup;  // released before Kokkos::finalize

std::map<std::string, int> iteration_count;    // benchmark -> iterations of its solves
std::map<std::string, double> final_residual;  // benchmark -> ||r|| at exit
std::map<std::string, int> correction_count;   // ir32_*: corrections (outer iterations)

using ebla::experiments::Sample;
using ebla::experiments::Stopwatch;

ebla::CgOptions options(double tau, int max_iterations) {
  ebla::CgOptions o;
  o.tolerance = tau;
  o.norm = ebla::Norm::absolute;
  o.max_iterations = max_iterations;
  return o;
}

template <class Op>
ebla::CgResult solve(const Op& A, const ebla::DotPolicy& dots, double tau, int max_iterations) {
  return ebla::cg(A, setup->problem.b, setup->problem.x0, dots, options(tau, max_iterations));
}

// Exact CG for 149 iterations (tolerance 1e-300 never fires): its ||r_149|| is tau.
template <class Op>
double reference_tau(const Op& A, const char* name) {
  const Stopwatch clock;
  const auto res = solve(A, ebla::DotPolicy::exact(), 1e-300, iterations);
  std::printf("exact CG, %s, tolerance 1e-300, max %d iterations: %d iterations (%s), ||r_0|| = %.3e", name,
              iterations, res.iterations, ebla::to_string(res.status), res.initial_residual);
  for (int k : {25, 50, 75, 100, 125})
    if (k <= static_cast<int>(res.history.size())) std::printf(", ||r_%d|| = %.3e", k, res.history[k - 1].residual);
  std::printf(", ||r_%d|| = %.3e, true ||b - A x|| = %.3e (%.1f s)\n", res.iterations, res.recursive_residual,
              res.true_residual, clock.seconds());
  std::printf("  iterations to an absolute tolerance:");
  for (double tol : {1e-6, 1e-8, 1e-10, 1e-12, 1e-15}) {
    int k = 0;
    while (k < static_cast<int>(res.history.size()) && res.history[k].residual > tol) ++k;
    if (k < static_cast<int>(res.history.size()))
      std::printf(" %.0e: %d%s", tol, k + 1, tol == 1e-15 ? "\n" : ",");
    else
      std::printf(" %.0e: > %d%s", tol, res.iterations, tol == 1e-15 ? "\n" : ",");
  }
  return res.recursive_residual;
}

// "149 it", or how the run failed.
std::string sweep_cell(const ebla::CgResult& res) {
  char buf[64];
  if (res.status == ebla::SolverStatus::converged)
    std::snprintf(buf, sizeof buf, "%d it", res.iterations);
  else
    std::snprintf(buf, sizeof buf, "%s at %d (%.1e)", res.status == ebla::SolverStatus::breakdown ? "breakdown" : "not reached",
                  res.iterations, res.recursive_residual);
  return buf;
}

// The qdot tolerance: largest of 1e-16 .. 1e3 with which budget-policy ACG reaches the
// stencil's tau in 149 iterations, as exact CG does (the reference of ebla's sweep); both
// policies are shown (with the iterations they take, up to 200).
double sweep_qdot_tolerance() {
  const Stopwatch clock;
  constexpr int sweep_cap = 200;
  std::printf("\nqdot tolerance sweep: iterations of ACG on the stencil operator to tau = %.3e (at most %d)\n",
              setup->tau_stencil, sweep_cap);
  const auto solve_at = [&](const ebla::DotPolicy& dots, double) {
    return solve(setup->stencil, dots, setup->tau_stencil, sweep_cap);
  };
  const ebla::CgResult exact = solve_at(ebla::DotPolicy::exact(), 0);
  const auto policy = [](ebla::QdotPolicy p) {
    return std::function<ebla::DotPolicy(double)>([p](double tol) {
      ebla::QdotOptions q;
      q.tolerance = tol;
      q.policy = p;
      return ebla::DotPolicy::approximate(q);
    });
  };
  const std::vector<double> tolerances = ebla::decade_tolerances(-16, 3);
  const auto budget = ebla::sweep_qdot_tolerances(exact, tolerances, policy(ebla::QdotPolicy::budget), solve_at);
  const auto paper = ebla::sweep_qdot_tolerances(exact, tolerances, policy(ebla::QdotPolicy::paper), solve_at);
  std::printf("%10s %28s %28s\n", "tolerance", "budget", "paper");
  for (std::size_t i = 0; i < tolerances.size(); ++i)
    std::printf("%10.0e %28s %28s\n", tolerances[i], sweep_cell(budget.runs[i]).c_str(),
                sweep_cell(paper.runs[i]).c_str());
  std::printf("(sweep %.0f s)\n", clock.seconds());
  // exact CG takes 149 iterations to tau (reference_tau): the same count is 149
  return std::isnan(budget.largest_same) || exact.iterations != iterations ? 0 : budget.largest_same;
}

// refined_cg's inner tolerances 1e-2 .. 1e-6 on the stencil operator to the relative
// tolerance: corrections, float iterations and the best time of two solves (printed only: the
// ir32 rows use refined_cg's default, or --ir_inner_tolerance).
void sweep_inner_tolerance(double relative_tolerance) {
  const Stopwatch clock;
  std::printf("\nrefined_cg inner tolerance sweep: stencil operator to ||b - A x|| <= %.0e ||b|| (best of 2 solves)\n",
              relative_tolerance);
  std::printf("%10s %12s %8s %10s %12s\n", "inner tol", "corrections", "inner", "ms", "ms/inner it");
  for (double inner : {1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
    ebla::RefinedCgOptions o;
    o.tolerance = relative_tolerance;
    o.inner_tolerance = inner;
    double seconds = 0;
    ebla::RefinedCgResult res;
    for (int k = 0; k < 2; ++k) {
      res = ebla::refined_cg(setup->stencil, setup->problem.b, setup->problem.x0, o);
      seconds = k == 0 ? res.seconds : std::min(seconds, res.seconds);
    }
    std::printf("%10.0e %12d %8d %10.1f %12.3f%s\n", inner, res.outer_iterations, res.inner_iterations, 1e3 * seconds,
                1e3 * seconds / std::max(res.inner_iterations, 1),
                res.status == ebla::SolverStatus::converged ? "" : (" " + res.stop_reason).c_str());
  }
  std::printf("(sweep %.0f s)\n", clock.seconds());
}

void make_setup(double qdot_tolerance, double relative_tolerance, double ir_inner_tolerance) {
  const Stopwatch clock;
  setup = std::make_unique<Setup>();
  auto& s = *setup;
  s.problem = ebla::hpccg_problem(grid, grid, grid);
  s.csr = ebla::CsrOperator(s.problem.A);
  s.stencil = ebla::StencilOperator(grid, grid, grid);
  s.hpc = hpc_matrix(grid, grid, grid);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.problem.b);
  s.hpc_b.assign(hb.data(), hb.data() + hb.extent(0));
  std::printf("HPCCG %d x %d x %d: n = %zu, nonzeros = %zu (setup %.1f s)\n", grid, grid, grid, s.csr.size(),
              s.csr.nonzeros(), clock.seconds());

  // vectors of a CG run for the part_* benchmarks, and HPCCG's own residual after 149
  {
    std::vector<double> x(s.csr.size(), 0.0);
    HpcVectors v;
    hpc_cg(s.hpc, s.hpc_b.data(), x.data(), 76, 0.0, v);
    auto copy = [](const double* src, std::size_t n, const char* name) {
      ebla::Vector out(std::string(name), n);
      auto h = Kokkos::create_mirror_view(out);
      for (std::size_t i = 0; i < n; ++i) h(i) = src[i];
      Kokkos::deep_copy(out, h);
      return out;
    };
    s.r = copy(v.r.get(), x.size(), "r");
    s.p = copy(v.p.get(), x.size(), "p");
    s.q = copy(v.Ap.get(), x.size(), "Ap");
  }

  s.tau_stencil = reference_tau(s.stencil, "stencil");
  s.tau_csr = reference_tau(s.csr, "CSR");
  ebla::QdotOptions q;
  q.policy = ebla::QdotPolicy::budget;
  q.tolerance = qdot_tolerance > 0 ? qdot_tolerance : sweep_qdot_tolerance();
  if (!(q.tolerance > 0)) {
    std::printf("no qdot tolerance of the sweep keeps the iteration count: using 1e-16\n");
    q.tolerance = 1e-16;
  }
  s.acg = ebla::DotPolicy::approximate(q);
  q.plan_margin = 0;
  s.acg_margin0 = ebla::DotPolicy::approximate(q);
  std::printf("ACG dot policy: %s%s\n", s.acg.to_string().c_str(), qdot_tolerance > 0 ? " (--qdot_tolerance)" : " (sweep)");

  // refined_cg and exact CG to a relative tolerance
  s.ir.tolerance = s.relative_tolerance = relative_tolerance;
  if (ir_inner_tolerance > 0)
    s.ir.inner_tolerance = ir_inner_tolerance;
  else
    sweep_inner_tolerance(relative_tolerance);
  std::printf("refined_cg and cg_*_relative: ||b - A x|| <= %.0e ||b||; refined_cg's inner tolerance %.0e%s\n\n",
              relative_tolerance, s.ir.inner_tolerance, ir_inner_tolerance > 0 ? " (--ir_inner_tolerance)" : " (default)");
}

// ---- the traffic model ---------------------------------------------------------------------
//
// Bytes read plus bytes written by each solve, counted from its code, with two assumptions:
//  - every array a pass touches moves between the cores and the cache level that holds it
//    once per pass, however often the pass reads it (at n = 1e6 a vector is 8 MB: out of the
//    L2 caches; where the last-level cache holds the vectors, the triad at n measures that
//    level's speed, and the triad at 2^25 the memory's); within a pass, the entries of x that
//    a row of A reads come from cache (the stencil's 3 x 3 neighbouring lines and CSR's
//    columns are near the row), so x counts n entries;
//  - a write counts once: no write-allocate read of the line before it is written (STREAM
//    counts its triad this way too, 24 bytes per entry; see part_stream_triad).
// Matrix bytes per application, n rows, z nonzeros:
//   CSR binary64 (KokkosSparse): values 8 z + columns 4 z + row offsets 8 (n + 1);
//   CSR binary32 (refined_cg):    values 4 z + columns 4 z + row offsets 8 (n + 1);
//   HPCCG's rows: values 8 z + columns 4 z + per row two pointers and a count, 20 n;
//   stencil: none (matrix-free).
// Vector bytes (b = 8 for binary64, 4 for binary32 entries) per iteration:
//   ebla::cg, exact or qdot dots: A p (read p, write q: 2 b n), p^T q (2 b n), x += alpha p and
//     r -= alpha q with r^T r in the same pass (read 4, write 2: 6 b n), p = r + beta p (read 2,
//     write 1: 3 b n): 13 b n = 104 n. The qdot of p^T q counts one pass: a second one where
//     its plan moved (the margin0 rows, now and then) is not counted;
//   HPCCG: r^T r (1), p = r + beta p (3), A p (2), p^T A p (2), x += alpha p (3),
//     r -= alpha A p (3): 14 b n = 112 n;
//   refined_cg's inner CG: as ebla::cg's, 13 b n with b = 4: 52 n.
// Once per solve (spread over its iterations in bytes_per_iteration):
//   ebla::cg: 3 matrix passes (diagonal check, r_0 = b - A x_0, true residual at exit) and
//     152 n (finite b, x0: 16; the diagonal's copy: 16; ||b|| twice: 16; x = x0: 16;
//     A x_0: 16; r_0 = b - q: 24; p_0 = r_0: 16; r^T r twice: 16; true residual's x, b: 16);
//   HPCCG: 1 matrix pass and 64 n (p = x: 16, A p: 16, r = b - A p: 24, r^T r: 8);
//   refined_cg, per correction: 1 binary64 matrix pass and 92 n (A x: 16; ||b - A x||: 16;
//     float(2^-e (b - A x)): read 16, write 4; inner start d = 0, r = p = rhs: read 4, write
//     12; r_0^T r_0: 4; x += 2^e d: read 12, write 8); per solve: 2 binary64 matrix passes
//     (the last test's A x, the double-double true residual at exit) and 88 n (finite b, x0:
//     16; x = x0: 16; ||b||: 8; the last test: 32; the true residual's x, b: 16), and for CSR
//     the float copy of the values (read 8 z, write 4 z).
struct Traffic {
  double per_iteration = 0;   // bytes
  double per_correction = 0;  // refined_cg's outer iterations
  double once = 0;
  double total(int iterations, int corrections = 0) const {
    return per_iteration * iterations + per_correction * corrections + once;
  }
};

double csr64_bytes(std::size_t n, std::size_t z) { return 12.0 * z + 8.0 * (n + 1); }
double csr32_bytes(std::size_t n, std::size_t z) { return 8.0 * z + 8.0 * (n + 1); }

Traffic cg_traffic(std::size_t n, double matrix) { return {matrix + 104.0 * n, 0, 3 * matrix + 152.0 * n}; }
Traffic hpccg_traffic(std::size_t n, std::size_t z) {
  const double matrix = 12.0 * z + 20.0 * n;
  return {matrix + 112.0 * n, 0, matrix + 64.0 * n};
}
Traffic ir_traffic(std::size_t n, double matrix64, double matrix32, double copy) {
  return {matrix32 + 52.0 * n, matrix64 + 92.0 * n, 2 * matrix64 + 88.0 * n + copy};
}

// the triad's bandwidth at the problem's n, bytes/s: one value per repetition so far
std::vector<double> triad_bandwidth;
std::map<std::string, double> bytes_per_iteration;  // solve -> its model's bytes / iterations

// The counters of a solve of `iterations` iterations that took `seconds` and moved `bytes`.
void traffic_counters(benchmark::State& state, const char* name, double bytes, int iterations, double seconds) {
  if (iterations <= 0 || !(seconds > 0)) return;
  const double per_iteration = bytes / iterations, time = seconds / iterations;
  bytes_per_iteration[name] = per_iteration;
  state.counters["bytes_per_iteration"] = per_iteration;
  state.counters["GBps"] = 1e-9 * per_iteration / time;
  if (!triad_bandwidth.empty())
    state.counters["limit_ratio"] = time / (per_iteration / Sample(triad_bandwidth).median());
}

// ---- the solves ----------------------------------------------------------------------------

// ms per iteration of ebla::cg's iteration loop alone (CgResult::iteration_seconds: no input
// checks, no set-up, no true residual at exit), one entry per repetition
std::map<std::string, std::vector<double>> loop_ms;


void hpccg_reference(benchmark::State& state) {
  const auto& s = *setup;
  std::vector<double> x(s.csr.size());
  int its = 0;
  HpcVectors v;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::fill(x.begin(), x.end(), 0.0);  // x0 = 0
    state.ResumeTiming();
    const Stopwatch clock;
    its = hpc_cg(s.hpc, s.hpc_b.data(), x.data(), hpccg_max_iter, 0.0, v);
    seconds = clock.seconds();
    benchmark::DoNotOptimize(x.data());
  }
  iteration_count["hpccg_reference"] = its;
  final_residual["hpccg_reference"] = std::sqrt(hpc_ddot(s.hpc.nrow, v.r.get(), v.r.get()));
  state.counters["iterations"] = its;
  state.counters["n"] = static_cast<double>(s.csr.size());
  traffic_counters(state, "hpccg_reference", hpccg_traffic(s.csr.size(), s.csr.nonzeros()).total(its), its, seconds);
}

template <class Op>
void ebla_cg(benchmark::State& state, const char* name, const Op& A, const ebla::DotPolicy& policy,
             const ebla::CgOptions& o) {
  ebla::CgResult res;
  for (auto _ : state) {
    res = ebla::cg(A, setup->problem.b, setup->problem.x0, policy, o);
    benchmark::DoNotOptimize(res.x.data());
  }
  // (the solves to tau end "unconfirmed": tau is below what the true residual attains)
  if (o.norm == ebla::Norm::relative && res.status != ebla::SolverStatus::converged)
    state.SkipWithError(("cg: " + res.stop_reason).c_str());
  iteration_count[name] = res.iterations;
  final_residual[name] = o.norm == ebla::Norm::relative ? res.true_residual : res.recursive_residual;
  loop_ms[name].push_back(1e3 * res.iteration_seconds / res.iterations);
  state.counters["iterations"] = res.iterations;
  state.counters["n"] = static_cast<double>(A.size());
  const double matrix = std::is_same_v<Op, ebla::CsrOperator> ? csr64_bytes(A.size(), A.nonzeros()) : 0.0;
  // narrow storage: the solver's own model of its passes (docs/solvers.md)
  const double bytes = o.storage.narrow() ? res.bytes_moved : cg_traffic(A.size(), matrix).total(res.iterations);
  traffic_counters(state, name, bytes, res.iterations, res.seconds);
}

// refined_cg: its inner iterations are the solve's iterations (time and bytes per inner
// iteration include the corrections' binary64 work)
template <class Op>
void ir32(benchmark::State& state, const char* name, const Op& A, const ebla::RefinedCgOptions& options) {
  ebla::RefinedCgResult res;
  for (auto _ : state) {
    res = ebla::refined_cg(A, setup->problem.b, setup->problem.x0, options);
    benchmark::DoNotOptimize(res.x.data());
  }
  if (res.status != ebla::SolverStatus::converged) state.SkipWithError(("refined_cg: " + res.stop_reason).c_str());
  iteration_count[name] = res.inner_iterations;
  correction_count[name] = res.outer_iterations;
  final_residual[name] = res.true_residual;
  loop_ms[name].push_back(1e3 * res.inner_seconds / res.inner_iterations);
  state.counters["iterations"] = res.inner_iterations;
  state.counters["corrections"] = res.outer_iterations;
  state.counters["n"] = static_cast<double>(A.size());
  const bool csr = std::is_same_v<Op, ebla::CsrOperator>;
  const std::size_t n = A.size(), z = A.nonzeros();
  const Traffic t = ir_traffic(n, csr ? csr64_bytes(n, z) : 0.0, csr ? csr32_bytes(n, z) : 0.0, csr ? 12.0 * z : 0.0);
  traffic_counters(state, name, t.total(res.inner_iterations, res.outer_iterations), res.inner_iterations, res.seconds);
}
void ir32_csr(benchmark::State& state) { ir32(state, "ir32_csr", setup->csr, setup->ir); }
void ir32_stencil(benchmark::State& state) { ir32(state, "ir32_stencil", setup->stencil, setup->ir); }

const ebla::DotPolicy exact = ebla::DotPolicy::exact();
// to tau in at most 298 iterations
template <class Op>
void to_tau(benchmark::State& state, const char* name, const Op& A, const ebla::DotPolicy& policy, double tau) {
  ebla_cg(state, name, A, policy, options(tau, 2 * iterations));
}
void cg_csr_exact(benchmark::State& state) { to_tau(state, "cg_csr_exact", setup->csr, exact, setup->tau_csr); }
void cg_stencil_exact(benchmark::State& state) {
  to_tau(state, "cg_stencil_exact", setup->stencil, exact, setup->tau_stencil);
}
void acg_csr_qdot(benchmark::State& state) { to_tau(state, "acg_csr_qdot", setup->csr, setup->acg, setup->tau_csr); }
void acg_stencil_qdot(benchmark::State& state) {
  to_tau(state, "acg_stencil_qdot", setup->stencil, setup->acg, setup->tau_stencil);
}
void acg_csr_margin0(benchmark::State& state) {
  to_tau(state, "acg_csr_margin0", setup->csr, setup->acg_margin0, setup->tau_csr);
}
void acg_stencil_margin0(benchmark::State& state) {
  to_tau(state, "acg_stencil_margin0", setup->stencil, setup->acg_margin0, setup->tau_stencil);
}
// exact CG to the relative tolerance of the ir32 rows (their "final ||r||": the true residual)
ebla::CgOptions relative_options() {
  ebla::CgOptions o = options(setup->relative_tolerance, 10000);
  o.norm = ebla::Norm::relative;
  return o;
}
void cg_csr_relative(benchmark::State& state) { ebla_cg(state, "cg_csr_relative", setup->csr, exact, relative_options()); }
void cg_stencil_relative(benchmark::State& state) {
  ebla_cg(state, "cg_stencil_relative", setup->stencil, exact, relative_options());
}

// exact CG to the same relative tolerance with p, q and r stored narrow (--storage)
ebla::CgOptions storage_options(const char* storage) {
  ebla::CgOptions o = relative_options();
  o.storage = ebla::storage_policy_by_name(storage);
  return o;
}
void storage_csr_auto(benchmark::State& state) {
  ebla_cg(state, "storage_csr_auto", setup->csr, exact, storage_options("auto"));
}
void storage_stencil_auto(benchmark::State& state) {
  ebla_cg(state, "storage_stencil_auto", setup->stencil, exact, storage_options("auto"));
}
void storage_csr_binary32(benchmark::State& state) {
  ebla_cg(state, "storage_csr_binary32", setup->csr, exact, storage_options("binary32"));
}
void storage_stencil_binary32(benchmark::State& state) {
  ebla_cg(state, "storage_stencil_binary32", setup->stencil, exact, storage_options("binary32"));
}
void storage_stencil_block16(benchmark::State& state) {
  ebla_cg(state, "storage_stencil_block16", setup->stencil, exact, storage_options("block16"));
}

// ---- the parts of one iteration (n = 1e6) ---------------------------------------------------

using exec = Kokkos::DefaultExecutionSpace;

void part_hpccg_sparsemv(benchmark::State& state) {
  std::vector<double> y(setup->csr.size());
  for (auto _ : state) {
    hpc_sparsemv(setup->hpc, setup->p.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
}
void part_csr_spmv(benchmark::State& state) {
  ebla::Vector y("y", setup->csr.size());
  for (auto _ : state) {
    setup->csr.apply(setup->p, y);
    benchmark::DoNotOptimize(y.data());
  }
}
// the same CSR arrays (ebla::CsrMatrix: size_t offsets, int columns) by HPCCG's row loop
// compiled in this file, instead of KokkosSparse::spmv from the Kokkos Kernels library
void part_csr_hand_loop(benchmark::State& state) {
  const auto& A = setup->csr.matrix();
  const std::size_t* rows = A.graph.row_map.data();
  const int* cols = A.graph.entries.data();
  const double* vals = A.values.data();
  const double* x = setup->p.data();
  std::vector<double> y(setup->csr.size());
  const int n = static_cast<int>(y.size());
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) {
      const double* v = vals + rows[i];
      const int* c = cols + rows[i];
      const int nnz = static_cast<int>(rows[i + 1] - rows[i]);
      double sum = 0.0;
      for (int j = 0; j < nnz; ++j) sum += v[j] * x[c[j]];
      y[i] = sum;
    }
    benchmark::DoNotOptimize(y.data());
  }
}
void part_stencil_apply(benchmark::State& state) {
  ebla::Vector y("y", setup->csr.size());
  for (auto _ : state) {
    setup->stencil.apply(setup->p, y);
    benchmark::DoNotOptimize(y.data());
  }
}
// y = A p for the stencil in binary32 (refined_cg's inner operator), on p rounded to float
void part_stencil_apply_float(benchmark::State& state) {
  const std::size_t n = setup->csr.size();
  ebla::FloatVector p("p32", n), y("y32", n);
  const ebla::ConstVector p64 = setup->p;
  Kokkos::parallel_for("p32", Kokkos::RangePolicy<exec>(0, n),
                       KOKKOS_LAMBDA(const std::size_t i) { p(i) = static_cast<float>(p64(i)); });
  for (auto _ : state) {
    ebla::detail::stencil27_apply(grid, grid, grid, p, y);
    benchmark::DoNotOptimize(y.data());
  }
}
// STREAM's triad, a(i) = b(i) + s c(i) on three binary64 arrays of state.range(0) entries, by a
// Kokkos parallel_for on every thread of the default execution space (the arrays first
// touched there too, by the Views' initialisation). Bytes: 24 per entry, two reads and one
// write, as STREAM counts them. Write-allocate: where a store misses the cache, the core
// reads the line before writing it (unless the compiler emits streaming stores, which it
// may not for this loop), so the memory may really move 32 bytes per entry, and the true
// bandwidth be up to 4/3 of what is reported; the solves' models count their writes the same
// way (once), so that limit_ratio compares like with like.
void part_stream_triad(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  Kokkos::View<double*> a("triad a", n), b("triad b", n), c("triad c", n);
  Kokkos::deep_copy(b, 1.0);
  Kokkos::deep_copy(c, 2.0);
  const double scalar = 3.0;
  double seconds = 0;
  for (auto _ : state) {
    const Stopwatch clock;
    Kokkos::parallel_for("stream_triad", Kokkos::RangePolicy<exec>(0, n),
                         KOKKOS_LAMBDA(const std::size_t i) { a(i) = b(i) + scalar * c(i); });
    exec().fence();
    seconds += clock.seconds();
    benchmark::DoNotOptimize(a.data());
  }
  const double bytes = 24.0 * static_cast<double>(n) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["GBps"] = 1e-9 * bytes / seconds;
  if (n == setup->csr.size()) triad_bandwidth.push_back(bytes / seconds);
}

void part_hpccg_ddot(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(hpc_ddot(setup->hpc.nrow, setup->p.data(), setup->q.data()));
}
void part_kokkos_dot(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(KokkosBlas::dot(setup->p, setup->q));
}
// ebla::dot under the exact policy (KokkosBlas::dot plus the record)
void part_ebla_dot_exact(benchmark::State& state) {
  const auto policy = ebla::DotPolicy::exact();
  for (auto _ : state) benchmark::DoNotOptimize(ebla::dot(policy, setup->p, setup->q).value);
}
void part_ebla_qdot_pq(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ebla::dot(setup->acg, setup->p, setup->q).value);
}
void part_ebla_qdot_rr(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ebla::dot(setup->acg, setup->r, setup->r).value);
}
// the three HPCCG updates of one iteration (p = r + beta p, x += alpha p, r -= alpha Ap)
void part_hpccg_waxpby3(benchmark::State& state) {
  const int n = setup->hpc.nrow;
  std::vector<double> x(n, 1.0), r(setup->r.data(), setup->r.data() + n), p(setup->p.data(), setup->p.data() + n);
  for (auto _ : state) {
    hpc_waxpby(n, 1.0, r.data(), 0.5, p.data(), p.data());
    hpc_waxpby(n, 1.0, x.data(), 1e-3, p.data(), x.data());
    hpc_waxpby(n, 1.0, r.data(), -1e-3, setup->q.data(), r.data());
    benchmark::DoNotOptimize(r.data());
  }
}
// ebla::cg's update pass (x += alpha p, r -= alpha q, fl(r^T r) chunk by chunk) as it runs
// for exact dots, and with ACG's r^T r qdot riding in it (detail::QdotStream, the plan of
// the previous call tried first, plan_margin 8); alpha is tiny, so r keeps its shape
template <bool riding>
void update_pass(benchmark::State& state) {
  const std::size_t n = setup->csr.size();
  std::vector<double> x(n, 1.0), r(setup->r.data(), setup->r.data() + n);
  const double* p = setup->p.data();
  const double* q = setup->q.data();
  const double alpha = 1e-12;
  ebla::QdotOptions o = setup->acg.qdot;
  o.plan_margin = ebla::QdotOptions::solver_margin;  // as in the solver
  std::vector<std::int64_t> hist(ebla::detail::QdotStream::histogram_size());
  for (auto _ : state) {
    ebla::detail::QdotStream s(r.data(), r.data(), n, o);
    std::vector<double> part(s.chunks());
    auto chunk = [&](std::size_t c, std::int64_t* h) {
      if (riding) {
        part[c] = s.update(c, alpha, p, q, x.data(), r.data(), h);
        return;
      }
      const std::size_t b = c * s.chunk();
      part[c] = ebla::detail::cg_update(alpha, p + b, q + b, x.data() + b, r.data() + b, std::min(s.chunk(), n - b));
    };
    if (riding) {
      ebla::detail::count_over_chunks(s.chunks(), s.histogram_size(), hist.data(), chunk);
      benchmark::DoNotOptimize(s.finish(hist.data()).value);
    } else {
      ebla::detail::for_each_chunk(s.chunks(), [&](std::size_t c) { chunk(c, nullptr); });
    }
    benchmark::DoNotOptimize(part.data());
  }
}
void part_update_exact(benchmark::State& state) { update_pass<false>(state); }
void part_update_qdot_rr(benchmark::State& state) { update_pass<true>(state); }
void part_true_residual_csr(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(setup->csr.residual_norm(setup->p, setup->problem.b));
}
void part_true_residual_stencil(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(setup->stencil.residual_norm(setup->p, setup->problem.b));
}

}  // namespace

#define SOLVE(f) BENCHMARK(f)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime()
SOLVE(hpccg_reference);
SOLVE(cg_csr_exact);
SOLVE(cg_stencil_exact);
SOLVE(acg_csr_qdot);
SOLVE(acg_stencil_qdot);
SOLVE(acg_csr_margin0);
SOLVE(acg_stencil_margin0);
SOLVE(cg_csr_relative);
SOLVE(cg_stencil_relative);
SOLVE(ir32_csr);
SOLVE(ir32_stencil);
SOLVE(storage_csr_auto);
SOLVE(storage_stencil_auto);
SOLVE(storage_csr_binary32);
SOLVE(storage_stencil_binary32);
SOLVE(storage_stencil_block16);
#define PART(f) BENCHMARK(f)->MinTime(0.2)->Unit(benchmark::kMillisecond)->UseRealTime()
PART(part_hpccg_sparsemv);
PART(part_csr_spmv);
PART(part_csr_hand_loop);
PART(part_stencil_apply);
PART(part_stencil_apply_float);
PART(part_stream_triad)->Arg(static_cast<std::int64_t>(grid) * grid * grid)->Arg(std::int64_t{1} << 25);
PART(part_hpccg_ddot);
PART(part_kokkos_dot);
PART(part_ebla_dot_exact);
PART(part_ebla_qdot_pq);
PART(part_ebla_qdot_rr);
PART(part_hpccg_waxpby3);
PART(part_update_exact);
PART(part_update_qdot_rr);
PART(part_true_residual_csr);
PART(part_true_residual_stencil);

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::vector<char*> args;  // argv without --qdot_tolerance=X, --ir_tolerance=X, --ir_inner_tolerance=X
    double qdot_tolerance = 0, ir_tolerance = 1e-10, ir_inner_tolerance = 0;
    for (int i = 0; i < argc; ++i) {
      const std::string a = argv[i];
      if (i > 0 && a.rfind("--qdot_tolerance=", 0) == 0)
        qdot_tolerance = std::strtod(a.c_str() + 17, nullptr);
      else if (i > 0 && a.rfind("--ir_inner_tolerance=", 0) == 0)
        ir_inner_tolerance = std::strtod(a.c_str() + 21, nullptr);
      else if (i > 0 && a.rfind("--ir_tolerance=", 0) == 0)
        ir_tolerance = std::strtod(a.c_str() + 15, nullptr);
      else
        args.push_back(argv[i]);
    }
    const int count = initialize_benchmarks(args, 5);
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
      Kokkos::finalize();
      return 1;
    }
    if (!(ir_tolerance > 0 && ir_tolerance < 1)) {
      std::fprintf(stderr, "--ir_tolerance=%g: must lie in (0, 1)\n", ir_tolerance);
      Kokkos::finalize();
      return 1;
    }
    make_setup(qdot_tolerance, ir_tolerance, ir_inner_tolerance);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    auto& m = reporter.median;

    std::printf("\nHPCCG %d^3 (n = %zu, %zu nonzeros), tau: CSR %.3e, stencil %.3e; ACG %s; medians\n", grid,
                setup->csr.size(), setup->csr.nonzeros(), setup->tau_csr, setup->tau_stencil,
                setup->acg.to_string().c_str());
    // the triad: the limit every solve is held against (bytes/s at the problem's n)
    const std::string triad_n = "part_stream_triad/" + std::to_string(setup->csr.size());
    const std::string triad_big = "part_stream_triad/" + std::to_string(std::int64_t{1} << 25);
    const double triad = triad_bandwidth.empty() ? 0.0 : Sample(triad_bandwidth).median();
    const double triad_memory =  // bytes/s past every cache
        m.count(triad_big) ? 24e3 * static_cast<double>(std::int64_t{1} << 25) / m[triad_big] : 0.0;
    if (m.count(triad_n))
      std::printf("STREAM triad (%d threads): n = %zu: %.2f ms, %.2f GB/s (median of the repetitions)", ebla::detail::host_threads(),
                  setup->csr.size(), m[triad_n], 1e-9 * triad);
    if (m.count(triad_big)) std::printf("; n = 2^25: %.2f ms, %.2f GB/s", m[triad_big], 1e-9 * triad_memory);
    std::printf("\n");
    std::printf("%-19s %10s %6s %10s %10s %12s %9s %7s %6s %6s\n", "solve", "total ms", "iters", "ms/iter", "loop/iter",
                "final ||r||", "MB/iter", "GB/s", "limit", "2^25");
    auto per_iter = [&](const char* name) {
      const int it = iteration_count[name];
      return m.count(name) && it > 0 ? m[name] / it : 0.0;
    };
    for (const char* name : {"hpccg_reference", "cg_csr_exact", "cg_stencil_exact", "acg_csr_qdot", "acg_stencil_qdot",
                             "acg_csr_margin0", "acg_stencil_margin0", "cg_csr_relative", "cg_stencil_relative",
                             "ir32_csr", "ir32_stencil", "storage_csr_auto", "storage_stencil_auto",
                             "storage_csr_binary32", "storage_stencil_binary32", "storage_stencil_block16"})
      if (m.count(name)) {
        const double bytes = bytes_per_iteration[name], ms = per_iter(name);
        std::printf("%-19s %10.1f %6d %10.2f %10.2f %12.3e %9.2f %7.2f", name, m[name], iteration_count[name], ms,
                    loop_ms.count(name) ? Sample(loop_ms[name]).median() : ms, final_residual[name], 1e-6 * bytes,
                    ms > 0 ? 1e-6 * bytes / ms : 0.0);
        // limit_ratio against the triad at n, and against the triad past every cache
        for (double bandwidth : {triad, triad_memory})
          if (bandwidth > 0 && bytes > 0) std::printf(" %6.2f", ms / (1e3 * bytes / bandwidth));
        if (correction_count.count(name)) std::printf("  (%d corrections; iters: float CG)", correction_count[name]);
        std::printf("\n");
      }
    auto ratio = [&](const char* label, const char* a, const char* b, bool total) {
      if (m.count(a) && m.count(b) && m[b] > 0)
        std::printf("%-32s %6.2f\n", label, total ? m[a] / m[b] : per_iter(a) / per_iter(b));
    };
    std::printf("\n");
    ratio("cg_csr / hpccg_reference (iter)", "cg_csr_exact", "hpccg_reference", false);
    ratio("cg_stencil / hpccg_reference", "cg_stencil_exact", "hpccg_reference", false);
    if (m.count("hpccg_reference") && loop_ms.count("cg_csr_exact"))
      std::printf("%-32s %6.2f\n", "cg_csr loop / hpccg_reference", Sample(loop_ms["cg_csr_exact"]).median() / per_iter("hpccg_reference"));
    ratio("acg_csr / cg_csr (iter)", "acg_csr_qdot", "cg_csr_exact", false);
    ratio("acg_stencil / cg_stencil (iter)", "acg_stencil_qdot", "cg_stencil_exact", false);
    ratio("acg_csr_margin0 / cg_csr (iter)", "acg_csr_margin0", "cg_csr_exact", false);
    ratio("acg_stencil_margin0 / cg_stencil (iter)", "acg_stencil_margin0", "cg_stencil_exact", false);
    ratio("ir32_csr / cg_csr_relative (total)", "ir32_csr", "cg_csr_relative", true);
    ratio("storage_csr_auto / cg_csr_relative (total)", "storage_csr_auto", "cg_csr_relative", true);
    ratio("storage_stencil_auto / cg_stencil_relative (total)", "storage_stencil_auto", "cg_stencil_relative", true);
    ratio("storage_csr_binary32 / cg_csr_relative (total)", "storage_csr_binary32", "cg_csr_relative", true);
    ratio("storage_stencil_binary32 / cg_stencil_relative", "storage_stencil_binary32", "cg_stencil_relative", true);
    ratio("storage_stencil_block16 / cg_stencil_relative", "storage_stencil_block16", "cg_stencil_relative", true);
    ratio("ir32_stencil / cg_stencil_relative (total)", "ir32_stencil", "cg_stencil_relative", true);

    // the pieces of one iteration
    std::printf("\nparts (ms per call)\n");
    for (const auto& [name, t] : m)
      if (name.rfind("part_", 0) == 0) std::printf("  %-28s %8.3f\n", name.c_str(), t);
    benchmark::Shutdown();
    setup.reset();
  }
  Kokkos::finalize();
  return 0;
}
