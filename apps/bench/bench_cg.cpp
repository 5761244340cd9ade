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
//    plan moved).
// Each solve is one benchmark iteration (Iterations(1)), repeated 5 times by default
// (--benchmark_repetitions=N overrides); the table at the end uses the medians. Time per
// iteration = total / iterations (for ebla::cg the total includes its input checks and the
// double-double true residual at exit).
//
// part_* benchmarks time the pieces of one iteration on vectors of a CG run (r, p, A p
// after 75 HPCCG iterations): the sparse products, dot products, qdot, HPCCG's vector updates,
// and the true residual that ebla::cg computes once at exit.
#include <ebla/core/parallel.hpp>
#include <ebla/experiments/hpccg_baseline.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_host.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/problems.hpp>
#include <ebla/solvers/sweep.hpp>

#include <KokkosBlas1_dot.hpp>
#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
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
  ebla::Vector r, p, q;                 // CG vectors for the part_* benchmarks
};
std::unique_ptr<Setup> setup;  // released before Kokkos::finalize

std::map<std::string, int> iteration_count;    // benchmark -> iterations of its solves
std::map<std::string, double> final_residual;  // benchmark -> ||r|| at exit

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

void make_setup(double qdot_tolerance) {
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
  std::printf("ACG dot policy: %s%s\n\n", s.acg.to_string().c_str(), qdot_tolerance > 0 ? " (--qdot_tolerance)" : " (sweep)");
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
  for (auto _ : state) {
    state.PauseTiming();
    std::fill(x.begin(), x.end(), 0.0);  // x0 = 0
    state.ResumeTiming();
    its = hpc_cg(s.hpc, s.hpc_b.data(), x.data(), hpccg_max_iter, 0.0, v);
    benchmark::DoNotOptimize(x.data());
  }
  iteration_count["hpccg_reference"] = its;
  final_residual["hpccg_reference"] = std::sqrt(hpc_ddot(s.hpc.nrow, v.r.get(), v.r.get()));
  state.counters["iterations"] = its;
  state.counters["n"] = static_cast<double>(s.csr.size());
}

template <class Op>
void ebla_cg(benchmark::State& state, const char* name, const Op& A, const ebla::DotPolicy& policy, double tau) {
  ebla::CgResult res;
  for (auto _ : state) {
    res = solve(A, policy, tau, 2 * iterations);
    benchmark::DoNotOptimize(res.x.data());
  }
  iteration_count[name] = res.iterations;
  final_residual[name] = res.recursive_residual;
  loop_ms[name].push_back(1e3 * res.iteration_seconds / res.iterations);
  state.counters["iterations"] = res.iterations;
  state.counters["n"] = static_cast<double>(A.size());
}

const ebla::DotPolicy exact = ebla::DotPolicy::exact();
void cg_csr_exact(benchmark::State& state) { ebla_cg(state, "cg_csr_exact", setup->csr, exact, setup->tau_csr); }
void cg_stencil_exact(benchmark::State& state) {
  ebla_cg(state, "cg_stencil_exact", setup->stencil, exact, setup->tau_stencil);
}
void acg_csr_qdot(benchmark::State& state) { ebla_cg(state, "acg_csr_qdot", setup->csr, setup->acg, setup->tau_csr); }
void acg_stencil_qdot(benchmark::State& state) {
  ebla_cg(state, "acg_stencil_qdot", setup->stencil, setup->acg, setup->tau_stencil);
}
void acg_csr_margin0(benchmark::State& state) {
  ebla_cg(state, "acg_csr_margin0", setup->csr, setup->acg_margin0, setup->tau_csr);
}
void acg_stencil_margin0(benchmark::State& state) {
  ebla_cg(state, "acg_stencil_margin0", setup->stencil, setup->acg_margin0, setup->tau_stencil);
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
#define PART(f) BENCHMARK(f)->MinTime(0.2)->Unit(benchmark::kMillisecond)->UseRealTime()
PART(part_hpccg_sparsemv);
PART(part_csr_spmv);
PART(part_csr_hand_loop);
PART(part_stencil_apply);
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
    std::vector<char*> args;  // argv without --qdot_tolerance=X
    double qdot_tolerance = 0;
    for (int i = 0; i < argc; ++i) {
      const std::string a = argv[i];
      if (i > 0 && a.rfind("--qdot_tolerance=", 0) == 0)
        qdot_tolerance = std::strtod(a.c_str() + 17, nullptr);
      else
        args.push_back(argv[i]);
    }
    const int count = initialize_benchmarks(args, 5);
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
      Kokkos::finalize();
      return 1;
    }
    make_setup(qdot_tolerance);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    auto& m = reporter.median;

    std::printf("\nHPCCG %d^3 (n = %zu, %zu nonzeros), tau: CSR %.3e, stencil %.3e; ACG %s; medians\n", grid,
                setup->csr.size(), setup->csr.nonzeros(), setup->tau_csr, setup->tau_stencil,
                setup->acg.to_string().c_str());
    std::printf("%-18s %10s %6s %10s %10s %12s\n", "solve", "total ms", "iters", "ms/iter", "loop/iter", "final ||r||");
    auto per_iter = [&](const char* name) {
      const int it = iteration_count[name];
      return m.count(name) && it > 0 ? m[name] / it : 0.0;
    };
    for (const char* name : {"hpccg_reference", "cg_csr_exact", "cg_stencil_exact", "acg_csr_qdot", "acg_stencil_qdot",
                             "acg_csr_margin0", "acg_stencil_margin0"})
      if (m.count(name))
        std::printf("%-18s %10.1f %6d %10.2f %10.2f %12.3e\n", name, m[name], iteration_count[name], per_iter(name),
                    loop_ms.count(name) ? Sample(loop_ms[name]).median() : per_iter(name), final_residual[name]);
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
