// A test problem on the ranks of a communicator (see problem.hpp).
#include <ebla/mpi/problem.hpp>

#include <ebla/core/error.hpp>
#include <ebla/kernels/mpfma.hpp>
#include <ebla/solvers/problems.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace ebla::mpi {

namespace {

// Rows [first, first + count) of v, in a view of their own.
Vector rows(ConstVector v, std::size_t first, std::size_t count) {
  Vector r(std::string(v.label()) + " (owned rows)", count);
  Kokkos::deep_copy(r, Kokkos::subview(v, Kokkos::make_pair(first, first + count)));
  return r;
}

void keep_rows(Vector& v, std::size_t first, std::size_t count) {
  if (v.extent(0) > 0) v = rows(v, first, count);
}

// HPCCG stacked in z on the operator A of this rank's planes: sizes, and the vectors on the
// owned rows (for cg b = A 1, exact: integer sums; x0 = 0; the solution 1; for power the
// rows of the serial run's random unit start vector).
template <class Op>
DistributedProblem hpccg_problem(const Op& A, const char* operator_name, const ProblemSpec& spec, ProblemUse use) {
  ProblemData p;
  p.name = "hpccg";
  p.operator_name = operator_name;
  p.n = A.global_size();
  p.nnz = A.nonzeros();
  p.nx = spec.nx;
  p.ny = spec.ny;
  p.nz = spec.nz;
  if (use == ProblemUse::cg) {
    p.x_exact = Vector("ebla ones", A.size());
    Kokkos::deep_copy(p.x_exact, 1.0);
    p.x_exact_source = "1";
    p.b = Vector("ebla hpccg b", A.size());
    A.apply(p.x_exact, p.b);
    p.b_source = "A 1 (HPCCG)";
    p.x0 = Vector("ebla x0", A.size());
    p.x0_source = "0";
  } else {
    p.x0 = rows(random_unit_vector(p.n, spec.seed), A.first_row(), A.size());
    p.x0_source = "random unit vector, seed " + std::to_string(spec.seed);
  }
  return {std::move(p), A};
}

// Each rank builds its own planes, matrix-free or as rows with global columns.
DistributedProblem load_hpccg(const ProblemSpec& spec, ProblemUse use, int rank, int ranks, MPI_Comm comm) {
  const int gz = spec.nz * ranks;
  const std::size_t plane = static_cast<std::size_t>(spec.nx) * spec.ny;
  DistributedProblem p =
      spec.op == OperatorKind::stencil
          ? hpccg_problem(DistributedStencil(spec.nx, spec.ny, spec.nz, comm), "stencil", spec, use)
          : hpccg_problem(DistributedCsr(hpccg_rows(spec.nx, spec.ny, gz, spec.nz * rank, spec.nz),
                                         plane * spec.nz * rank, plane * gz, comm),
                          "csr", spec, use);
  p.description = "HPCCG 27-point stencil on a " + std::to_string(spec.nx) + " x " + std::to_string(spec.ny) + " x " +
                  std::to_string(gz) + " grid, on " + std::to_string(ranks) + " MPI ranks (ranks stacked in z)";
  return p;
}

// A 64-bit digest of the bytes of a file, read in blocks (never held whole): each 8-byte
// word (little-endian; the last one padded with zeros) mixed into the state by splitmix64,
// then the length.
std::uint64_t file_digest(const std::string& path, const std::string& option) {
  // every rank reads the whole file: a pipe or a FIFO would reach one rank (and be drained
  // by the digest), a FIFO that no process writes to would block here
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw_invalid(option, "'" + path + "' is not a regular file: under mpirun every rank reads the whole file, "
                          "so it must be one");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid(option, "cannot open '" + path + "': " + std::strerror(errno));
  std::vector<char> block(std::size_t{1} << 20);
  std::uint64_t h = 0, length = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; i += 8) {
      std::uint64_t word = 0;
      for (std::size_t k = 0; k < 8 && i + k < got; ++k)
        word |= std::uint64_t{static_cast<unsigned char>(block[i + k])} << (8 * k);
      h = ebla::detail::splitmix64(h ^ word);
    }
    length += got;
  }
  if (in.bad()) throw_invalid(option, "cannot read '" + path + "'");
  return ebla::detail::splitmix64(h ^ length);
}

