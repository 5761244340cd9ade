// DistributedCsr: a sparse matrix split over the ranks in contiguous row blocks, applied
// with point-to-point messages to the ranks that own the referenced entries of x.
#include <ebla/mpi/csr.hpp>

#include <ebla/core/error.hpp>

#include <KokkosSparse_spmv.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace ebla::mpi {

namespace {

static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, Vector::memory_space>::accessible,
              "DistributedCsr packs and unpacks the messages on the host");

constexpr int exchange_tag = 0x6562;

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS)
    throw std::runtime_error(std::string("ebla::mpi::DistributedCsr: ") + what + " failed (MPI error " +
                             std::to_string(rc) + ")");
}

// What every rank tells the others at construction (one MPI_Allgather).
enum Field { f_n, f_first, f_rows, f_nnz, f_problem, f_value, f_row, f_fields };
enum Problem : std::int64_t { ok = 0, wrong_columns = 1, column_out_of_range = 2 };

// The first problem of the layout, in rank order, from the gathered fields: the same
// message on every rank; empty if there is none.
std::string layout_problem(const std::vector<std::int64_t>& g, int ranks) {
  auto at = [&](int r, Field f) { return g[static_cast<std::size_t>(r) * f_fields + f]; };
  for (int r = 0; r < ranks; ++r) {
    const std::string on = "rank " + std::to_string(r) + ": ";
    if (at(r, f_problem) == wrong_columns)
      return on + "local_rows has " + std::to_string(at(r, f_value)) + " columns, not n = " +
             std::to_string(at(r, f_n));
    if (at(r, f_problem) == column_out_of_range)
      return on + "row " + std::to_string(at(r, f_row)) + " has the column index " + std::to_string(at(r, f_value)) +
             ", outside [0, " + std::to_string(at(r, f_n)) + ")";
  }
  for (int r = 1; r < ranks; ++r)
    if (at(r, f_n) != at(0, f_n))
      return "rank " + std::to_string(r) + " passes n = " + std::to_string(at(r, f_n)) + " but rank 0 passes n = " +
             std::to_string(at(0, f_n));
  std::uint64_t end = 0;
  for (int r = 0; r < ranks; ++r) {
    const auto first = static_cast<std::uint64_t>(at(r, f_first));
    if (first != end)
      return "rank " + std::to_string(r) + ": its block starts at row " + std::to_string(first) +
             " but the blocks of the ranks before it end at row " + std::to_string(end) +
             " (the blocks must follow each other in rank order)";
    end = first + static_cast<std::uint64_t>(at(r, f_rows));
  }
  if (end != static_cast<std::uint64_t>(at(0, f_n)))
    return "the blocks end at row " + std::to_string(end) + ", not n = " + std::to_string(at(0, f_n));
  return {};
}

}  // namespace

std::size_t block_first_row(std::size_t n, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank > ranks)
    throw_invalid("ebla::mpi::block_first_row",
                  "rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " ranks (need 0 <= rank <= ranks, ranks >= 1)");
  const auto r = static_cast<std::size_t>(rank), p = static_cast<std::size_t>(ranks);
  return r * (n / p) + std::min(r, n % p);
}

