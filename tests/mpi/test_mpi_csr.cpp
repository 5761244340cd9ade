// DistributedCsr against the serial CsrOperator, on any number of ranks (CTest: 2 and 3;
// the cases of two ranks disagreeing need 2 or more). Every rank builds the same global
// matrices (std::mt19937_64, fixed seeds: random sparse symmetric matrices with the entries
// of each row in random order, diagonal, dense-ish and banded matrices, Erdos-Renyi graph
// Laplacians; n from 1 up, n < P included), distributes them
// with from_global and with the constructor on unbalanced splits (zero-row ranks
// included), and checks on every rank:
//   - apply is bit-identical to the owned rows of the serial spmv (twice, buffers reused);
//   - diagonal equals the owned part of the serial diagonal;
//   - the residual squares summed over the ranks match residual_norm^2 to 1e-15 relative;
//   - size, first_row, global_size, nonzeros and ghosts (distinct off-block columns);
//   - invalid input throws InvalidArgument on every rank (agreed by MPI_Allreduce), and a
//     valid apply still works afterwards.
// Exit code: 0 if every check passed on every rank, 1 otherwise.
#include <ebla/core/error.hpp>
#include <ebla/mpi/csr.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/problems.hpp>

#include "mpi_checks.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace ebla_mpi_test;

using Rows = std::vector<std::vector<std::pair<int, double>>>;

ebla::CsrMatrix to_csr(const Rows& rows, int cols) {
  const std::size_t n = rows.size();
  std::size_t nnz = 0;
  for (const auto& r : rows) nnz += r.size();
  Kokkos::View<std::size_t*> row_map("row_map", n + 1);
  Kokkos::View<int*> entries("entries", nnz);
  Kokkos::View<double*> values("values", nnz);
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    row_map(i) = k;
    for (const auto& e : rows[i]) {
      entries(k) = e.first;
      values(k++) = e.second;
    }
  }
  row_map(n) = k;
  return ebla::CsrMatrix("test", static_cast<int>(n), cols, nnz, values, row_map, entries);
}

Rows to_rows(const ebla::CsrMatrix& A) {
  Rows rows(static_cast<std::size_t>(A.numRows()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t k = A.graph.row_map(i); k < A.graph.row_map(i + 1); ++k)
      rows[i].push_back({A.graph.entries(k), A.values(k)});
  return rows;
}

// symmetric: (i, j) present with probability p for i < j, the diagonal with probability
// p_diag; values uniform in [-1, 1); the entries of each row shuffled if `shuffle`
Rows random_symmetric(int n, double p, double p_diag, bool shuffle, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0), v(-1.0, 1.0);
  Rows rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (u(gen) < p_diag) rows[static_cast<std::size_t>(i)].push_back({i, 4.0 + v(gen)});
    for (int j = i + 1; j < n; ++j)
      if (u(gen) < p) {
        const double a = v(gen);
        rows[static_cast<std::size_t>(i)].push_back({j, a});
        rows[static_cast<std::size_t>(j)].push_back({i, a});
      }
  }
  for (auto& r : rows) {
    if (shuffle)
      std::shuffle(r.begin(), r.end(), gen);
    else
      std::sort(r.begin(), r.end());
  }
  return rows;
}

Rows banded(int n, int w, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> v(-1.0, 1.0);
  Rows rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int j = i; j <= std::min(n - 1, i + w); ++j) {
      const double a = i == j ? 2.0 * w + v(gen) : v(gen);
      rows[static_cast<std::size_t>(i)].push_back({j, a});
      if (j != i) rows[static_cast<std::size_t>(j)].push_back({i, a});
    }
  for (auto& r : rows) std::sort(r.begin(), r.end());
  return rows;
}

std::vector<double> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> v(-1.0, 1.0);
  std::vector<double> x(n);
  for (auto& e : x) e = v(gen);
  return x;
}

ebla::Vector view_of(const std::vector<double>& x, std::size_t first, std::size_t count) {
  ebla::Vector v("v", count);
  for (std::size_t i = 0; i < count; ++i) v(i) = x[first + i];
  return v;
}

bool same_bits(double a, double b) {
  std::uint64_t p, q;
  std::memcpy(&p, &a, 8);
  std::memcpy(&q, &b, 8);
  return p == q;
}

// The rows [first, last) of `global` with global columns (cols of them).
ebla::CsrMatrix block_of(const Rows& global, std::size_t first, std::size_t last, int cols) {
  return to_csr(Rows(global.begin() + static_cast<std::ptrdiff_t>(first), global.begin() + static_cast<std::ptrdiff_t>(last)),
                cols);
}

