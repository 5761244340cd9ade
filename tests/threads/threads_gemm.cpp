// ebla::gemm on every engine (the emulation of two units, sgemm, dgemm, onednn_bf16 where it
// runs), p = 1..3, scaling on and off, with the entrywise bounds, the papers' bounds and the
// reference: C and every bound and norm. The shapes cut A's and B's rows into several chunks
// with a short last one (chunks are about 2^16 entries of whole rows, 8 rows at a time), and
// the entries' exponents spread so that every row and column has its own scaling. Also
// gemm_normwise_bound, gemm_select's bounds and its choice where the choice does not depend on
// the timing, and the error naming the first entry that is not finite.
#include "digest.hpp"

#include <ebla/core/error.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace {

using ebla::ConstHostMatrix;
using ebla::GemmConfig;
using ebla::GemmEngine;
using ebla::GemmResult;
using ebla::HostMatrix;
using ebla_threads::Digest;
using ebla_threads::Register;

// s 2^e with s ~ U[0.5, 1), e ~ N(0, 4) rounded plus an offset per row and per column (so that
// the scalings differ), random signs; every 13th row and 17th column zero.
HostMatrix matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::normal_distribution<double> e(0.0, 4.0);
  HostMatrix X("X", rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      if (i % 13 == 12 || j % 17 == 16) continue;
      const int offset = static_cast<int>(i % 7) - static_cast<int>(j % 5);
      X(i, j) = (gen() & 1 ? -1 : 1) * std::ldexp(s(gen), static_cast<int>(std::lround(e(gen))) + offset);
    }
  return X;
}

void add(Digest& d, const HostMatrix& M) { d.add(M.data(), M.size()); }
void add(Digest& d, const std::string& s) { d.add(s.data(), s.size()); }

void record(Digest& d, const GemmResult& r) {
  add(d, r.C);
  d.add(r.normwise_bound);
  d.add(r.norm_a);
  d.add(r.norm_b);
  d.add(r.theta);
  d.add(r.lambda);
  d.add(r.paper.normwise);
  add(d, r.bound);
  add(d, r.probable_bound);
  add(d, r.paper.dbea);
  add(d, r.paper.vibea);
  add(d, r.exact);
  d.add(r.observed_normwise);
  d.add(r.observed_max_ratio);
}

GemmConfig config(GemmEngine engine, const ebla::Format& input, int words, bool scaling) {
  GemmConfig c;
  c.engine = engine;
  c.input = input;
  c.words = words;
  c.scaling = scaling;
  c.componentwise = true;
  return c;
}

// Two shapes: A of several chunks (k = 1030: 56 rows a chunk) and B of several (n = 1100).
struct Shape {
  std::int64_t m, k, n;
};
const Shape shapes[] = {{70, 1030, 9}, {9, 300, 1100}};

void run_configs(Digest& d, const std::vector<GemmConfig>& configs, const Shape* begin, const Shape* end) {
  for (const Shape* s = begin; s != end; ++s) {
    const HostMatrix A = matrix(s->m, s->k, 2 * static_cast<std::uint64_t>(s->k) + 1);
    const HostMatrix B = matrix(s->k, s->n, 2 * static_cast<std::uint64_t>(s->n) + 2);
    for (const GemmConfig& c : configs) {
      record(d, ebla::gemm(A, B, c));
      d.add(ebla::gemm_normwise_bound(A, B, c));
    }
  }
}

std::vector<GemmConfig> every_p(GemmEngine engine, const ebla::Format& input) {
  std::vector<GemmConfig> out;
  for (int p = 1; p <= 3; ++p)
    for (bool scaling : {true, false}) out.push_back(config(engine, input, p, scaling));
  return out;
}

void emulated(Digest& d, const char* unit_name, const ebla::Format& input) {
  std::vector<GemmConfig> configs = every_p(GemmEngine::emulated, input);
  for (GemmConfig& c : configs) c.unit = ebla::matrix_unit_by_name(unit_name);
  // the emulation is slow: the smaller k of the second shape
  const Shape small[] = {{70, 1030, 5}, {9, 100, 1100}};
  run_configs(d, configs, std::begin(small), std::end(small));
}

