// Distributed ACG and APM against the serial solvers on the same global problem, on 2 or 3
// ranks (mpiexec -n P): HPCCG stacked in z (the stencil with halo exchange, and the CSR
// matrix split by rows, from the global matrix and built per rank), a shifted graph
// Laplacian for CG, graph Laplacians for the power method. Every rank also runs the serial solver on the whole problem and compares:
//   - exact dots: the same iteration count and status; the solution within the bound that
//     the two true residuals give (||x_d - x_s|| <= (||r_d|| + ||r_s||) / lambda_min(A));
//     the eigenvalue within the two runs' last changes plus their residual bounds;
//   - qdot (in one collective per dot, and in two): c_0 = qdot(r_0, r_0) (the same vector in both runs) within the sum of the two
//     certified bounds; the run converges with a true residual below tau;
//   - the reported true residual equals the serial double-double residual of the gathered x;
//   - every rank holds the same scalars (bit for bit);
//   - the space's dot products: |value - x^T y| <= bound against a __float128 reference for
//     exact, qdot and fixed policies on random and cancelling vectors;
//   - bad input on one rank only (NaN in b, a wrong length) throws InvalidArgument on all.
// Exit code: 0 if every check passed on every rank, 1 otherwise.
#include <ebla/core/error.hpp>
#include <ebla/mpi/solvers.hpp>
#include <ebla/solvers/problems.hpp>

#include "mpi_checks.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

__extension__ typedef __float128 quad;

