// The studies stated as text (qdot, gemm, mac, weak form), called as a library: each
// choice's defaults and values land in its spec, every bad value or inconsistent choice
// throws InvalidArgument naming the option as the caller names it, and a qdot sweep
// reports a progress step per vector pair.
#include <ebla/core/error.hpp>
#include <ebla/experiments/gemm_choice.hpp>
#include <ebla/experiments/mac_study.hpp>
#include <ebla/experiments/qdot_study.hpp>
#include <ebla/experiments/weakform_study.hpp>

#include "../solvers/util.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using namespace ebla::experiments;

using ebla::test::error_of;

::testing::AssertionResult starts(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not start with '" << prefix << "'";
}

std::string cmd(const std::string& option) { return "cmd" + (option.empty() ? "" : " " + option); }

// ---- qdot -----------------------------------------------------------------------------

QdotStudyChoice qdot(const std::string& experiment = "") {
  QdotStudyChoice c;
  c.experiment = experiment;
  c.name = cmd;
  return c;
}

TEST(QdotStudyChoice, DefaultsOfEachKindAndGivenValues) {
  const QdotStudySpec run = make_qdot_study_spec(qdot());
  EXPECT_EQ(run.kind, QdotStudyKind::run);
  EXPECT_EQ(run.samples, 1);
  EXPECT_EQ(run.sizes, std::vector<std::int64_t>{1000000});
  QdotStudyChoice c = qdot("effectiveness");
  c.dists = {"a"};
  c.t_values = {"5", "9"};
  c.sizes = {"1e3", "2000"};
  c.tolerances = {"1e-8"};
  c.policy = "paper";
  c.samples = 2;
  c.use_float = true;
  const QdotStudySpec s = make_qdot_study_spec(c);
  EXPECT_EQ(s.kind, QdotStudyKind::effectiveness);
  EXPECT_EQ(s.dists, std::vector<QdotDist>{QdotDist::A});
  EXPECT_EQ(s.t_for(QdotDist::A), (std::vector<double>{5, 9}));
  EXPECT_EQ(s.sizes, (std::vector<std::int64_t>{1000, 2000}));
  EXPECT_EQ(s.policies, std::vector<ebla::QdotPolicy>{ebla::QdotPolicy::paper});
  EXPECT_EQ(s.samples, 2);
  EXPECT_TRUE(s.use_float);
  EXPECT_EQ(make_qdot_study_spec(qdot("compare-policies")).policies.size(), 2u);
  QdotStudyChoice flag = qdot();
  flag.compare_policies = true;
  EXPECT_EQ(make_qdot_study_spec(flag).kind, QdotStudyKind::compare_policies);
}

TEST(QdotStudyChoice, BadValuesNameTheOption) {
  const auto error = [](QdotStudyChoice c) { return error_of([&] { make_qdot_study_spec(c); }); };
  EXPECT_TRUE(starts(error(qdot("fig4")), "cmd --experiment: unknown experiment 'fig4'"));
  QdotStudyChoice both = qdot("tightness");
  both.compare_policies = true;
  EXPECT_TRUE(starts(error(both), "cmd --compare-policies: is an experiment of its own"));
  QdotStudyChoice t = qdot("tightness");
  t.t_values = {"2001"};
  EXPECT_TRUE(starts(error(t), "cmd --t: t = '2001' is outside (0, 2000]"));
  QdotStudyChoice n = qdot("tightness");
  n.sizes = {"0"};
  EXPECT_TRUE(starts(error(n), "cmd --n: n = 0 in an experiment"));
  n.sizes = {"10.5"};
  EXPECT_TRUE(starts(error(n), "cmd --n: n = 10.5 is not a whole number"));
  QdotStudyChoice tol = qdot("effectiveness");
  tol.tolerances = {"1e-8", "0"};
  EXPECT_TRUE(starts(error(tol), "cmd --tol: tolerance 0 is not a positive finite number"));
  QdotStudyChoice samples = qdot("tightness");
  samples.samples = 0;
  EXPECT_TRUE(starts(error(samples), "cmd --samples: 0 is not a positive number of samples"));
  QdotStudyChoice reps = qdot();
  reps.reps = 100001;
  EXPECT_TRUE(starts(error(reps), "cmd --reps: 100001 is not in 0..100000"));
  QdotStudyChoice list = qdot();
  list.t_values = {"5", "9"};
  EXPECT_TRUE(starts(error(list), "cmd --t: a single run takes one value (got 2)"));
  QdotStudyChoice dist = qdot();
  dist.dists = {"C"};
  EXPECT_TRUE(starts(error(dist), "cmd --dist: "));
}

