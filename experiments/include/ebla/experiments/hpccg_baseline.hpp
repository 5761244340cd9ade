// The conjugate gradients of Mantevo HPCCG's serial code, written from its description: the
// baseline that ebla::cg is measured against (apps/bench/bench_cg.cpp). Plain loops over
// HPCCG's own matrix layout, in HPCCG's order of operations; header-only, so that it is
// compiled with the flags of the program that times it.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace ebla::experiments::hpccg {

// HPCCG's matrix layout: for each row a pointer to its values, a pointer to its column
// indices, and its number of nonzeros (at most 27); the rows' entries lie one after
// another in two arrays.
struct HpcMatrix {
  int nrow = 0;
  std::vector<int> nnz_in_row;
  std::vector<double*> vals_in_row;
  std::vector<int*> inds_in_row;
  std::unique_ptr<double[]> list_of_vals;
  std::unique_ptr<int[]> list_of_inds;
};

// Rows i = iz nx ny + iy nx + ix; neighbours visited z, y, x from -1 to 1: 27 on the
// diagonal, -1 elsewhere (HPCCG's generate_matrix, one process).
inline HpcMatrix hpc_matrix(int nx, int ny, int nz) {
  HpcMatrix A;
  A.nrow = nx * ny * nz;
  A.nnz_in_row.resize(A.nrow);
  A.vals_in_row.resize(A.nrow);
  A.inds_in_row.resize(A.nrow);
  A.list_of_vals.reset(new double[27 * static_cast<std::size_t>(A.nrow)]);
  A.list_of_inds.reset(new int[27 * static_cast<std::size_t>(A.nrow)]);
  double* v = A.list_of_vals.get();
  int* c = A.list_of_inds.get();
  for (int iz = 0; iz < nz; ++iz)
    for (int iy = 0; iy < ny; ++iy)
      for (int ix = 0; ix < nx; ++ix) {
        const int row = iz * nx * ny + iy * nx + ix;
        A.vals_in_row[row] = v;
        A.inds_in_row[row] = c;
        int count = 0;
        for (int sz = -1; sz <= 1; ++sz)
          for (int sy = -1; sy <= 1; ++sy)
            for (int sx = -1; sx <= 1; ++sx) {
              if (iz + sz < 0 || iz + sz >= nz || iy + sy < 0 || iy + sy >= ny || ix + sx < 0 || ix + sx >= nx)
                continue;
              const int col = row + sz * nx * ny + sy * nx + sx;
              *v++ = col == row ? 27.0 : -1.0;
              *c++ = col;
              ++count;
            }
        A.nnz_in_row[row] = count;
      }
  return A;
}

// y = A x: one inner sum per row.
inline void hpc_sparsemv(const HpcMatrix& A, const double* x, double* y) {
  for (int i = 0; i < A.nrow; ++i) {
    const double* vals = A.vals_in_row[i];
    const int* inds = A.inds_in_row[i];
    const int nnz = A.nnz_in_row[i];
    double sum = 0.0;
    for (int j = 0; j < nnz; ++j) sum += vals[j] * x[inds[j]];
    y[i] = sum;
  }
}

inline double hpc_ddot(int n, const double* x, const double* y) {
  double result = 0.0;
  if (y == x)
    for (int i = 0; i < n; ++i) result += x[i] * x[i];
  else
    for (int i = 0; i < n; ++i) result += x[i] * y[i];
  return result;
}

// w = alpha x + beta y (w may be x or y).
inline void hpc_waxpby(int n, double alpha, const double* x, double beta, const double* y, double* w) {
  if (alpha == 1.0)
    for (int i = 0; i < n; ++i) w[i] = x[i] + beta * y[i];
  else if (beta == 1.0)
    for (int i = 0; i < n; ++i) w[i] = alpha * x[i] + y[i];
  else
    for (int i = 0; i < n; ++i) w[i] = alpha * x[i] + beta * y[i];
}

struct HpcVectors {
  std::unique_ptr<double[]> r, p, Ap;
};

// HPCCG's CG loop; x holds x0 on entry and the iterate on exit. Returns the iterations
// done; the work vectors are handed back in `keep` (after the timed part: no work).
inline int hpc_cg(const HpcMatrix& A, const double* b, double* x, int max_iter, double tolerance, HpcVectors& keep) {
  const int n = A.nrow;
  std::unique_ptr<double[]> r(new double[n]), p(new double[n]), Ap(new double[n]);
  hpc_waxpby(n, 1.0, x, 0.0, x, p.get());  // p = x
  hpc_sparsemv(A, p.get(), Ap.get());
  hpc_waxpby(n, 1.0, b, -1.0, Ap.get(), r.get());  // r = b - A p
  double rtrans = hpc_ddot(n, r.get(), r.get());
  double normr = std::sqrt(rtrans);
  int niters = 0;
  for (int k = 1; k < max_iter && normr > tolerance; ++k) {
    if (k == 1) {
      hpc_waxpby(n, 1.0, r.get(), 0.0, r.get(), p.get());  // p = r
    } else {
      const double oldrtrans = rtrans;
      rtrans = hpc_ddot(n, r.get(), r.get());
      const double beta = rtrans / oldrtrans;
      hpc_waxpby(n, 1.0, r.get(), beta, p.get(), p.get());  // p = r + beta p
    }
    normr = std::sqrt(rtrans);
    hpc_sparsemv(A, p.get(), Ap.get());
    const double alpha = rtrans / hpc_ddot(n, p.get(), Ap.get());
    hpc_waxpby(n, 1.0, x, alpha, p.get(), x);          // x = x + alpha p
    hpc_waxpby(n, 1.0, r.get(), -alpha, Ap.get(), r.get());  // r = r - alpha A p
    niters = k;
  }
  keep.r = std::move(r);
  keep.p = std::move(p);
  keep.Ap = std::move(Ap);
  return niters;
}

}  // namespace ebla::experiments::hpccg
