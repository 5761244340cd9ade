// ebla::gemm_select: the cheapest candidate config whose certified normwise bound meets a
// tolerance, by a cost model measured on this machine.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/gemm_profile.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

using namespace gemm_detail;

// ---- selection ------------------------------------------------------------------------------

const GemmCostModel& GemmCostModel::measured() {
  static const GemmCostModel model = cost_model(measure_gemm_timings(gemm_profile_entries()));
  return model;
}

double GemmCostModel::seconds(const GemmConfig& config, std::int64_t m, std::int64_t k,
                              std::int64_t n) const {
  const double mnk = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double per = config.engine == GemmEngine::emulated ? emulated
                     : config.engine == GemmEngine::sgemm  ? sgemm
                     : config.engine == GemmEngine::onednn_bf16 ? onednn_bf16
                                                                : dgemm;
  double t = pairs_of(config.words) * mnk * per;
  // splitting (for dgemm only the checks and norms: about half of one word's cost)
  const double words = config.engine == GemmEngine::dgemm ? 0.5 : config.words;
  t += words * split * static_cast<double>(m * k + k * n);
  if (config.componentwise) {  // the absolute-value products of the bounds, on DGEMM
    const double blocks = config.engine == GemmEngine::dgemm
                              ? 2
                              : 2 + (config.words * config.words - pairs_of(config.words)) +
                                    pairs_of(config.words) + 1;
    t += blocks * mnk * dgemm;
  }
  return t;
}

std::size_t gemm_choice(const std::vector<GemmCandidateReport>& candidates, double tolerance, double tie_margin) {
  const char* function = "ebla::gemm_choice";
  if (candidates.empty()) throw_invalid(function, "the candidate list is empty");
  if (!(tie_margin >= 0)) throw_invalid(function, "tie margin = " + std::to_string(tie_margin) + " is negative");
  const auto meets = [&](const GemmCandidateReport& c) { return c.relative_bound <= tolerance; };
  double cheapest = inf;
  for (const GemmCandidateReport& c : candidates)
    if (meets(c)) cheapest = std::min(cheapest, c.seconds);
  const bool any = cheapest < inf || std::any_of(candidates.begin(), candidates.end(), meets);
  // a < b: a is preferred; within the margin of the cheapest, cost decides last
  const auto better = [](const GemmCandidateReport& a, const GemmCandidateReport& b) {
    if (a.relative_bound != b.relative_bound) return a.relative_bound < b.relative_bound;
    if (pairs_of(a.config.words) != pairs_of(b.config.words)) return pairs_of(a.config.words) < pairs_of(b.config.words);
    return a.seconds < b.seconds;
  };
  std::size_t pick = candidates.size();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const GemmCandidateReport& c = candidates[i];
    if (any && !(meets(c) && c.seconds <= cheapest * (1 + tie_margin))) continue;
    if (pick == candidates.size() || better(c, candidates[pick])) pick = i;
  }
  return pick;
}

std::vector<GemmConfig> default_gemm_candidates(bool scaling, bool subnormals) {
  std::vector<GemmConfig> out;
  auto add = [&](const Format& f, int p, GemmEngine e) {
    GemmConfig c;
    c.input = f;
    c.words = p;
    c.engine = e;
    c.scaling = scaling;
    c.subnormals = subnormals;
    out.push_back(c);
  };
  const bool onednn = host::gemm_engines().onednn_bf16;
  for (int p = 1; p <= 3; ++p) {
    add(formats::bfloat16(), p, onednn ? GemmEngine::onednn_bf16 : GemmEngine::sgemm);
    add(formats::binary16(), p, GemmEngine::sgemm);
    add(formats::tf32(), p, GemmEngine::sgemm);
  }
  add(formats::binary32(), 1, GemmEngine::sgemm);
  add(formats::binary64(), 1, GemmEngine::dgemm);
  return out;
}

GemmPlan gemm_select(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmOptions& options) {
  const char* function = "ebla::gemm_select";
  if (!(options.tolerance > 0 && options.tolerance < inf))
    throw_invalid(function, "tolerance = " + std::to_string(options.tolerance) +
                                " is not positive and finite");
  std::vector<GemmConfig> candidates = options.candidates;
  if (candidates.empty()) candidates = default_gemm_candidates(options.scaling, options.subnormals);
  for (GemmConfig& c : candidates) {
    c.failure = options.failure;
    c.componentwise = options.componentwise;
  }
  for (const GemmConfig& c : candidates) validate(c, function);
  const GemmCostModel& cost = options.cost ? *options.cost : GemmCostModel::measured();
  GemmPlan plan;
  plan.tolerance = options.tolerance;
  // each candidate's bound by the passes gemm makes, without keeping the words
  for (const GemmConfig& c : candidates) {
    GemmCandidateReport rep;
    rep.config = c;
    const Prepared P = prepare(A, B, c, function, Keep{});
    const double bound = normwise(P);
    const double scale = P.norm_a * P.norm_b;  // ||A||_inf ||B||_inf
    rep.relative_bound = scale > 0 ? bound / scale : (bound > 0 ? inf : 0);
    rep.seconds = cost.seconds(c, A.extent(0), A.extent(1), B.extent(1));
    plan.candidates.push_back(rep);
  }
  if (plan.candidates.empty()) throw_invalid(function, "the candidate list is empty");
  const GemmCandidateReport& pick = plan.candidates[gemm_choice(plan.candidates, options.tolerance, options.tie_margin)];
  plan.meets_tolerance = pick.relative_bound <= options.tolerance;
  plan.config = pick.config;
  plan.relative_bound = pick.relative_bound;
  plan.seconds = pick.seconds;
  return plan;
}

}  // namespace ebla