DistributedCsr::DistributedCsr(CsrMatrix local_rows, std::size_t first_row, std::size_t n, MPI_Comm comm)
    : comm_(comm), n_(n), first_(first_row) {
  int ranks = 1;
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
  const auto rows = static_cast<std::size_t>(local_rows.numRows());
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local_rows.graph.row_map);
  auto entries = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local_rows.graph.entries);
  const std::size_t begin = rows > 0 ? row_map(0) : 0, end = rows > 0 ? row_map(rows) : 0;

  // ---- validation: every rank learns every rank's layout and first local problem
  std::vector<std::int64_t> mine(f_fields, 0);
  mine[f_n] = static_cast<std::int64_t>(n);
  mine[f_first] = static_cast<std::int64_t>(first_row);
  mine[f_rows] = static_cast<std::int64_t>(rows);
  mine[f_nnz] = static_cast<std::int64_t>(end - begin);
  if (static_cast<std::size_t>(local_rows.numCols()) != n || local_rows.numCols() < 0) {
    mine[f_problem] = wrong_columns;
    mine[f_value] = local_rows.numCols();
  } else {
    for (std::size_t i = 0; i < rows && mine[f_problem] == ok; ++i)
      for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
        if (entries(k) < 0 || static_cast<std::size_t>(entries(k)) >= n) {
          mine[f_problem] = column_out_of_range;
          mine[f_value] = entries(k);
          mine[f_row] = static_cast<std::int64_t>(first_row + i);
          break;
        }
  }
  std::vector<std::int64_t> all(static_cast<std::size_t>(ranks) * f_fields);
  check_mpi(MPI_Allgather(mine.data(), f_fields, MPI_INT64_T, all.data(), f_fields, MPI_INT64_T, comm),
            "MPI_Allgather");
  const std::string problem = layout_problem(all, ranks);
  if (!problem.empty()) throw_invalid("ebla::mpi::DistributedCsr", problem);
  for (int r = 0; r < ranks; ++r) nonzeros_ += static_cast<std::size_t>(all[static_cast<std::size_t>(r) * f_fields + f_nnz]);

  // ---- the ghosts: the columns outside [first_row, first_row + rows), sorted; the
  // blocks follow the ranks' order, so the sorted list comes grouped by owner
  std::vector<int> ghost;
  for (std::size_t k = begin; k < end; ++k) {
    const auto c = static_cast<std::size_t>(entries(k));
    if (c < first_row || c >= first_row + rows) ghost.push_back(entries(k));
  }
  std::sort(ghost.begin(), ghost.end());
  ghost.erase(std::unique(ghost.begin(), ghost.end()), ghost.end());
  ghosts_ = ghost.size();

  std::vector<int> asked(static_cast<std::size_t>(ranks), 0), asking(static_cast<std::size_t>(ranks), 0);
  {
    int owner = 0;
    for (std::size_t k = 0; k < ghost.size(); ++k) {
      // the owner of column c: the rank whose block [first, first + rows) holds it
      while (static_cast<std::size_t>(all[static_cast<std::size_t>(owner) * f_fields + f_first] +
                                      all[static_cast<std::size_t>(owner) * f_fields + f_rows]) <=
             static_cast<std::size_t>(ghost[k]))
        ++owner;
      if (recv_ranks_.empty() || recv_ranks_.back() != owner) {
        recv_ranks_.push_back(owner);
        recv_offsets_.push_back(k);
      }
      ++asked[static_cast<std::size_t>(owner)];
    }
    recv_offsets_.push_back(ghost.size());
  }
  check_mpi(MPI_Alltoall(asked.data(), 1, MPI_INT, asking.data(), 1, MPI_INT, comm), "MPI_Alltoall");
  std::vector<int> sdispl(static_cast<std::size_t>(ranks), 0), rdispl(static_cast<std::size_t>(ranks), 0);
  for (int r = 1; r < ranks; ++r) {
    const auto u = static_cast<std::size_t>(r);
    sdispl[u] = sdispl[u - 1] + asked[u - 1];
    rdispl[u] = rdispl[u - 1] + asking[u - 1];
  }
  send_indices_.resize(static_cast<std::size_t>(rdispl.back() + asking.back()));
  check_mpi(MPI_Alltoallv(ghost.data(), asked.data(), sdispl.data(), MPI_INT, send_indices_.data(), asking.data(),
                          rdispl.data(), MPI_INT, comm),
            "MPI_Alltoallv");
  for (int r = 0; r < ranks; ++r)
    if (asking[static_cast<std::size_t>(r)] > 0) {
      send_ranks_.push_back(r);
      send_offsets_.push_back(static_cast<std::size_t>(rdispl[static_cast<std::size_t>(r)]));
    }
  send_offsets_.push_back(send_indices_.size());
  for (int& i : send_indices_) i -= static_cast<int>(first_row);

  // ---- the renumbered rows: the entries keep their order within each row
  CsrMatrix::index_type::HostMirror local_entries("ebla::mpi::csr entries", entries.extent(0));
  for (std::size_t k = begin; k < end; ++k) {
    const auto c = static_cast<std::size_t>(entries(k));
    if (c >= first_row && c < first_row + rows)
      local_entries(k) = static_cast<int>(c - first_row);
    else
      local_entries(k) = static_cast<int>(
          rows + static_cast<std::size_t>(std::lower_bound(ghost.begin(), ghost.end(), entries(k)) - ghost.begin()));
  }
  CsrMatrix::index_type device_entries("ebla::mpi::csr entries", entries.extent(0));
  Kokkos::deep_copy(device_entries, local_entries);
  CsrMatrix::row_map_type::non_const_type device_row_map("ebla::mpi::csr row_map", rows + 1);
  if (rows > 0) Kokkos::deep_copy(device_row_map, local_rows.graph.row_map);
  local_ = CsrMatrix("ebla::mpi::csr", static_cast<int>(rows), static_cast<int>(rows + ghosts_), local_rows.nnz(),
                     local_rows.values, device_row_map, device_entries);

  x_ext_ = Vector("ebla::mpi::csr x_ext", rows + ghosts_);
  send_buf_.resize(send_indices_.size() + send_ranks_.size());
  recv_buf_.resize(ghosts_ + recv_ranks_.size());
  requests_.resize(send_ranks_.size() + recv_ranks_.size());
}