TEST(QdotStudyChoice, SweepReportsEveryVectorPair) {
  QdotStudyChoice c = qdot("tightness");
  c.dists = {"B"};
  c.t_values = {"5", "9"};
  c.sizes = {"50"};
  c.samples = 3;
  QdotStudySpec s = make_qdot_study_spec(c);
  std::vector<std::size_t> done;
  std::set<std::size_t> totals;
  std::vector<std::string> steps;
  s.progress = [&](std::size_t d, std::size_t total, const std::string& step) {
    done.push_back(d);
    totals.insert(total);
    steps.push_back(step);
  };
  run_qdot_study(s);
  EXPECT_EQ(done, (std::vector<std::size_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(totals, std::set<std::size_t>{6});
  EXPECT_EQ(steps.front(), "B, t = 5, n = 50, sample 1");
  EXPECT_EQ(steps.back(), "B, t = 9, n = 50, sample 3");
}

// ---- gemm -----------------------------------------------------------------------------

GemmChoice gemm(std::set<std::string> given) {
  GemmChoice c;
  c.given = [given](const std::string& f) { return given.count(f) > 0; };
  c.name = cmd;
  return c;
}

TEST(GemmChoice, ModesAndTheirDefaults) {
  const GemmSpec run = make_gemm_spec(gemm({}));
  EXPECT_EQ(run.mode, GemmMode::run);
  EXPECT_EQ(run.data.m, 256);
  EXPECT_EQ(run.gemm.input, ebla::format_by_name("bfloat16"));
  EXPECT_EQ(run.unit_name, "fma_binary32");
  GemmChoice select = gemm({"tolerance"});
  select.tolerance = "1e-6";
  EXPECT_EQ(make_gemm_spec(select).mode, GemmMode::select);
  EXPECT_EQ(make_gemm_spec(select).tolerance, 1e-6);
  GemmChoice tc = gemm({"m"});
  tc.experiment = "tensor-core";
  tc.m = "64";
  const GemmSpec t = make_gemm_spec(tc);
  EXPECT_EQ(t.data.m, 64);
  EXPECT_EQ(t.data.k, 32768);
  EXPECT_EQ(t.unit_name, "h100_fp16");
  EXPECT_FALSE(t.scaling);
  EXPECT_TRUE(t.gemm.componentwise);
  GemmChoice nr = gemm({"k-list"});
  nr.experiment = "narrow-range";
  nr.k_list = {"10", "", "100"};
  const GemmSpec n = make_gemm_spec(nr);
  EXPECT_EQ(n.k_list, (std::vector<std::int64_t>{10, 100}));
  EXPECT_EQ(n.figures, (std::vector<std::string>{"5.1", "5.2"}));
}

TEST(GemmChoice, BadChoicesNameTheOption) {
  const auto error = [](const GemmChoice& c) { return error_of([&] { make_gemm_spec(c); }); };
  GemmChoice words = gemm({"words"});
  words.words = "4";
  EXPECT_TRUE(starts(error(words), "cmd --words: p = 4 is outside 1..3"));
  GemmChoice figure = gemm({"figure"});
  EXPECT_TRUE(starts(error(figure), "cmd --figure: does not apply to a single run"));
  GemmChoice k = gemm({"k"});
  k.experiment = "narrow-range";
  EXPECT_TRUE(starts(error(k), "cmd --k: the narrow-range experiment takes a list of k"));
  GemmChoice size = gemm({"m"});
  size.m = "2e8";
  EXPECT_TRUE(starts(error(size), "cmd --m: 2e8 exceeds 1e8"));
  GemmChoice entries = gemm({"m", "k"});
  entries.m = entries.k = "1e5";
  EXPECT_TRUE(starts(error(entries), "cmd --m --k --n: A would be 100000 x 100000, more than 2^28 entries"));
  GemmChoice range = gemm({"range"});
  EXPECT_TRUE(starts(error(range), "cmd --range: applies to --distribution logscale"));
  GemmChoice unit = gemm({"unit", "engine"});
  unit.engine = "sgemm";
  EXPECT_TRUE(starts(error(unit), "cmd --unit: applies to --engine emulated, not to --engine sgemm"));
  GemmChoice failure = gemm({"failure"});
  failure.failure = "1";
  EXPECT_TRUE(starts(error(failure), "cmd --failure: probability 1 is outside (0, 1)"));
}

// ---- mac and weak form ------------------------------------------------------------------

// The message of make(c) after change(c), which must start with `prefix`.
template <class Choice, class Make, class Change>
::testing::AssertionResult refused(Choice c, Make make, Change change, const std::string& prefix) {
  change(c);
  return starts(error_of([&] { make(c); }), prefix);
}

TEST(MacChoice, ValuesAndBadValues) {
  MacChoice c;
  c.name = cmd;
  c.low = "fp8_e4m3";
  c.samples = "1e3";
  c.seed = 7;
  const MacSpec s = make_mac_spec(c);
  EXPECT_EQ(s.low, ebla::format_by_name("fp8_e4m3"));
  EXPECT_EQ(s.samples, 1000);
  EXPECT_EQ(s.seed, 7u);
  const auto make = make_mac_spec;
  // binary32 cannot hold the products of bfloat16 exactly
  EXPECT_TRUE(refused(c, make, [](MacChoice& x) { x.low = "bfloat16"; }, "cmd --low bfloat16 --high binary32: MpfmaConfig::mpfma"));
  EXPECT_TRUE(refused(c, make, [](MacChoice& x) { x.samples = "2e7"; }, "cmd --samples: 2e7 exceeds 1e7"));
  EXPECT_TRUE(refused(c, make, [](MacChoice& x) { x.input_format = "binary99"; }, "cmd --input-format: "));
  EXPECT_TRUE(refused(c, make, [](MacChoice& x) { x.failure = "0"; }, "cmd --failure: probability 0 is outside (0, 1)"));
}

TEST(WeakformChoice, ValuesAndBadValues) {
  WeakformChoice c;
  c.name = cmd;
  c.ni = "3";
  c.n = "0";
  c.input = "binary16";
  c.distribution = "wide";
  const WeakformSpec s = make_weakform_spec(c);
  EXPECT_EQ(s.ni, 3u);
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.unit.input, ebla::format_by_name("binary16"));
  EXPECT_EQ(s.unit.accumulation, ebla::format_by_name("binary16"));
  EXPECT_EQ(s.distribution, WeakformDistribution::wide);
  const auto make = make_weakform_spec;
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.format = "binary32"; }, "cmd --format: give --format, or --input"));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.ni = "0"; }, "cmd --ni: 0 is not a size >= 1"));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.ni = x.nj = "1000", x.n = "200"; },
                      "cmd: ni nj nk n = 1000 x 1000 x 4 x 200 exceeds 1e8"));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.distribution = "normal"; },
                      "cmd --distribution: unknown distribution 'normal'"));
}

