// The C++ examples of docs/*.md, whole: each part between "docs/PAGE.md: begin" and
// "docs/PAGE.md: end" is a block of that page as shown there (tests/apps/doc_snippets.py
// compares them), and this program, built against an installed ebla, runs them and checks
// what they compute.
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/probe.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/weakform.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("docs_cxx: FAILED: %s\n", what);
    ++failures;
  }
}

void rounding_example() {
  // docs/formats-and-rounding.md: begin
double h = ebla::round_to(0.1, ebla::formats::binary16(), ebla::Rounding::nearest_even);  // 0.0999755859375
double t = ebla::round_to(0.1, ebla::format_by_name("fp8_e4m3"), ebla::Rounding::toward_zero);  // 0.09375
const ebla::RoundingConstants c = ebla::rounding_constants(ebla::formats::bfloat16());  // once per loop
double s = ebla::round_to<ebla::Rounding::stochastic>(0.1, c, 0.75);  // random number 0.75 in [0, 1)
  // docs/formats-and-rounding.md: end
  check(h == 0.0999755859375, "round_to(0.1, binary16) = 0.0999755859375");
  check(t == 0.09375, "round_to(0.1, fp8_e4m3, toward_zero) = 0.09375");
  // 0.1 lies between the bfloat16 neighbours 0.099609375 and 0.10009765625, 0.8 of the way up:
  // a random number of 0.75 rounds up
  check(s == 0.10009765625, "stochastic round_to(0.1, bfloat16, 0.75) = 0.10009765625");
}

// a_i, b_i: multiples of 1/8 (exact in binary16), the rows of a 4 x 8 product
void matrix_unit_example() {
  const std::size_t k = 8, rows = 4;
  std::vector<double> av(k), bv(k), rows_a(rows * k), rows_b(rows * k), c_rows(rows, 0.5), d_rows(rows);
  for (std::size_t i = 0; i < k; ++i) av[i] = 0.125 * static_cast<double>(i + 1), bv[i] = -0.5 * static_cast<double>(i % 3);
  for (std::size_t i = 0; i < rows * k; ++i) rows_a[i] = av[i % k], rows_b[i] = bv[i % k];
  const double* a = av.data();
  const double* b = bv.data();
  const double c = 0.25;
  Kokkos::View<double**, Kokkos::HostSpace> A("A", 2, k), B("B", k, 3), C("C", 2, 3);
  for (std::size_t j = 0; j < k; ++j) A(0, j) = A(1, j) = av[j], B(j, 0) = B(j, 1) = B(j, 2) = bv[j];
  // docs/matrix-units.md: begin
ebla::MatrixUnit unit = ebla::units::v100_fp16();
double d = ebla::unit_dot(unit, a, b, k, c);       // c + a^T b, b products per unit operation
ebla::unit_gemm(unit, A, B, C);                    // C = C + A B (rank-2 views of double)
ebla::unit_dot_rows(unit, rows_a.data(), rows_b.data(), c_rows.data(), d_rows.data(), rows, k);
                                                   // d_rows[r] = c_rows[r] + (row r of rows_a) . (row r of rows_b)
  // docs/matrix-units.md: end
  double exact = c;  // every product and sum here is exact in binary32
  for (std::size_t i = 0; i < k; ++i) exact += av[i] * bv[i];
  check(d == exact, "unit_dot = c + a^T b");
  check(C(1, 2) == exact - c, "unit_gemm: C = A B");
  check(d_rows[rows - 1] == exact - c + 0.5, "unit_dot_rows: c_rows[r] + a^T b");
}

void probe_example() {
  // docs/probes.md: begin
ebla::DotDevice dev = ebla::unit_device("v100_fp16", ebla::units::v100_fp16());  // the emulation
ebla::DotDevice hw = ebla::avx512_bf16_device();   // this CPU's VDPBF16PS (check avx512_bf16_available())
ebla::ProbeFindings f = ebla::probe(dev);
for (const ebla::ProbeRow& row : ebla::probe_table(f)) std::printf("%s: %s\n", row.property.c_str(), row.finding.c_str());
std::vector<std::string> d = ebla::probe_differences(f, ebla::units::v100_fp16());  // empty: agree
  // docs/probes.md: end
  check(d.empty(), "probe of the v100_fp16 emulation agrees with v100_fp16");
  check(hw.length > 0, "avx512_bf16_device has a call length");
}

// x_i = 2^-(i mod 40), y_i = (-1)^i (i + 1): products over many exponent bins
void qdot_example() {
  const std::size_t n = 1000;
  Kokkos::View<double*, Kokkos::HostSpace> x("x", n), y("y", n);
  for (std::size_t i = 0; i < n; ++i)
    x(i) = std::ldexp(1.0, -static_cast<int>(i % 40)), y(i) = (i % 2 == 0 ? 1.0 : -1.0) * static_cast<double>(i + 1);
  double exact = 0;  // every partial sum is exact in binary64 (integers times powers of two >= 2^-39)
  for (std::size_t i = 0; i < n; ++i) exact += x(i) * y(i);
  // docs/qdot.md: begin
ebla::QdotOptions opt;                  // tolerance, policy, ladder
opt.tolerance = 1e-8;
ebla::QdotPlan plan = ebla::qdot_select(x, y, opt);     // Algorithm 3.2
ebla::QdotResult r  = ebla::qdot_compute(x, y, plan);   // Algorithm 3.1
ebla::QdotResult r2 = ebla::qdot(x, y, opt);            // Algorithm 3.3: both
// r.value, r.bound (|r.value - x^T y| <= r.bound), r.stats
  // docs/qdot.md: end
  check(std::fabs(r.value - exact) <= r.bound, "qdot_compute: |value - x^T y| <= bound");
  check(r2.value == r.value && r2.bound == r.bound, "qdot = qdot_select + qdot_compute");
}

// A0 = 1, B = 1/4, C = 1/2 (ni = nj = 2, n = 3, nk = 2): every entry 1 + 3/8, exact in binary32
void weakform_example() {
  Kokkos::View<double***, Kokkos::HostSpace> A("A", 2, 2, 2), B("B", 2, 3, 2);
  Kokkos::View<double**, Kokkos::HostSpace> C("C", 2, 3);
  Kokkos::deep_copy(A, 1.0);
  Kokkos::deep_copy(B, 0.25);
  Kokkos::deep_copy(C, 0.5);
  // docs/weakform.md: begin
#include <ebla/kernels/weakform.hpp>

ebla::MatrixUnit unit = ebla::weakform_unit(ebla::formats::binary16(), ebla::formats::binary32());
ebla::WeakformBounds b = ebla::weakform_bounds(unit, A, B, C);   // A still holds A0
ebla::weakform(unit, A, B, C);                                     // A = A0 + B C, layer by layer
// |A(i,j,k) - exact| <= b.componentwise(i, j, k); per layer: b.layers[k].bound1, bound_inf, bound_f
  // docs/weakform.md: end
  check(A(1, 0, 1) == 1.375, "weakform: A = A0 + B C");
  check(b.componentwise(1, 0, 1) >= 0 && b.layers.size() == 2, "weakform_bounds: a bound per entry and per layer");
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  rounding_example();
  matrix_unit_example();
  probe_example();
  qdot_example();
  weakform_example();
  Kokkos::finalize();
  std::printf("docs_cxx: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