// Ranks whose digests differ from rank 0's ("1, 3"), in the digests of every rank
// (`count` per rank, gathered in rank order), for input k.
std::string ranks_differing(const std::vector<std::uint64_t>& all, std::size_t count, std::size_t k) {
  std::string ranks;
  for (std::size_t r = 1; r * count < all.size(); ++r)
    if (all[r * count + k] != all[k]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks;
}

// Collective: every rank must read the same bytes from each input file of spec (the same
// path may name different files on different ranks: their own working directories, their
// own disks). One MPI_Allgather of the digests; where one differs, every rank throws
// InvalidArgument naming the option, the file and the ranks.
void check_same_inputs(const ProblemSpec& spec, MPI_Comm comm) {
  const std::pair<const char*, const std::string*> inputs[] = {
      {"matrix", &spec.matrix}, {"rhs", &spec.rhs}, {"x0", &spec.x0}, {"hdf5", &spec.hdf5}};
  const std::size_t count = std::size(inputs);
  std::vector<std::uint64_t> mine(count, 0);
  for (std::size_t k = 0; k < count; ++k)
    if (!inputs[k].second->empty()) mine[k] = file_digest(*inputs[k].second, spec.named(inputs[k].first));
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  std::vector<std::uint64_t> all(count * static_cast<std::size_t>(ranks));
  MPI_Allgather(mine.data(), static_cast<int>(count), MPI_UINT64_T, all.data(), static_cast<int>(count), MPI_UINT64_T,
                comm);
  for (std::size_t k = 0; k < count; ++k) {
    const std::string differing = ranks_differing(all, count, k);
    if (!differing.empty())
      throw_invalid(spec.named(inputs[k].first),
                    "'" + *inputs[k].second + "' is not the same file on every rank: rank(s) " + differing +
                        " read other bytes than rank 0 (every rank reads the whole file: give each the same one)");
  }
}

// The serial problem on every rank, then each keeps its rows.
DistributedProblem split_rows(const ProblemSpec& spec, ProblemUse use, int ranks, MPI_Comm comm) {
  Problem serial = ebla::load_problem(spec, use);
  const DistributedCsr A = DistributedCsr::from_global(std::get<CsrOperator>(serial.op).matrix(), comm);
  DistributedProblem p{std::move(static_cast<ProblemData&>(serial)), A};
  for (Vector* v : {&p.b, &p.x0, &p.x_exact}) keep_rows(*v, A.first_row(), A.size());
  p.description += ", on " + std::to_string(ranks) + " MPI ranks (rows in blocks)";
  return p;
}

}  // namespace

DistributedProblem load_problem(const ProblemSpec& spec, ProblemUse use, MPI_Comm comm) {
  if (spec.op == OperatorKind::dense)
    throw_invalid(spec.named("operator"), "dense is not distributed: use csr (or stencil for hpccg) under mpirun");
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  check_same_inputs(spec, comm);
  return spec.source == ProblemSource::hpccg ? load_hpccg(spec, use, rank, ranks, comm) : split_rows(spec, use, ranks, comm);
}

double global_max(double v, MPI_Comm comm) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
  return v;
}

void gather_to_root(std::vector<std::uint8_t>& map, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  if (ranks == 1) return;
  int mine = static_cast<int>(map.size());
  std::vector<int> counts(rank == 0 ? ranks : 0), offsets(counts.size(), 0);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<std::uint8_t> all;
  if (rank == 0) {
    for (int r = 1; r < ranks; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
    all.resize(static_cast<std::size_t>(offsets.back() + counts.back()));
  }
  MPI_Gatherv(map.data(), mine, MPI_UINT8_T, all.data(), counts.data(), offsets.data(), MPI_UINT8_T, 0, comm);
  map = std::move(all);
}

}  // namespace ebla::mpi