// Every rank's verdict joined: true if ok on every rank.
bool all_ranks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

// Runs f; true if it threw InvalidArgument on every rank. `expect`, if not empty, must
// occur in the message (on every rank).
bool throws_everywhere(const std::function<void()>& f, const std::string& expect, const std::string& what) {
  bool threw = false, named = expect.empty();
  std::string message;
  try {
    f();
  } catch (const ebla::InvalidArgument& e) {
    threw = true;
    message = e.what();
    named = named || message.find(expect) != std::string::npos;
  }
  const bool everywhere = all_ranks(threw);
  check(everywhere, what + ": InvalidArgument on every rank (here: " + (threw ? "thrown" : "not thrown") + ")");
  check(named, what + ": the message names \"" + expect + "\": " + message);
  return everywhere;
}

// The checks of one distributed matrix D (rows [first, last) of `global`).
void check_distributed(const ebla::mpi::DistributedCsr& D, const Rows& rows, const ebla::CsrOperator& serial,
                       std::size_t first, std::size_t last, std::uint64_t seed, const std::string& name) {
  const std::size_t n = rows.size();
  check(D.size() == last - first && D.first_row() == first && D.global_size() == n,
        name + ": size " + std::to_string(D.size()) + " first_row " + std::to_string(D.first_row()));
  check(D.nonzeros() == serial.nonzeros(), name + ": nonzeros " + std::to_string(D.nonzeros()) + " vs " +
                                               std::to_string(serial.nonzeros()));
  std::set<int> off;
  for (std::size_t i = first; i < last; ++i)
    for (const auto& e : rows[i])
      if (static_cast<std::size_t>(e.first) < first || static_cast<std::size_t>(e.first) >= last) off.insert(e.first);
  check(D.ghosts() == off.size(),
        name + ": ghosts " + std::to_string(D.ghosts()) + ", expected " + std::to_string(off.size()));

  for (int round = 0; round < 2; ++round) {
    const auto x = random_vector(n, seed * 7 + static_cast<std::uint64_t>(round));
    ebla::Vector xg = view_of(x, 0, n), yg("yg", n);
    serial.apply(xg, yg);
    ebla::Vector xl = view_of(x, first, last - first), yl("yl", last - first);
    Kokkos::deep_copy(yl, 12345.0);
    D.apply(xl, yl);
    std::size_t differ = 0;
    for (std::size_t i = first; i < last; ++i)
      if (!same_bits(yl(i - first), yg(i))) ++differ;
    check(differ == 0, name + ": apply round " + std::to_string(round) + ": " + std::to_string(differ) +
                           " rows differ from the serial spmv");
  }

  const ebla::Vector dg = serial.diagonal(), dl = D.diagonal();
  std::size_t differ = dl.extent(0) == last - first ? 0 : 1;
  for (std::size_t i = first; i < last && differ == 0; ++i)
    if (!same_bits(dl(i - first), dg(i))) ++differ;
  check(differ == 0, name + ": diagonal differs");

  const auto x = random_vector(n, seed * 7 + 5), b = random_vector(n, seed * 7 + 6);
  const ebla::DoubleDouble mine = D.residual_squares(view_of(x, first, last - first), view_of(b, first, last - first));
  std::vector<double> all(2 * static_cast<std::size_t>(ranks));
  const double pair[2] = {mine.hi, mine.lo};
  MPI_Allgather(pair, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, MPI_COMM_WORLD);
  ebla::DoubleDouble sum;
  for (int r = 0; r < ranks; ++r) sum.join({all[2 * static_cast<std::size_t>(r)], all[2 * static_cast<std::size_t>(r) + 1]});
  const double norm = serial.residual_norm(view_of(x, 0, n), view_of(b, 0, n));
  const double rel = std::abs(sum.value() - norm * norm) / (norm * norm);
  check(rel <= 1e-15, name + ": residual squares " + std::to_string(sum.value()) + " vs " + std::to_string(norm * norm) +
                          " (relative " + std::to_string(rel) + ")");
}

