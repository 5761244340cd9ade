// ebla::mpi::load_problem, global_max and gather_to_root on 2 or 3 ranks (mpiexec -n P):
// each rank's rows of a problem against the serial problem on the global grid or matrix:
//   - HPCCG stacked in z, stencil and CSR operators: global n and nnz those of the serial
//     problem on nx x ny x (P nz); for CG b = A 1 (the serial b's rows), x0 = 0, x* = 1;
//     for the power method the serial start vector's rows; A applied to ones gives b's rows;
//   - a Laplacian split in balanced row blocks (block_first_row): b, x0, x* are the serial
//     rows; the description names the ranks;
//   - a dense operator throws InvalidArgument naming the spec's operator field;
//   - global_max is the largest rank's value; gather_to_root concatenates the ranks' maps on
//     rank 0 in rank order and empties them elsewhere.
// Exit code: 0 if every check passed on every rank, 1 otherwise.
#include <ebla/core/error.hpp>
#include <ebla/mpi/problem.hpp>

#include "mpi_checks.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace ebla_mpi_test;

std::vector<double> host(ebla::ConstVector v) {
  std::vector<double> h(v.extent(0));
  Kokkos::deep_copy(Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()), v);
  return h;
}

// rows [first, first + count) of the serial vector equal the distributed one bit for bit
bool same_rows(ebla::ConstVector serial, ebla::ConstVector mine, std::size_t first) {
  const std::vector<double> s = host(serial), m = host(mine);
  if (first + m.size() > s.size()) return false;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (s[first + i] != m[i]) return false;
  return true;
}

void check_hpccg(ebla::OperatorKind op, ebla::ProblemUse use) {
  ebla::ProblemSpec spec;
  spec.nx = 4;
  spec.ny = 3;
  spec.nz = 2;
  spec.op = op;
  const std::string what = std::string("hpccg ") + ebla::to_string(op) + (use == ebla::ProblemUse::cg ? " cg" : " power");
  const ebla::mpi::DistributedProblem p = ebla::mpi::load_problem(spec, use, MPI_COMM_WORLD);
  ebla::ProblemSpec global = spec;
  global.nz = spec.nz * ranks;
  global.op = ebla::OperatorKind::csr;
  const ebla::Problem s = ebla::load_problem(global, use);
  const std::size_t owned = 4 * 3 * 2, first = owned * static_cast<std::size_t>(rank);
  check(p.n == s.n && p.nnz == s.nnz, what + ": global n and nnz");
  check(p.operator_name == ebla::to_string(op), what + ": operator name");
  check(p.nz == 2 && p.x0.extent(0) == owned, what + ": one rank's planes");
  if (use == ebla::ProblemUse::cg) {
    check(same_rows(s.b, p.b, first), what + ": b = A 1 on the owned rows");
    check(host(p.x0) == std::vector<double>(owned, 0.0), what + ": x0 = 0");
    check(host(p.x_exact) == std::vector<double>(owned, 1.0) && p.x_exact_source == "1", what + ": x* = 1");
    ebla::Vector Ax("Ax", owned);
    std::visit([&](const auto& A) { A.apply(p.x_exact, Ax); }, p.op);
    check(host(Ax) == host(p.b), what + ": A 1 = b");
  } else {
    check(same_rows(s.x0, p.x0, first), what + ": the serial start vector's rows");
  }
  check(p.description.find("on " + std::to_string(ranks) + " MPI ranks (ranks stacked in z)") != std::string::npos,
        what + ": description '" + p.description + "'");
}

void check_laplacian() {
  ebla::ProblemSpec spec;
  spec.source = ebla::ProblemSource::laplacian;
  spec.n = 50;
  spec.degree = 4;
  spec.shift = 0.5;
  const ebla::mpi::DistributedProblem p = ebla::mpi::load_problem(spec, ebla::ProblemUse::cg, MPI_COMM_WORLD);
  const ebla::Problem s = ebla::load_problem(spec, ebla::ProblemUse::cg);
  const std::size_t first = ebla::mpi::block_first_row(50, rank, ranks);
  const std::size_t count = ebla::mpi::block_first_row(50, rank + 1, ranks) - first;
  check(p.n == 50 && p.nnz == s.nnz && p.b.extent(0) == count, "laplacian: sizes");
  check(std::holds_alternative<ebla::mpi::DistributedCsr>(p.op), "laplacian: rows of a CSR matrix");
  check(same_rows(s.b, p.b, first) && same_rows(s.x0, p.x0, first) && same_rows(s.x_exact, p.x_exact, first),
        "laplacian: b, x0 and x* are the serial rows");
  check(p.description.find("(rows in blocks)") != std::string::npos, "laplacian: description '" + p.description + "'");
}

void check_dense() {
  ebla::ProblemSpec spec;
  spec.op = ebla::OperatorKind::dense;
  spec.name_field = [](const std::string& field) { return "run --" + field; };
  bool thrown = false;
  try {
    ebla::mpi::load_problem(spec, ebla::ProblemUse::cg, MPI_COMM_WORLD);
  } catch (const ebla::InvalidArgument& e) {
    thrown = std::string(e.what()).rfind("run --operator: dense is not distributed", 0) == 0;
  }
  check(thrown, "dense: InvalidArgument naming the operator field");
}

void check_collectives() {
  check(ebla::mpi::global_max(static_cast<double>(rank) - 0.5, MPI_COMM_WORLD) == ranks - 1.5, "global_max");
  std::vector<std::uint8_t> map(static_cast<std::size_t>(rank) + 1, static_cast<std::uint8_t>(rank));
  ebla::mpi::gather_to_root(map, MPI_COMM_WORLD);
  std::vector<std::uint8_t> expected;
  for (int r = 0; rank == 0 && r < ranks; ++r) expected.insert(expected.end(), static_cast<std::size_t>(r) + 1, r);
  check(map == expected, "gather_to_root: rank order on rank 0, empty elsewhere");
}

void run() {
  for (ebla::OperatorKind op : {ebla::OperatorKind::csr, ebla::OperatorKind::stencil})
    for (ebla::ProblemUse use : {ebla::ProblemUse::cg, ebla::ProblemUse::power}) check_hpccg(op, use);
  check_laplacian();
  check_dense();
  check_collectives();
}

}  // namespace

int main(int argc, char** argv) { return ebla_mpi_test::run_program(argc, argv, "test_mpi_problem", run); }
