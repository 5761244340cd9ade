// The C++ side of the Python tests: runs one computation through ebla's C++ API on inputs
// read from a file (numbers as C99 hex floats, separated by white space) and prints every
// result as a hex float (%a), so that the tests compare the Python module with C++ bit for bit.
//
//   ebla_py_reference round FORMAT MODE SEED FILE           FILE: n, x
//   ebla_py_reference qdot TOL POLICY LADDER f64|f32 FILE   FILE: n, x, y (LADDER "-": default)
//   ebla_py_reference cg MTX DOT QTOL TOL JACOBI FILE       FILE: n, b; DOT exact|qdot|fixed:FMT|auto
//   ebla_py_reference power N DEGREE SEED DOT QTOL TOL
//   ebla_py_reference gemm INPUT WORDS ENGINE UNIT FILE     FILE: m, k, n, A, B (row-major)
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/quantize.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/problems.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::vector<double> read_numbers(const std::string& path) {
  std::ifstream in(path);
  if (!in) ebla::throw_invalid("ebla_py_reference", "cannot read " + path);
  std::vector<double> v;
  std::string word;
  while (in >> word) v.push_back(std::strtod(word.c_str(), nullptr));
  return v;
}

void print(double v) { std::printf("%a\n", v); }

ebla::Vector to_vector(const double* p, std::size_t n) {
  ebla::Vector v("reference", n);
  for (std::size_t i = 0; i < n; ++i) v(i) = p[i];
  return v;
}

int run_round(char** a) {
  const std::vector<double> in = read_numbers(a[3]);
  const std::size_t n = static_cast<std::size_t>(in[0]);
  Kokkos::View<double*, Kokkos::HostSpace> x("x", n), y("y", n);
  for (std::size_t i = 0; i < n; ++i) x(i) = in[1 + i];
  ebla::quantize(x, y, ebla::format_by_name(a[0]), ebla::rounding_by_name(a[1]), std::strtoull(a[2], nullptr, 10));
  for (std::size_t i = 0; i < n; ++i) print(y(i));
  return 0;
}

template <class T>
void qdot_typed(const std::vector<double>& in, const ebla::QdotOptions& o) {
  const std::size_t n = static_cast<std::size_t>(in[0]);
  std::vector<T> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<T>(in[1 + i]);
    y[i] = static_cast<T>(in[1 + n + i]);
  }
  const ebla::QdotResult r = ebla::qdot(x.data(), y.data(), n, o);
  print(r.value);
  print(r.bound);
  print(r.quantization_bound);
  print(r.accumulation_bound);
  for (std::size_t c : r.stats.count_per_level) std::printf("%zu\n", c);
}

int run_qdot(char** a) {
  ebla::QdotOptions o;
  o.tolerance = std::strtod(a[0], nullptr);
  o.policy = ebla::qdot_policy_by_name(a[1]);
  if (std::string(a[2]) != "-") o.ladder = ebla::qdot_ladder_by_names(a[2]);
  const std::vector<double> in = read_numbers(a[4]);
  if (std::string(a[3]) == "f32")
    qdot_typed<float>(in, o);
  else
    qdot_typed<double>(in, o);
  return 0;
}

ebla::DotPolicy policy_of(const std::string& dot, double qtol) {
  if (dot == "exact") return ebla::DotPolicy::exact();
  if (dot == "auto") return ebla::DotPolicy::automatic();
  if (dot.rfind("fixed:", 0) == 0) return ebla::DotPolicy::fixed(ebla::format_by_name(dot.substr(6)));
  ebla::QdotOptions o;
  o.tolerance = qtol;
  return ebla::DotPolicy::approximate(o);
}

int run_cg(char** a) {
  const ebla::CsrOperator A(ebla::read_matrix_market(a[0]));
  const ebla::DotPolicy dots = policy_of(a[1], std::strtod(a[2], nullptr));
  ebla::CgOptions o;
  o.tolerance = std::strtod(a[3], nullptr);
  o.jacobi = std::string(a[4]) == "1";
  const std::vector<double> in = read_numbers(a[5]);
  const std::size_t n = static_cast<std::size_t>(in[0]);
  const ebla::Vector b = to_vector(in.data() + 1, n);
  const ebla::Vector x0("x0", n);
  const ebla::CgResult r = ebla::cg(A, b, x0, dots, o);
  std::printf("%d\n", r.iterations);
  print(r.true_residual);
  for (std::size_t i = 0; i < n; ++i) print(r.x(i));
  for (const ebla::CgIteration& it : r.history) {
    print(it.residual);
    print(it.pq.value);
    print(it.pq.bound);
  }
  return 0;
}

int run_power(char** a) {
  const std::size_t n = std::strtoull(a[0], nullptr, 10);
  const std::uint64_t seed = std::strtoull(a[2], nullptr, 10);
  const ebla::CsrOperator A(ebla::graph_laplacian(n, std::strtod(a[1], nullptr), seed));
  const ebla::DotPolicy dots = policy_of(a[3], std::strtod(a[4], nullptr));
  ebla::PowerOptions o;
  o.tolerance = std::strtod(a[5], nullptr);
  const ebla::PowerResult r = ebla::power_method(A, ebla::random_unit_vector(n, 1), dots, o);
  std::printf("%d\n", r.iterations);
  print(r.eigenvalue);
  print(r.residual);
  for (const ebla::PowerIteration& it : r.history) {
    print(it.eigenvalue);
    print(it.xy.bound);
  }
  return 0;
}

int run_gemm(char** a) {
  ebla::GemmConfig c;
  c.input = ebla::format_by_name(a[0]);
  c.words = std::atoi(a[1]);
  c.engine = ebla::gemm_engine_by_name(a[2]);
  c.unit = ebla::matrix_unit_by_name(a[3]);
  const std::vector<double> in = read_numbers(a[4]);
  const auto m = static_cast<std::size_t>(in[0]), k = static_cast<std::size_t>(in[1]), n = static_cast<std::size_t>(in[2]);
  ebla::HostMatrix A("A", m, k), B("B", k, n);
  for (std::size_t i = 0; i < m * k; ++i) A.data()[i] = in[3 + i];
  for (std::size_t i = 0; i < k * n; ++i) B.data()[i] = in[3 + m * k + i];
  const ebla::GemmResult r = ebla::gemm(A, B, c);
  print(r.normwise_bound);
  for (std::size_t i = 0; i < m * n; ++i) print(r.C.data()[i]);
  for (std::size_t i = 0; i < m * n; ++i) print(r.bound.data()[i]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  const std::string cmd = argc > 1 ? argv[1] : "";
  const int need = cmd == "round" ? 4 : cmd == "qdot" ? 5 : cmd == "cg" ? 6 : cmd == "power" ? 6 : cmd == "gemm" ? 5 : -1;
  if (need < 0 || argc != need + 2) {
    std::fprintf(stderr, "ebla_py_reference: usage: see the top of python/tests/reference.cpp\n");
    return 2;
  }
  try {
    char** a = argv + 2;
    if (cmd == "round") return run_round(a);
    if (cmd == "qdot") return run_qdot(a);
    if (cmd == "cg") return run_cg(a);
    if (cmd == "power") return run_power(a);
    return run_gemm(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ebla_py_reference: %s\n", e.what());
    return 2;
  }
}
