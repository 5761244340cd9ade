/* Conjugate gradients on plain C arrays whose dot product is switched to ebla_dqdot: the
 * drop-in use of qdot in an existing code (docs/qdot.md, "A dot product dropped in").
 *
 * The problem is HPCCG's: the 27-point stencil on an nx x ny x nz grid (27 on the diagonal,
 * -1 for each neighbour), b = A 1, x0 = 0; the loop is the textbook CG that HPCCG runs, and
 * it stops when sqrt(r^T r), as its dot product computes it, is at most `tau`, or after
 * `max_iter` iterations. It runs once with a plain double dot product, then once per qdot
 * tolerance, and prints the iterations and the true residual ||b - A x|| of each.
 *
 *   cg [nx ny nz [tau]]           default 100 100 10, tau 1e-8
 *
 * Build: cc -std=c99 $(pkg-config --cflags ebla) -o cg cg.c $(pkg-config --libs ebla) -lm */
#include <ebla/qdot.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  size_t n;
  size_t* start; /* row i: entries start[i] .. start[i + 1] - 1 */
  size_t* col;
  double* val;
} csr;

/* HPCCG's matrix: row (ix, iy, iz) couples to every grid point within one step in x, y, z */
static csr stencil(int nx, int ny, int nz) {
  csr A;
  A.n = (size_t)nx * ny * nz;
  A.start = malloc((A.n + 1) * sizeof *A.start);
  A.col = malloc(27 * A.n * sizeof *A.col);
  A.val = malloc(27 * A.n * sizeof *A.val);
  size_t k = 0, row = 0;
  for (int iz = 0; iz < nz; ++iz)
    for (int iy = 0; iy < ny; ++iy)
      for (int ix = 0; ix < nx; ++ix, ++row) {
        A.start[row] = k;
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const int jx = ix + dx, jy = iy + dy, jz = iz + dz;
              if (jx < 0 || jx >= nx || jy < 0 || jy >= ny || jz < 0 || jz >= nz) continue;
              A.col[k] = ((size_t)jz * ny + jy) * nx + jx;
              A.val[k++] = dx == 0 && dy == 0 && dz == 0 ? 27.0 : -1.0;
            }
      }
  A.start[A.n] = k;
  return A;
}

static void apply(const csr* A, const double* x, double* y) {
  for (size_t i = 0; i < A->n; ++i) {
    double s = 0;
    for (size_t k = A->start[i]; k < A->start[i + 1]; ++k) s += A->val[k] * x[A->col[k]];
    y[i] = s;
  }
}

static double plain_dot(size_t n, const double* x, const double* y) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

/* The dot product of the solver: plain (tolerance 0) or qdot at `tolerance`. Counts the
 * calls in which the tolerance would have perforated every product (info.kept_top_bin). */
static double tolerance = 0;
static int kept = 0;
static double dot(size_t n, const double* x, const double* y) {
  if (tolerance == 0) return plain_dot(n, x, y);
  ebla_qdot_options opt;
  ebla_qdot_options_init(&opt);
  opt.tolerance = tolerance;
  ebla_qdot_info info;
  const double v = ebla_dqdot(n, x, 1, y, 1, &opt, &info);
  if (info.status != EBLA_OK) {
    fprintf(stderr, "cg: %s\n", ebla_last_error());
    exit(2);
  }
  kept += info.kept_top_bin;
  return v;
}

/* CG from x = 0; returns the iterations, x the solution */
static int cg(const csr* A, const double* b, double* x, double tau, int max_iter) {
  const size_t n = A->n;
  double* r = malloc(n * sizeof *r);
  double* p = malloc(n * sizeof *p);
  double* q = malloc(n * sizeof *q);
  for (size_t i = 0; i < n; ++i) x[i] = 0, r[i] = b[i], p[i] = b[i];
  double rr = dot(n, r, r);
  int k = 0;
  while (k < max_iter && sqrt(rr) > tau) {
    apply(A, p, q);                          /* q = A p */
    const double alpha = rr / dot(n, p, q);  /* alpha = r^T r / p^T A p */
    for (size_t i = 0; i < n; ++i) x[i] += alpha * p[i], r[i] -= alpha * q[i];
    const double rr_next = dot(n, r, r);
    const double beta = rr_next / rr;
    for (size_t i = 0; i < n; ++i) p[i] = r[i] + beta * p[i];
    rr = rr_next;
    ++k;
  }
  free(r), free(p), free(q);
  return k;
}

int main(int argc, char** argv) {
  const int nx = argc > 3 ? atoi(argv[1]) : 100, ny = argc > 3 ? atoi(argv[2]) : 100,
            nz = argc > 3 ? atoi(argv[3]) : 10;
  const double tau = argc > 4 ? atof(argv[4]) : 1e-8;
  const int max_iter = 1000;
  if (nx < 1 || ny < 1 || nz < 1 || !(tau > 0)) {
    fprintf(stderr, "usage: cg [nx ny nz [tau]] (grid sizes >= 1, tau > 0)\n");
    return 2;
  }
  const csr A = stencil(nx, ny, nz);
  double* b = malloc(A.n * sizeof *b);
  double* x = malloc(A.n * sizeof *x);
  double* ax = malloc(A.n * sizeof *ax);
  for (size_t i = 0; i < A.n; ++i) x[i] = 1.0;
  apply(&A, x, b);  /* b = A 1 */
  printf("HPCCG %d x %d x %d (n = %zu), stop at sqrt(r^T r) <= %g\n", nx, ny, nz, A.n, tau);
  printf("%-10s %10s %14s %10s\n", "dot", "iterations", "||b - A x||", "kept top");
  const double tolerances[] = {0, 1e-8, 1e-6, 1e-4, 1e-2, 1e-1, 1e0, 1e1, 1e2};
  for (size_t t = 0; t < sizeof tolerances / sizeof *tolerances; ++t) {
    tolerance = tolerances[t];
    kept = 0;
    const int k = cg(&A, b, x, tau, max_iter);
    apply(&A, x, ax);
    for (size_t i = 0; i < A.n; ++i) ax[i] = b[i] - ax[i];
    char name[32];
    if (tolerance == 0) snprintf(name, sizeof name, "plain");
    else snprintf(name, sizeof name, "qdot %.0e", tolerance);
    printf("%-10s %10d %14.3e %10d\n", name, k, sqrt(plain_dot(A.n, ax, ax)), kept);
  }
  free(b), free(x), free(ax), free(A.start), free(A.col), free(A.val);
  return 0;
}