namespace {

using namespace ebla_mpi_test;

bool same_on_all_ranks(double v) {
  double lo = v, hi = v;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return (lo == hi) || (std::isnan(lo) && std::isnan(hi));
}

std::vector<double> host(ebla::ConstVector v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

ebla::Vector view(const std::vector<double>& v, const char* label = "v") {
  ebla::Vector r(std::string(label), v.size());
  auto h = Kokkos::create_mirror_view(r);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(r, h);
  return r;
}

ebla::Vector rows(ebla::ConstVector v, std::size_t first, std::size_t count) {
  const std::vector<double> h = host(v);
  return view(std::vector<double>(h.begin() + static_cast<std::ptrdiff_t>(first),
                                  h.begin() + static_cast<std::ptrdiff_t>(first + count)));
}

// The global vector from every rank's rows (rank order).
std::vector<double> gathered(ebla::ConstVector local) {
  std::vector<double> mine = host(local);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(ranks), offsets(ranks, 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < ranks; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  MPI_Allgatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}

// ---- CG ----------------------------------------------------------------------------------

// The distributed and the serial CG on the same problem; lambda_min a lower bound on A's
// smallest eigenvalue (for the distance of the solutions).
template <class DistOp, class SerialOp>
void compare_cg(const std::string& name, const DistOp& D, const SerialOp& S, ebla::ConstVector b_global,
                double lambda_min, const ebla::DotPolicy& dots, bool jacobi,
                ebla::mpi::QdotCollectives collectives = ebla::mpi::QdotCollectives::one) {
  const std::string what = name + " " + dots.to_string() + (jacobi ? " jacobi" : "") +
                           (collectives == ebla::mpi::QdotCollectives::two ? " (two collectives)" : "") + ": ";
  ebla::CgOptions o;
  o.tolerance = 1e-9;
  o.jacobi = jacobi;
  const ebla::Vector b = rows(b_global, D.first_row(), D.size());
  const ebla::Vector x0("x0", D.size()), x0_global("x0", S.size());
  const ebla::CgResult d = ebla::mpi::cg(D, b, x0, dots, o, collectives);
  const ebla::CgResult s = ebla::cg(S, b_global, x0_global, dots, o);
  check(d.status == ebla::SolverStatus::converged, what + "converged, got " + ebla::to_string(d.status));
  check(d.true_residual <= 2 * o.tolerance, what + "true residual " + num(d.true_residual));
  for (double v : {static_cast<double>(d.iterations), d.true_residual, d.recursive_residual, d.rr0.value, d.rr0.bound})
    check(same_on_all_ranks(v), what + "the same on every rank: " + num(v));
  const std::vector<double> x = gathered(d.x);
  const double serial_residual = S.residual_norm(view(x), b_global);
  check(std::fabs(serial_residual - d.true_residual) <= 1e-12 * serial_residual + 1e-300,
        what + "reported true residual " + num(d.true_residual) + " vs serial residual of the gathered x " +
            num(serial_residual));
  // A (x_d - x_s) = r_s - r_d: ||x_d - x_s|| <= (||r_d|| + ||r_s||) / lambda_min
  const double dx = distance(x, host(s.x));
  check(dx <= (d.true_residual + s.true_residual) / lambda_min * (1 + 1e-12),
        what + "||x_d - x_s|| = " + num(dx) + " above " + num((d.true_residual + s.true_residual) / lambda_min));
  if (dots.kind == ebla::DotKind::exact)
    check(d.iterations == s.iterations, what + "iterations " + std::to_string(d.iterations) + " vs serial " +
                                            std::to_string(s.iterations));
  else  // c_0 is a dot product of the same vector in both runs
    check(std::fabs(d.rr0.value - s.rr0.value) <= d.rr0.bound + s.rr0.bound,
          what + "c_0 " + num(d.rr0.value) + " vs serial " + num(s.rr0.value) + " beyond the bounds");
}

void cg_on_hpccg(const std::vector<ebla::DotPolicy>& policies) {
  // the global grid 10 x 9 x 12 for 2 and 3 ranks
  const int nx = 10, ny = 9, nz = 12 / ranks;
  const ebla::mpi::DistributedStencil D(nx, ny, nz, MPI_COMM_WORLD);
  const ebla::StencilOperator S(nx, ny, nz * ranks);
  check(D.global_size() == S.size() && D.nonzeros() == S.nonzeros(), "stencil sizes");
  const ebla::Vector b_global = ebla::hpccg_rhs(nx, ny, nz * ranks);
  const std::vector<double> b_local = host(ebla::mpi::hpccg_rhs(D)), b_all = host(b_global);
  check(std::equal(b_local.begin(), b_local.end(), b_all.begin() + static_cast<std::ptrdiff_t>(D.first_row())),
        "distributed HPCCG right-hand side equals the serial one");
  const ebla::HpccgProblem h = ebla::hpccg_problem(nx, ny, nz * ranks);
  const auto C = ebla::mpi::DistributedCsr::from_global(h.A, MPI_COMM_WORLD);
  const ebla::CsrOperator SC(h.A);
  // the same rows built by each rank for its planes only
  const ebla::mpi::DistributedCsr R(ebla::hpccg_rows(nx, ny, nz * ranks, nz * rank, nz), D.first_row(), D.global_size(),
                                    MPI_COMM_WORLD);
  check(R.nonzeros() == C.nonzeros() && R.ghosts() == C.ghosts(), "hpccg_rows: the distributed matrix of from_global");
  compare_cg("hpccg rows", R, SC, b_global, 1.0, ebla::DotPolicy::exact(), false);
  // lambda_min >= 27 - 26 = 1 (Gershgorin)
  for (const auto& dots : policies) {
    compare_cg("hpccg stencil", D, S, b_global, 1.0, dots, false);
    compare_cg("hpccg csr", C, SC, b_global, 1.0, dots, false);
    compare_cg("hpccg stencil", D, S, b_global, 1.0, dots, false, ebla::mpi::QdotCollectives::two);
  }
  compare_cg("hpccg stencil", D, S, b_global, 1.0, ebla::DotPolicy::exact(), true);
}

void cg_on_laplacian(const std::vector<ebla::DotPolicy>& policies) {
  // L + I: SPD with lambda_min >= 1
  const std::size_t n = 700;
  ebla::CsrMatrix L = ebla::graph_laplacian(n, 6, 5);
  auto vals = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), L.values);
  auto rowp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), L.graph.row_map);
  auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), L.graph.entries);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = rowp(i); k < rowp(i + 1); ++k)
      if (static_cast<std::size_t>(cols(k)) == i) vals(k) += 1;
  Kokkos::deep_copy(L.values, vals);
  const auto D = ebla::mpi::DistributedCsr::from_global(L, MPI_COMM_WORLD);
  const ebla::CsrOperator S(L);
  const ebla::Vector b = ebla::random_unit_vector(n, 9);
  for (const auto& dots : policies) compare_cg("laplacian + I", D, S, b, 1.0, dots, dots.kind == ebla::DotKind::exact);
}

// ---- power method ------------------------------------------------------------------------

