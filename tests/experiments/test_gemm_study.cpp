// The GEMM studies called as a library: small narrow-range and tensor-core runs whose certified
// bounds hold on every case, the same numbers for a seed (and for any number of threads), the
// progress callback, and the seeded operands.
#include <ebla/experiments/gemm_study.hpp>

#include <ebla/core/error.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace ebla;
using namespace ebla::experiments;

NarrowRangeSpec small_narrow(int threads) {
  NarrowRangeSpec s;
  s.m = 4;
  s.n = 3;
  s.k_list = {10, 40};
  s.figures = {"5.1", "5.2"};
  s.range = 3;
  s.seed = 7;
  s.threads = threads;
  return s;
}

TEST(NarrowRange, CertifiedBoundHoldsOnEveryCase) {
  const NarrowRangeResult r = narrow_range_study(small_narrow(1));
  ASSERT_EQ(r.figures.size(), 2u);
  EXPECT_EQ(r.figures[0].cases.size(), 24u);  // fp8 x2, subnormals x2, p x3, range x2
  EXPECT_EQ(r.figures[1].cases.size(), 36u);
  EXPECT_EQ(r.runs(), 2 * (24 + 36));
  EXPECT_EQ(r.violations(), 0);
  for (const NarrowFigure& f : r.figures)
    for (std::size_t i = 0; i < f.cases.size(); ++i)
      for (const NarrowPoint& p : f.points[i]) {
        EXPECT_GE(p.abs_error, 0) << f.cases[i].key();
        if (std::isfinite(p.bound)) {
          EXPECT_LE(p.abs_error, p.bound) << f.cases[i].key();
          EXPECT_LE(p.error, p.certified) << f.cases[i].key();
        }
      }
}

TEST(NarrowRange, SameNumbersForASeedOnAnyNumberOfThreads) {
  const NarrowRangeResult a = narrow_range_study(small_narrow(1)), b = narrow_range_study(small_narrow(3));
  for (std::size_t f = 0; f < a.figures.size(); ++f)
    for (std::size_t i = 0; i < a.figures[f].cases.size(); ++i)
      for (std::size_t k = 0; k < 2; ++k) {
        const NarrowPoint &p = a.figures[f].points[i][k], &q = b.figures[f].points[i][k];
        EXPECT_EQ(p.abs_error, q.abs_error);
        EXPECT_EQ(p.bound, q.bound);
        EXPECT_EQ(p.paper, q.paper);
      }
}

TEST(NarrowRange, ProgressCountsEveryConfigAndK) {
  NarrowRangeSpec s = small_narrow(2);
  s.figures = {"5.1"};
  std::vector<std::size_t> done;
  std::size_t total = 0;
  s.progress = [&](std::size_t d, std::size_t t, const std::string& step) {
    done.push_back(d);
    total = t;
    EXPECT_NE(step.find("Fig. 5.1, k = "), std::string::npos);
  };
  narrow_range_study(s);
  ASSERT_EQ(done.size(), 48u);
  EXPECT_EQ(total, 48u);
  for (std::size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i], i + 1);
}

TEST(NarrowRange, CasesAreFmaChainsInTheAccumulationFormat) {
  const std::vector<NarrowCase> cases = narrow_cases("5.1");
  const GemmConfig g = cases.front().config();
  EXPECT_EQ(cases.front().key(), "fp8_e5m2_subnormals_off_p1_narrow");
  EXPECT_EQ(cases.front().label(), "fp8_e5m2 -> binary16");
  EXPECT_EQ(g.unit.block, 1);
  EXPECT_EQ(g.unit.accumulation, formats::binary16());
  EXPECT_EQ(g.engine, GemmEngine::emulated);
}

TensorCoreSpec small_tensor_core() {
  TensorCoreSpec s;
  s.data.m = 8;
  s.data.k = 256;
  s.data.n = 4;
  s.data.seed = 3;
  s.gemm.input = formats::binary16();
  s.gemm.unit = units::h100_fp16();
  s.gemm.scaling = false;
  s.gemm.componentwise = true;
  return s;
}

TEST(TensorCore, CertifiedBoundHoldsOnEveryEntry) {
  const TensorCoreResult t = tensor_core_study(small_tensor_core());
  EXPECT_EQ(t.entries, 32);
  EXPECT_EQ(t.violations, 0);
  EXPECT_TRUE(t.first_violations.empty());
  ASSERT_EQ(t.error.size() + static_cast<std::size_t>(t.zero), 32u);
  for (std::size_t l = 0; l < t.error.size(); ++l) EXPECT_LE(t.error.values()[l], t.certified.values()[l]);
}

TEST(TensorCore, SameNumbersForASeedAndProgressInFourSteps) {
  TensorCoreSpec s = small_tensor_core();
  std::vector<std::size_t> done;
  s.progress = [&](std::size_t d, std::size_t total, const std::string&) {
    done.push_back(d);
    EXPECT_EQ(total, 4u);
  };
  const TensorCoreResult a = tensor_core_study(s), b = tensor_core_study(small_tensor_core());
  EXPECT_EQ(a.error.values(), b.error.values());
  EXPECT_EQ(a.certified.values(), b.certified.values());
  EXPECT_EQ(done, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
}

TEST(Operands, SeededAndRoundedToTheGivenFormat) {
  GemmData d;
  d.m = 3;
  d.k = 5;
  d.n = 2;
  d.seed = 11;
  const auto [A, B] = draw_operands(d);
  const auto [A2, B2] = draw_operands(d);
  for (std::size_t l = 0; l < A.size(); ++l) {
    EXPECT_EQ(A.data()[l], A2.data()[l]);
    EXPECT_LE(std::fabs(A.data()[l]), 1.0);
  }
  d.given = formats::binary16();
  const auto [H, HB] = draw_operands(d);
  for (std::size_t l = 0; l < H.size(); ++l) EXPECT_LE(std::fabs(H.data()[l] - A.data()[l]), 0x1p-11);
  d.distribution = GemmDistribution::logscale;
  d.range = 10;  // up to 1e10: beyond binary16
  EXPECT_THROW(draw_operands(d), InvalidArgument);
  EXPECT_EQ(distribution_text(GemmDistribution::logscale, 2.5), "+-10^phi, phi ~ U[-2.5, 2.5]");
}

}  // namespace