DistributedCsr DistributedCsr::from_global(const CsrMatrix& global, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
  const auto n = static_cast<std::size_t>(global.numRows());
  const std::size_t first = block_first_row(n, rank, ranks), last = block_first_row(n, rank + 1, ranks);
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), global.graph.row_map);
  const std::size_t begin = last > first ? row_map(first) : 0, end = last > first ? row_map(last) : 0;
  CsrMatrix::row_map_type::non_const_type::HostMirror rows("ebla::mpi::csr block row_map", last - first + 1);
  for (std::size_t i = first; i <= last && last > first; ++i) rows(i - first) = row_map(i) - begin;
  CsrMatrix::row_map_type::non_const_type device_rows("ebla::mpi::csr block row_map", last - first + 1);
  Kokkos::deep_copy(device_rows, rows);
  CsrMatrix::index_type entries("ebla::mpi::csr block entries", end - begin);
  CsrMatrix::values_type values("ebla::mpi::csr block values", end - begin);
  Kokkos::deep_copy(entries, Kokkos::subview(global.graph.entries, std::make_pair(begin, end)));
  Kokkos::deep_copy(values, Kokkos::subview(global.values, std::make_pair(begin, end)));
  CsrMatrix block("ebla::mpi::csr block", static_cast<int>(last - first), global.numCols(), end - begin, values,
                  device_rows, entries);
  return DistributedCsr(std::move(block), first, n, comm);
}

std::size_t DistributedCsr::size() const { return static_cast<std::size_t>(local_.numRows()); }
std::size_t DistributedCsr::global_size() const { return n_; }
std::size_t DistributedCsr::first_row() const { return first_; }
std::size_t DistributedCsr::nonzeros() const { return nonzeros_; }
std::size_t DistributedCsr::ghosts() const { return ghosts_; }
MPI_Comm DistributedCsr::comm() const { return comm_; }

