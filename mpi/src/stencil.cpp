// HPCCG's 27-point stencil on ranks stacked in z: the serial kernel on the owned planes,
// with the planes under and over the block received from the neighbouring ranks.
#include <ebla/mpi/solvers.hpp>

#include <ebla/core/error.hpp>

#include <limits>
#include <stdexcept>
#include <string>

namespace ebla::mpi {

namespace {

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS)
    throw std::runtime_error(std::string("ebla::mpi::DistributedStencil: ") + what + " failed (MPI error " +
                             std::to_string(rc) + ")");
}

std::string grid(long long nx, long long ny, long long nz) {
  return std::to_string(nx) + " x " + std::to_string(ny) + " x " + std::to_string(nz);
}

}  // namespace

DistributedStencil::DistributedStencil(int nx, int ny, int nz, MPI_Comm comm) : nx_(nx), ny_(ny), nz_(nz), comm_(comm) {
  const char* f = "ebla::mpi::DistributedStencil";
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &ranks_), "MPI_Comm_size");
  // one collective: the largest and the smallest of each dimension (as max of -v)
  int dims[6] = {nx, ny, nz, -nx, -ny, -nz};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, dims, 6, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (dims[0] != -dims[3] || dims[1] != -dims[4] || dims[2] != -dims[5])
    throw_invalid(f, "the ranks disagree on the block: this rank (" + std::to_string(rank_) + ") has " + grid(nx, ny, nz) +
                         ", the dimensions range over [" + std::to_string(-dims[3]) + ", " + std::to_string(dims[0]) +
                         "] x [" + std::to_string(-dims[4]) + ", " + std::to_string(dims[1]) + "] x [" +
                         std::to_string(-dims[5]) + ", " + std::to_string(dims[2]) + "]");
  if (nx < 1 || ny < 1 || nz < 1)
    throw_invalid(f, "block " + grid(nx, ny, nz) + ": every dimension must be at least 1");
  if (static_cast<double>(nx) * ny * nz * ranks_ > static_cast<double>(std::numeric_limits<int>::max()))
    throw_invalid(f, "global grid " + grid(nx, ny, static_cast<long long>(nz) * ranks_) + " has more rows than an int holds");
  const std::size_t plane = static_cast<std::size_t>(nx) * ny;
  if (rank_ > 0) below_ = Vector("ebla::mpi::stencil below", plane);
  if (rank_ < ranks_ - 1) above_ = Vector("ebla::mpi::stencil above", plane);
}

std::size_t DistributedStencil::nonzeros() const {
  // as StencilOperator::nonzeros on the global grid: 3 m - 2 pairs per axis of length m
  auto line = [](long long m) { return static_cast<std::size_t>(3 * m - 2); };
  return line(nx_) * line(ny_) * line(static_cast<long long>(nz_) * ranks_);
}

// The halo exchange: this block's first plane goes down, its last plane up; the planes
// of the neighbours come back into below_ and above_ (MPI_PROC_NULL at the ends).
void DistributedStencil::exchange(ConstVector x) const {
  if (x.extent(0) != size())
    throw_invalid("ebla::mpi::DistributedStencil::apply",
                  "x has " + std::to_string(x.extent(0)) + " entries, the rank owns " + std::to_string(size()) + " rows");
  const int plane = nx_ * ny_;
  const int down = rank_ > 0 ? rank_ - 1 : MPI_PROC_NULL, up = rank_ < ranks_ - 1 ? rank_ + 1 : MPI_PROC_NULL;
  Kokkos::fence();  // x must be complete before MPI reads it
  const double* first = x.data();
  const double* last = x.data() + static_cast<std::ptrdiff_t>(nz_ - 1) * plane;
  double* from_below = below_.extent(0) ? below_.data() : nullptr;
  double* from_above = above_.extent(0) ? above_.data() : nullptr;
  constexpr int tag_up = 27, tag_down = 28;
  MPI_Request req[4];
  check_mpi(MPI_Irecv(from_below, from_below ? plane : 0, MPI_DOUBLE, down, tag_up, comm_, &req[0]), "MPI_Irecv");
  check_mpi(MPI_Irecv(from_above, from_above ? plane : 0, MPI_DOUBLE, up, tag_down, comm_, &req[1]), "MPI_Irecv");
  check_mpi(MPI_Isend(last, up != MPI_PROC_NULL ? plane : 0, MPI_DOUBLE, up, tag_up, comm_, &req[2]), "MPI_Isend");
  check_mpi(MPI_Isend(first, down != MPI_PROC_NULL ? plane : 0, MPI_DOUBLE, down, tag_down, comm_, &req[3]), "MPI_Isend");
  check_mpi(MPI_Waitall(4, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

void DistributedStencil::apply(ConstVector x, Vector y) const {
  exchange(x);
  detail::stencil27_apply(nx_, ny_, nz_, x, below_, above_, y);
}

Vector DistributedStencil::diagonal() const {
  Vector d("ebla::diagonal", size());
  Kokkos::deep_copy(d, 27.0);
  return d;
}

DoubleDouble DistributedStencil::residual_squares(ConstVector x, ConstVector b) const {
  exchange(x);
  return detail::stencil27_residual_squares(nx_, ny_, nz_, x, below_, above_, b);
}

Vector hpccg_rhs(const DistributedStencil& A) {
  Vector ones("ebla::mpi::ones", A.size()), b("ebla::mpi::hpccg b", A.size());
  Kokkos::deep_copy(ones, 1.0);
  A.apply(ones, b);  // b_i = 27 - (neighbours of i): integers, exact
  return b;
}

}  // namespace ebla::mpi