// Splits of n rows over the ranks: first rows of ranks 0..P (P + 1 entries).
std::vector<std::vector<std::size_t>> splits(std::size_t n) {
  const auto P = static_cast<std::size_t>(ranks);
  std::vector<std::vector<std::size_t>> out;
  // rank 0 owns about two thirds, the others share the rest
  std::vector<std::size_t> s(P + 1, 0);
  const std::size_t head = (2 * n + 2) / 3;
  for (std::size_t r = 1; r <= P; ++r) s[r] = head + (r - 1) * (n - head) / std::max<std::size_t>(P - 1, 1);
  s[P] = n;
  out.push_back(s);
  // rank 1 owns nothing; rank 0 owns half (all of it on 2 ranks), ranks 2.. the rest
  s[1] = P == 2 ? n : n / 2;
  for (std::size_t r = 2; r <= P; ++r) s[r] = P == 2 ? n : n / 2 + (r - 2) * (n - n / 2) / (P - 2);
  s[P] = n;
  out.push_back(s);
  // the last rank owns everything
  for (std::size_t r = 0; r < P; ++r) s[r] = 0;
  s[P] = n;
  out.push_back(s);
  return out;
}

void check_matrix(const Rows& rows, const std::string& name, std::uint64_t seed) {
  const std::size_t n = rows.size();
  const ebla::CsrMatrix global = to_csr(rows, static_cast<int>(n));
  const ebla::CsrOperator serial(global);
  {
    const auto D = ebla::mpi::DistributedCsr::from_global(global, MPI_COMM_WORLD);
    const std::size_t first = ebla::mpi::block_first_row(n, rank, ranks),
                      last = ebla::mpi::block_first_row(n, rank + 1, ranks);
    check_distributed(D, rows, serial, first, last, seed, name + " from_global");
  }
  int k = 0;
  for (const auto& s : splits(n)) {
    const std::size_t first = s[static_cast<std::size_t>(rank)], last = s[static_cast<std::size_t>(rank) + 1];
    const ebla::mpi::DistributedCsr D(block_of(rows, first, last, static_cast<int>(n)), first, n, MPI_COMM_WORLD);
    check_distributed(D, rows, serial, first, last, seed, name + " split " + std::to_string(k++));
  }
}