// A unit of the catalogue instead of the formats: its parameters land in the spec; the options
// it fixes, an unknown name (with the close ones) and both --unit and --unit-file are refused.
TEST(WeakformChoice, Units) {
  WeakformChoice c;
  c.name = cmd;
  c.unit = "h100_fp8_e4m3";
  const WeakformSpec s = make_weakform_spec(c);
  EXPECT_EQ(s.unit.block, 32);
  EXPECT_EQ(s.unit.sum_precision, 14);
  EXPECT_EQ(s.unit.input, ebla::format_by_name("fp8_e4m3"));
  const auto make = make_weakform_spec;
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.format = "binary16"; },
                      "cmd --unit: conflicts with --format (the unit fixes"));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.rounding = "toward_zero", x.product = "bfloat16"; },
                      "cmd --unit: conflicts with --rounding, --product"));
  // given at its default value, as a command line says
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.given = [](const std::string& f) { return f == "rounding"; }; },
                      "cmd --unit: conflicts with --rounding"));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.unit = "h100_fp8"; },
                      "cmd --unit: unknown unit 'h100_fp8' (did you mean h100_fp16, h100_fp8_e4m3, h100_fp8_e5m2?); known: "));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.unit_file = "x.unit"; },
                      "cmd --unit: give --unit or --unit-file, not both"));
  EXPECT_TRUE(refused(c, make, [](WeakformChoice& x) { x.unit.clear(), x.unit_file = "/nonexistent/x.unit"; },
                      "cmd --unit-file: ebla::read_unit_spec: cannot open"));
}

}  // namespace
