// Model 1 mixed-precision GEMM: scaling, words, products on an engine, certified bounds,
// and the tolerance-driven choice. The contract and the bound are in gemm.hpp; the
// derivations are in docs/gemm.md.
//
// This file holds the entry points; the steps are in gemm_config.cpp (the config as it runs,
// the accumulation model), gemm_words.cpp (scaling and words), gemm_lines.cpp (the passes
// over one row), gemm_products.cpp, gemm_bounds.cpp, gemm_reference.cpp, gemm_select.cpp
// and gemm_scratch.cpp (scratch memory), with what they share in gemm_internal.hpp.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>

#include <chrono>
#include <string>

namespace ebla {

using namespace gemm_detail;

// ---- the entry points -----------------------------------------------------------------------

HostMatrix exact_gemm(const ConstHostMatrix& A, const ConstHostMatrix& B) {
  if (A.extent(1) != B.extent(0))
    throw_invalid("ebla::exact_gemm", "A is " + std::to_string(A.extent(0)) + " x " +
                                          std::to_string(A.extent(1)) + " but B is " +
                                          std::to_string(B.extent(0)) + " x " +
                                          std::to_string(B.extent(1)));
  return exact_product(A, B);
}

double gemm_normwise_bound(const ConstHostMatrix& A, const ConstHostMatrix& B,
                           const GemmConfig& config) {
  return normwise(prepare(A, B, config, "ebla::gemm_normwise_bound", Keep{}));
}

GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config) {
  auto start = std::chrono::steady_clock::now();
  Keep keep;  // the words as the engine reads them, and what the entrywise bounds need
  keep.engine = true;
  keep.words = config.engine == GemmEngine::emulated || config.engine == GemmEngine::dgemm || config.componentwise;
  keep.rho = config.componentwise && config.engine != GemmEngine::dgemm;
  const Prepared P = prepare(A, B, config, "ebla::gemm", keep);
  GemmResult r;
  r.config = P.s;
  r.theta = P.theta;
  r.model = P.model;
  r.norm_a = P.norm_a;
  r.norm_b = P.norm_b;
  r.lambda = P.lambda;
  r.split_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  bool finite = true;
  r.C = product(P, finite);
  r.product_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  r.normwise_bound = finite ? normwise(P) : inf;
  r.paper.normwise = paper_normwise(P);
  if (P.s.componentwise) {
    componentwise(P, r.C, r);
    paper_componentwise(P, A, B, r);
  }
  r.bound_seconds = seconds_since(start);
  if (P.s.reference) observe(A, B, r);
  return r;
}

GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmPlan& plan) {
  return gemm(A, B, plan.config);
}

}  // namespace ebla
