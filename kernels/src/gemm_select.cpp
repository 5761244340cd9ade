// ebla::gemm_select: the cheapest candidate config whose certified normwise bound meets a
// tolerance, by a cost model measured on this machine.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>
#include <ebla/kernels/gemm_host.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

using namespace gemm_detail;

// ---- selection ------------------------------------------------------------------------------

namespace {

template <class F>
double best_seconds(int repetitions, F&& f) {
  double best = inf;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

const GemmCostModel& GemmCostModel::measured() {
  static const GemmCostModel model = [] {
    GemmCostModel c;
    const std::int64_t s = 512;  // large enough for the engines' steady rates
    const double flops = static_cast<double>(s * s * s);  // multiply-adds
    std::vector<double> a(static_cast<std::size_t>(s * s), 0.5), cd(a.size());
    std::vector<float> fa(a.size(), 0.5f), fc(a.size());
    std::vector<std::uint16_t> ha(a.size(), 0x3f00);
    // OpenBLAS's and oneDNN's threads spin for a while after a call and slow the other
    // library's next one: each engine is timed in two rounds, the best time kept
    c.dgemm = c.sgemm = c.onednn_bf16 = inf;
    for (int round = 0; round < 2; ++round) {
      if (host::gemm_engines().onednn_bf16)
        c.onednn_bf16 = std::min(c.onednn_bf16, best_seconds(3, [&] {
          host::bf16_gemm(s, s, s, ha.data(), ha.data(), fc.data());
        }) / flops);
      c.sgemm = std::min(c.sgemm, best_seconds(3, [&] {
        host::sgemm_by_rows(s, s, s, fa.data(), fa.data(), fc.data());
      }) / flops);
      c.dgemm = std::min(c.dgemm, best_seconds(3, [&] {
        host::dgemm_by_rows(s, s, s, a.data(), a.data(), cd.data());
      }) / flops);
    }
    const std::int64_t e = 32;
    HostMatrix X("X", e, e), Y("Y", e, e), Z("Z", e, e);
    Kokkos::deep_copy(X, 0.75);
    Kokkos::deep_copy(Y, 1.25);
    c.emulated = best_seconds(2, [&] { unit_gemm(units::fma_binary32(), X, Y, Z); }) /
                 static_cast<double>(e * e * e);
    // splitting, per element of A and B and per word: the words, the residuals, the norms and
    // the normwise bound's passes (a warm-up call first: fresh memory costs page faults)
    GemmConfig one;
    one.componentwise = false;
    const std::int64_t h = 512;
    HostMatrix big("big", h, h);
    Kokkos::deep_copy(big, 0.3);
    c.split = best_seconds(3, [&] { normwise(prepare(big, big, one, "ebla::GemmCostModel", Keep{})); }) /
              static_cast<double>(2 * h * h);
    return c;
  }();
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
  const GemmCostModel& cost = GemmCostModel::measured();
  GemmPlan plan;
  plan.tolerance = options.tolerance;
  int chosen = -1, smallest = -1;
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
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const GemmCandidateReport& rep = plan.candidates[i];
    const int idx = static_cast<int>(i);
    if (rep.relative_bound <= options.tolerance &&
        (chosen < 0 || rep.seconds < plan.candidates[static_cast<std::size_t>(chosen)].seconds))
      chosen = idx;
    if (smallest < 0 ||
        rep.relative_bound < plan.candidates[static_cast<std::size_t>(smallest)].relative_bound)
      smallest = idx;
  }
  if (smallest < 0) throw_invalid(function, "the candidate list is empty");
  plan.meets_tolerance = chosen >= 0;
  const GemmCandidateReport& pick = plan.candidates[static_cast<std::size_t>(chosen >= 0 ? chosen : smallest)];
  plan.config = pick.config;
  plan.relative_bound = pick.relative_bound;
  plan.seconds = pick.seconds;
  return plan;
}

}  // namespace ebla