void power_on_laplacian(const std::vector<ebla::DotPolicy>& policies) {
  for (std::size_t n : {std::size_t{500}, std::size_t{1201}}) {
    const ebla::CsrMatrix L = ebla::graph_laplacian(n, 8, 3 + n);
    const auto D = ebla::mpi::DistributedCsr::from_global(L, MPI_COMM_WORLD);
    const ebla::CsrOperator S(L);
    const ebla::Vector x0 = ebla::random_unit_vector(n, 11);
    for (const auto& dots : policies) {
      const std::string what = "power n = " + std::to_string(n) + " " + dots.to_string() + ": ";
      ebla::PowerOptions o;
      o.tolerance = 1e-8;
      o.max_iterations = 2000;
      const ebla::PowerResult d = ebla::mpi::power_method(D, rows(x0, D.first_row(), D.size()), dots, o);
      const ebla::PowerResult s = ebla::power_method(S, x0, dots, o);
      check(d.status == s.status, what + "status " + ebla::to_string(d.status) + " vs " + ebla::to_string(s.status));
      for (double v : {d.eigenvalue, d.residual, static_cast<double>(d.iterations)})
        check(same_on_all_ranks(v), what + "the same on every rank: " + num(v));
      if (dots.kind == ebla::DotKind::exact)
        check(d.iterations == s.iterations, what + "iterations " + std::to_string(d.iterations) + " vs serial " +
                                                std::to_string(s.iterations));
      // both Rayleigh quotients lie within ||A x - lambda x|| of an eigenvalue; here the same one
      const double gap = std::fabs(d.eigenvalue - s.eigenvalue);
      check(gap <= d.residual + s.residual + 1e-9 * s.eigenvalue,
            what + "eigenvalue " + num(d.eigenvalue) + " vs serial " + num(s.eigenvalue));
      const std::vector<double> v = gathered(d.eigenvector);
      ebla::Vector lv = view(v);
      Kokkos::parallel_for(
          "scale", v.size(), KOKKOS_LAMBDA(const std::size_t i) { lv(i) *= d.eigenvalue; });
      const double serial_residual = S.residual_norm(view(v), lv);
      check(std::fabs(serial_residual - d.residual) <= 1e-9 * d.residual + 1e-14,
            what + "residual " + num(d.residual) + " vs serial residual of the gathered vector " + num(serial_residual));
    }
  }
  // the stencil: HPCCG's matrix has its largest eigenvalue below 27 + 26 = 53 (Gershgorin)
  const ebla::mpi::DistributedStencil D(8, 8, 12 / ranks, MPI_COMM_WORLD);
  const ebla::StencilOperator S(8, 8, 12);
  const ebla::Vector x0 = ebla::random_unit_vector(S.size(), 2);
  ebla::PowerOptions o;
  o.tolerance = 1e-9;
  o.max_iterations = 3000;
  const auto d = ebla::mpi::power_method(D, rows(x0, D.first_row(), D.size()), ebla::DotPolicy::exact(), o);
  const auto s = ebla::power_method(S, x0, ebla::DotPolicy::exact(), o);
  check(d.iterations == s.iterations && d.eigenvalue <= 53,
        "power stencil: iterations " + std::to_string(d.iterations) + " vs " + std::to_string(s.iterations) +
            ", eigenvalue " + num(d.eigenvalue));
  check(std::fabs(d.eigenvalue - s.eigenvalue) <= d.residual + s.residual, "power stencil: eigenvalue");
}

// ---- the space's dot products against __float128 ------------------------------------------