void sgemm(Digest& d) {
  std::vector<GemmConfig> configs = every_p(GemmEngine::sgemm, ebla::formats::bfloat16());
  for (const GemmConfig& c : every_p(GemmEngine::sgemm, ebla::formats::binary16())) configs.push_back(c);
  run_configs(d, configs, std::begin(shapes), std::end(shapes));
}

void onednn(Digest& d) {
  if (!ebla::host::gemm_engines().onednn_bf16) {
    add(d, std::string("no oneDNN bfloat16 here"));
    return;
  }
  run_configs(d, every_p(GemmEngine::onednn_bf16, ebla::formats::bfloat16()), std::begin(shapes), std::end(shapes));
}

void dgemm(Digest& d) {
  run_configs(d, {config(GemmEngine::dgemm, ebla::formats::binary64(), 1, false)}, std::begin(shapes),
              std::end(shapes));
}

// the exact reference and the observed errors (an O(m n k) exact product: a small n)
void reference(Digest& d) {
  GemmConfig c = config(GemmEngine::sgemm, ebla::formats::bfloat16(), 2, true);
  c.reference = true;
  const Shape s[] = {{70, 1030, 7}};
  run_configs(d, {c}, std::begin(s), std::end(s));
}

// gemm_select: every candidate's bound; the choice when no candidate meets the tolerance (the
// smallest bound) and when only the candidates with the smallest bound meet it
void select(Digest& d) {
  const HostMatrix A = matrix(70, 1030, 11), B = matrix(1030, 90, 12);
  ebla::GemmOptions o;
  o.tolerance = 1e-300;
  const ebla::GemmPlan none = ebla::gemm_select(A, B, o);
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& c : none.candidates) {
    d.add(c.relative_bound);
    smallest = std::min(smallest, c.relative_bound);
  }
  d.add(none.meets_tolerance);
  add(d, ebla::describe(none.config));
  d.add(none.relative_bound);
  o.tolerance = smallest;
  const ebla::GemmPlan tight = ebla::gemm_select(A, B, o);
  d.add(tight.meets_tolerance);
  add(d, ebla::describe(tight.config));
  d.add(tight.relative_bound);
  record(d, ebla::gemm(A, B, tight));
}

// a NaN in two chunks of A and one in B: the error names A's first
void not_finite(Digest& d) {
  HostMatrix A = matrix(200, 1030, 13), B = matrix(1030, 9, 14);
  A(150, 3) = std::nan("");
  A(60, 1000) = std::numeric_limits<double>::infinity();
  B(500, 2) = std::nan("");
  for (bool scaling : {true, false}) {
    try {
      ebla::gemm(A, B, config(GemmEngine::sgemm, ebla::formats::bfloat16(), 1, scaling));
      add(d, std::string("no error"));
    } catch (const ebla::InvalidArgument& e) {
      add(d, std::string(e.what()));
    }
  }
}

const Register emulated_fma("gemm.emulated.fma_binary32", [](Digest& d) {
  emulated(d, "fma_binary32", ebla::formats::binary16());
});
const Register emulated_v100("gemm.emulated.v100_fp16", [](Digest& d) {
  emulated(d, "v100_fp16", ebla::formats::binary16());
});
const Register emulated_h100("gemm.emulated.h100_bf16", [](Digest& d) {
  emulated(d, "h100_bf16", ebla::formats::bfloat16());
});
const Register sgemm_words("gemm.sgemm", sgemm);
const Register onednn_words("gemm.onednn_bf16", onednn);
const Register dgemm_only("gemm.dgemm", dgemm);
const Register reference_run("gemm.reference", reference);
const Register select_run("gemm.select", select);
const Register not_finite_run("gemm.not_finite", not_finite);

}  // namespace