void check_invalid() {
  const int n = 40;
  const Rows rows = random_symmetric(n, 0.9, 1.0, false, 99);  // every rank needs every other
  const std::size_t first = ebla::mpi::block_first_row(n, rank, ranks), last = ebla::mpi::block_first_row(n, rank + 1, ranks);
  const int last_rank = ranks - 1;
  const std::string on_last = "rank " + std::to_string(last_rank);

  if (ranks >= 2)  // needs a second rank
    throws_everywhere(
        [&] {
          const int m = rank == last_rank ? n + 1 : n;
          ebla::mpi::DistributedCsr D(block_of(rows, first, last, m), first, static_cast<std::size_t>(m), MPI_COMM_WORLD);
        },
        on_last + " passes n = " + std::to_string(n + 1), "n differs on one rank");
  throws_everywhere(
      [&] {
        ebla::mpi::DistributedCsr D(block_of(rows, first, last, n), first, static_cast<std::size_t>(n) + 1,
                                    MPI_COMM_WORLD);
      },
      "columns, not n = " + std::to_string(n + 1), "n differs from the columns");
  if (ranks >= 2)  // needs a second rank
    throws_everywhere(
        [&] {
          // rank 1's block starts one row late: a gap after rank 0
          const std::size_t f = rank == 1 ? first + 1 : first;
          ebla::mpi::DistributedCsr D(block_of(rows, f, last, n), f, n, MPI_COMM_WORLD);
        },
        "rank 1: its block starts at row " + std::to_string(ebla::mpi::block_first_row(n, 1, ranks) + 1), "gap");
  throws_everywhere(
      [&] {
        // the last rank stops one row short
        const std::size_t l = rank == last_rank ? last - 1 : last;
        ebla::mpi::DistributedCsr D(block_of(rows, first, l, n), first, n, MPI_COMM_WORLD);
      },
      "the blocks end at row " + std::to_string(n - 1), "blocks short of n");
  if (ranks >= 2)  // needs a second rank
    throws_everywhere(
        [&] {
          // rank 0 and rank 1 both start at 0
          const std::size_t f = rank == 1 ? 0 : first;
          ebla::mpi::DistributedCsr D(block_of(rows, f, last, n), f, n, MPI_COMM_WORLD);
        },
        "rank 1: its block starts at row 0", "overlap");
  for (const int bad : {n, n + 7, -1}) {
    throws_everywhere(
        [&] {
          Rows mine(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.begin() + static_cast<std::ptrdiff_t>(last));
          if (rank == last_rank) mine[1][2].first = bad;
          ebla::mpi::DistributedCsr D(to_csr(mine, n), first, n, MPI_COMM_WORLD);
        },
        on_last + ": row " + std::to_string(ebla::mpi::block_first_row(n, last_rank, ranks) + 1) + " has the column index " + std::to_string(bad),
        "column index " + std::to_string(bad) + " on one rank");
  }
  {
    Rows square(3, {{0, 1.0}});
    const ebla::CsrMatrix wide = to_csr(square, 5);
    throws_everywhere([&] { ebla::mpi::DistributedCsr::from_global(wide, MPI_COMM_WORLD); }, "columns, not n = 3",
                      "from_global of a non-square matrix");
  }

  const ebla::CsrMatrix global = to_csr(rows, n);
  const ebla::CsrOperator serial(global);
  const auto D = ebla::mpi::DistributedCsr::from_global(global, MPI_COMM_WORLD);
  const std::size_t m = last - first;
  ebla::Vector x("x", m), y("y", m), x_long("x", m + 1), y_short("y", m - 1);
  throws_everywhere([&] { D.apply(x_long, y); }, "x has " + std::to_string(m + 1) + " entries",
                    "apply: x of wrong size on every rank");
  throws_everywhere([&] { D.apply(x, y_short); }, "y " + std::to_string(m - 1), "apply: y of wrong size on every rank");
  throws_everywhere([&] { D.apply(rank == last_rank ? x_long : x, y); }, on_last,
                    "apply: x of wrong size on the last rank");
  throws_everywhere([&] { D.residual_squares(x, rank == 0 ? x_long : x); }, "rank 0", "residual_squares: b of wrong size on rank 0");
  throws_everywhere([&] { D.residual_squares(x_long, x); }, "x has", "residual_squares: x of wrong size on every rank");
  // a valid apply after the failures
  check_distributed(D, rows, serial, first, last, 99, "after the invalid calls");
  try {
    ebla::mpi::block_first_row(10, 4, 3);
    check(false, "block_first_row(10, 4, 3) does not throw");
  } catch (const ebla::InvalidArgument&) {
    check(true, "");
  }
  check(ebla::mpi::block_first_row(10, 0, 3) == 0 && ebla::mpi::block_first_row(10, 1, 3) == 4 &&
            ebla::mpi::block_first_row(10, 2, 3) == 7 && ebla::mpi::block_first_row(10, 3, 3) == 10 &&
            ebla::mpi::block_first_row(2, 3, 3) == 2 && ebla::mpi::block_first_row(2, 2, 3) == 2,
        "block_first_row values");
}

void run() {
  const int sizes[] = {1, 2, 3, 5, 8, 17, 40, 100, 301};
  std::uint64_t seed = 1;
  int cases = 0;
  for (int n : sizes) {
    for (int rep = 0; rep < 3; ++rep, ++seed) {
      check_matrix(random_symmetric(n, std::min(1.0, 4.0 / n), 0.9, rep != 0, seed),
                   "random n=" + std::to_string(n) + " seed " + std::to_string(seed), seed);
      ++cases;
    }
    ++seed;
    check_matrix(random_symmetric(n, 0.0, 1.0, false, seed), "diagonal n=" + std::to_string(n), seed);
    ++seed;
    check_matrix(random_symmetric(n, 0.7, 1.0, true, seed), "dense-ish n=" + std::to_string(n), seed);
    for (int w : {1, 3}) {
      ++seed;
      check_matrix(banded(n, w, seed), "banded n=" + std::to_string(n) + " w=" + std::to_string(w), seed);
    }
    cases += 4;
    if (n >= 3) {
      for (double degree : {1.5, 4.0}) {
        ++seed;
        check_matrix(to_rows(ebla::graph_laplacian(static_cast<std::size_t>(n), std::min(degree, n - 1.0), seed)),
                     "laplacian n=" + std::to_string(n) + " degree " + std::to_string(degree), seed);
        ++cases;
      }
    }
  }
  {
    ++seed;
    check_matrix(to_rows(ebla::graph_laplacian(5000, 8.0, seed)), "laplacian n=5000", seed);
    ++cases;
  }
  check_invalid();
  if (rank == 0) std::printf("%d matrices, each distributed 4 ways\n", cases);
}

}  // namespace

int main(int argc, char** argv) { return ebla_mpi_test::run_program(argc, argv, "test_mpi_csr", run); }