void dots_against_reference() {
  std::mt19937_64 gen(77);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::vector<ebla::DotPolicy> policies = {
      ebla::DotPolicy::exact(), ebla::DotPolicy::approximate([] { ebla::QdotOptions q; q.tolerance = 1e-4; return q; }()),
      ebla::DotPolicy::fixed(ebla::format_by_name("binary16")), ebla::DotPolicy::fixed(ebla::format_by_name("bfloat16"))};
  int cases = 0;
  for (int t = 0; t < 200; ++t) {
    const std::size_t n = 1 + gen() % 3000;
    std::vector<double> x(n), y(n);
    const int spread = static_cast<int>(gen() % 60);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = std::ldexp(u(gen), static_cast<int>(gen() % (spread + 1)) - spread / 2);
      y[i] = std::ldexp(u(gen), static_cast<int>(gen() % (spread + 1)) - spread / 2);
    }
    if (t % 4 == 1)  // cancellation: the second half undoes the first
      for (std::size_t i = n / 2; i < n; ++i) {
        x[i] = -x[i - n / 2];
        y[i] = y[i - n / 2];
      }
    const bool squares = t % 5 == 0;
    if (squares) y = x;
    quad exact = 0, magnitude = 0;
    for (std::size_t i = 0; i < n; ++i) {
      exact += static_cast<quad>(x[i]) * y[i];
      magnitude += static_cast<quad>(std::fabs(x[i]) * std::fabs(y[i]));
    }
    const double slack = static_cast<double>(magnitude * static_cast<quad>(n) * 0x1p-112);
    const std::size_t first = ebla::mpi::block_first_row(n, rank, ranks), last = ebla::mpi::block_first_row(n, rank + 1, ranks);
    const ebla::Vector xl = rows(view(x), first, last - first);
    const ebla::Vector yl = squares ? xl : rows(view(y), first, last - first);
    for (const auto& p : policies) {
      const ebla::DotRecord r = ebla::mpi::dot(p, xl, yl, MPI_COMM_WORLD);
      check(same_on_all_ranks(r.value) && same_on_all_ranks(r.bound), p.to_string() + ": the same on every rank");
      if (std::isnan(r.bound)) continue;  // exact with x != y: no bound is claimed
      ++cases;
      const quad diff = static_cast<quad>(r.value) - exact;
      const double err = static_cast<double>(diff < 0 ? -diff : diff);
      check(err <= r.bound + slack, p.to_string() + " n = " + std::to_string(n) + ": error " + num(err) + " > bound " +
                                        num(r.bound));
    }
  }
  check(cases >= 400, "bound cases: " + std::to_string(cases));
}

// ---- bad input on one rank ---------------------------------------------------------------

template <class F>
void throws_everywhere(const std::string& what, F f) {
  int threw = 0;
  try {
    f();
  } catch (const ebla::InvalidArgument& e) {
    threw = 1;
  }
  int all = threw;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  check(all == 1, what + ": InvalidArgument on every rank (here: " + (threw ? "yes" : "no") + ")");
}

void bad_input() {
  const ebla::mpi::DistributedStencil D(6, 6, 4, MPI_COMM_WORLD);
  ebla::Vector b = ebla::mpi::hpccg_rhs(D), x0("x0", D.size());
  const int last = ranks - 1;
  ebla::Vector bad_b("b", D.size());
  Kokkos::deep_copy(bad_b, b);
  if (rank == last) Kokkos::deep_copy(Kokkos::subview(bad_b, 3), std::nan(""));
  throws_everywhere("NaN in b on the last rank", [&] { ebla::mpi::cg(D, bad_b, x0, ebla::DotPolicy::exact(), {}); });
  const ebla::Vector short_x0("x0", rank == 0 ? D.size() - 1 : D.size());
  throws_everywhere("x0 one entry short on rank 0", [&] { ebla::mpi::cg(D, b, short_x0, ebla::DotPolicy::exact(), {}); });
  throws_everywhere("x0 one entry short on rank 0 (power)",
                    [&] { ebla::mpi::power_method(D, short_x0, ebla::DotPolicy::exact(), {}); });
  throws_everywhere("a block of another size on the last rank",
                    [&] { ebla::mpi::DistributedStencil(6, rank == last ? 7 : 6, 4, MPI_COMM_WORLD); });
  ebla::CgOptions jacobi;
  jacobi.jacobi = true;
  jacobi.stop = ebla::StopTest::certified;
  throws_everywhere("certified stop with Jacobi", [&] { ebla::mpi::cg(D, b, x0, ebla::DotPolicy::exact(), jacobi); });
}

}  // namespace

int main(int argc, char** argv) {
  start_mpi(&argc, &argv);
  Kokkos::initialize(argc, argv);
  {
    ebla::QdotOptions loose, tight;
    loose.tolerance = 1e2;
    loose.policy = ebla::QdotPolicy::paper;
    tight.tolerance = 1e-6;
    const std::vector<ebla::DotPolicy> policies = {ebla::DotPolicy::exact(), ebla::DotPolicy::approximate(loose),
                                                   ebla::DotPolicy::approximate(tight)};
    cg_on_hpccg(policies);
    cg_on_laplacian({policies[0], policies[2]});  // tolerance 1e2 breaks this one down, serial or not
    power_on_laplacian({ebla::DotPolicy::exact(), ebla::DotPolicy::approximate(tight)});
    dots_against_reference();
    bad_input();
  }
  Kokkos::finalize();
  long total[2];
  totals(total);
  if (rank == 0) std::printf("test_mpi_solvers on %d ranks: %ld checks, %ld failed\n", ranks, total[0], total[1]);
  MPI_Finalize();
  return total[1] == 0 ? 0 : 1;
}