int DistributedCsr::exchange(ConstVector x, bool valid) const {
  const std::size_t rows = size();
  int flagged = valid ? -1 : rank_;
  std::size_t req = 0;
  for (std::size_t k = 0; k < recv_ranks_.size(); ++k) {
    const std::size_t at = recv_offsets_[k] + k, count = recv_offsets_[k + 1] - recv_offsets_[k] + 1;
    check_mpi(MPI_Irecv(recv_buf_.data() + at, static_cast<int>(count), MPI_DOUBLE, recv_ranks_[k], exchange_tag,
                        comm_, &requests_[req++]),
              "MPI_Irecv");
  }
  for (std::size_t k = 0; k < send_ranks_.size(); ++k) {
    const std::size_t at = send_offsets_[k] + k, count = send_offsets_[k + 1] - send_offsets_[k];
    double* buf = send_buf_.data() + at;
    buf[0] = valid ? 0.0 : 1.0;
    for (std::size_t i = 0; i < count; ++i)
      buf[i + 1] = valid ? x(static_cast<std::size_t>(send_indices_[send_offsets_[k] + i])) : 0.0;
    check_mpi(MPI_Isend(buf, static_cast<int>(count + 1), MPI_DOUBLE, send_ranks_[k], exchange_tag, comm_,
                        &requests_[req++]),
              "MPI_Isend");
  }
  if (valid && ghosts_ > 0)
    for (std::size_t i = 0; i < rows; ++i) x_ext_(i) = x(i);
  check_mpi(MPI_Waitall(static_cast<int>(req), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  for (std::size_t k = 0; k < recv_ranks_.size(); ++k) {
    const double* buf = recv_buf_.data() + recv_offsets_[k] + k;
    if (buf[0] != 0.0) {
      if (flagged < 0 || recv_ranks_[k] < flagged) flagged = recv_ranks_[k];
      continue;
    }
    for (std::size_t i = recv_offsets_[k]; i < recv_offsets_[k + 1]; ++i) x_ext_(rows + i) = buf[i - recv_offsets_[k] + 1];
  }
  return flagged;
}

namespace {

std::string size_problem(std::size_t rows, ConstVector a, const char* a_name, std::size_t b_size,
                         const char* b_name) {
  if (a.extent(0) == rows && b_size == rows) return {};
  return std::string(a_name) + " has " + std::to_string(a.extent(0)) + " entries and " + b_name + " " +
         std::to_string(b_size) + ", the rank owns " + std::to_string(rows) + " rows";
}

[[noreturn]] void throw_sizes(const char* function, int rank, int flagged, const std::string& mine) {
  if (!mine.empty()) throw_invalid(function, "rank " + std::to_string(rank) + ": " + mine);
  throw_invalid(function, "wrong vector sizes on rank " + std::to_string(flagged));
}

}  // namespace

void DistributedCsr::apply(ConstVector x, Vector y) const {
  constexpr const char* function = "ebla::mpi::DistributedCsr::apply";
  const std::string mine = size_problem(size(), x, "x", y.extent(0), "y");
  const int flagged = exchange(x, mine.empty());
  if (flagged >= 0) throw_sizes(function, rank_, flagged, mine);
  if (ghosts_ == 0)
    KokkosSparse::spmv("N", 1.0, local_, x, 0.0, y);
  else
    KokkosSparse::spmv("N", 1.0, local_, ConstVector(x_ext_), 0.0, y);
}

Vector DistributedCsr::diagonal() const {
  const std::size_t rows = size();
  Vector d("ebla::mpi::csr diagonal", rows);
  auto h = Kokkos::create_mirror_view(d);
  auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local_.graph.row_map);
  auto entries = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local_.graph.entries);
  auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local_.values);
  // owned columns are renumbered j -> j - first_row, so the diagonal is column i of row i
  for (std::size_t i = 0; i < rows; ++i) {
    double v = 0;
    for (std::size_t k = row_map(i); k < row_map(i + 1); ++k)
      if (static_cast<std::size_t>(entries(k)) == i) v += values(k);
    h(i) = v;
  }
  Kokkos::deep_copy(d, h);
  return d;
}

DoubleDouble DistributedCsr::residual_squares(ConstVector x, ConstVector b) const {
  constexpr const char* function = "ebla::mpi::DistributedCsr::residual_squares";
  const std::string mine = size_problem(size(), x, "x", b.extent(0), "b");
  const int flagged = exchange(x, mine.empty());
  if (flagged >= 0) throw_sizes(function, rank_, flagged, mine);
  return detail::csr_residual_squares(local_, ghosts_ == 0 ? x : ConstVector(x_ext_), b);
}

}  // namespace ebla::mpi
