// A solver run stated as text (solver_choice.hpp) and the auto study's sets and sequence
// (auto_study.hpp), called as a library: the source, sizes and operator of a ProblemChoice,
// the kind, tolerance, sweep and rungs of a DotChoice, and every inconsistent choice an
// InvalidArgument naming the field as the caller names it.
#include <ebla/solvers/auto_study.hpp>
#include <ebla/solvers/solver_choice.hpp>

#include <ebla/core/error.hpp>
#include <ebla/solvers/sweep.hpp>

#include "util.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using ebla::DotChoice;
using ebla::ProblemChoice;
using ebla::ProblemUse;
using ebla::test::contains;
using ebla::test::error_of;

const std::string matrices = std::string(EBLA_DATA_DIR) + "/matrices";

// A choice whose `fields` were given, named "run --<field>".
template <class Choice>
Choice given(Choice c, std::set<std::string> fields) {
  c.given = [fields](const std::string& f) { return fields.count(f) > 0; };
  c.name = [](const std::string& option) { return "run" + (option.empty() ? "" : " " + option); };
  return c;
}

TEST(ProblemChoice, DefaultsAreTheUsesProblems) {
  const ebla::ProblemSpec cg = ebla::make_problem_spec(ProblemChoice{}, ProblemUse::cg);
  EXPECT_EQ(cg.source, ebla::ProblemSource::hpccg);
  EXPECT_EQ(cg.nx, 20);
  const ebla::ProblemSpec power = ebla::make_problem_spec(ProblemChoice{}, ProblemUse::power);
  EXPECT_EQ(power.source, ebla::ProblemSource::laplacian);
  EXPECT_EQ(power.n, 1000u);
}

TEST(ProblemChoice, LaplacianVerticesAndOperator) {
  ProblemChoice c;
  c.problem = "laplacian";
  c.n = "1e4";
  c.shift = 0.5;
  c.op = "dense";
  c = given(c, {"problem", "n", "shift"});
  EXPECT_TRUE(contains(error_of([&] { ebla::make_problem_spec(c, ProblemUse::cg); }), "run --operator"));
  c.n = "2500";
  const ebla::ProblemSpec s = ebla::make_problem_spec(c, ProblemUse::cg);
  EXPECT_EQ(s.n, 2500u);
  EXPECT_EQ(s.op, ebla::OperatorKind::dense);
  EXPECT_EQ(s.shift, 0.5);
  EXPECT_EQ(s.named("degree"), "run --degree");
  c.n = "2500.5";
  EXPECT_TRUE(contains(error_of([&] { ebla::make_problem_spec(c, ProblemUse::cg); }),
                       "run --n: '2500.5' is not a whole number of vertices"));
}

TEST(ProblemChoice, BadChoicesNameTheOption) {
  const auto error = [](ProblemChoice c, std::set<std::string> fields) {
    return error_of([&] { ebla::make_problem_spec(given(c, fields), ProblemUse::cg); });
  };
  ProblemChoice two;
  two.matrix = "a.mtx";
  two.hdf5 = "a.h5";
  EXPECT_TRUE(contains(error(two, {"matrix", "hdf5"}), "run: --matrix and --hdf5 both choose the matrix"));
  ProblemChoice unknown;
  unknown.problem = "poisson";
  EXPECT_TRUE(contains(error(unknown, {"problem"}), "run --problem: unknown problem 'poisson'"));
  EXPECT_TRUE(contains(error(ProblemChoice{}, {"degree"}),
                       "run --degree: applies to --problem laplacian, not to --problem hpccg"));
  ProblemChoice stencil;
  stencil.problem = "laplacian";
  stencil.shift = 1;
  stencil.op = "stencil";
  EXPECT_TRUE(contains(error(stencil, {"problem", "shift"}), "run --operator: stencil is HPCCG's 27-point stencil"));
  ProblemChoice empty_file;
  EXPECT_TRUE(contains(error(empty_file, {"matrix"}), "run --matrix: empty file name"));
}

TEST(DotChoice, KindsAndTheirPolicies) {
  EXPECT_EQ(ebla::make_dot_spec(DotChoice{}, ProblemUse::cg).policy.kind, ebla::DotKind::exact);
  DotChoice q;
  q.qdot_tol = "1e-6";
  const ebla::DotSpec qs = ebla::make_dot_spec(given(q, {"qdot-tol"}), ProblemUse::cg);
  EXPECT_EQ(qs.policy.kind, ebla::DotKind::qdot);
  EXPECT_EQ(qs.policy.qdot.tolerance, 1e-6);
  EXPECT_EQ(qs.policy.qdot.plan_margin, ebla::QdotOptions::automatic_margin);  // a single run: the solver's
  EXPECT_EQ(qs.at(1e-3).qdot.plan_margin, 0);                                // a sweep's run: none
  DotChoice a;
  a.qdot_tol = "auto";
  EXPECT_EQ(ebla::make_dot_spec(given(a, {"qdot-tol"}), ProblemUse::power).policy.kind, ebla::DotKind::automatic);
  DotChoice f;
  f.format = "bfloat16";
  const ebla::DotSpec fs = ebla::make_dot_spec(given(f, {"format"}), ProblemUse::cg);
  EXPECT_EQ(fs.policy.kind, ebla::DotKind::fixed);
  EXPECT_EQ(fs.rungs, fs.policy.level_names());
}

TEST(DotChoice, SweepOfDecades) {
  DotChoice d;
  d.sweep = "1e-8:1e-5";
  d.ladder = "binary64,binary32";
  const ebla::DotSpec s = ebla::make_dot_spec(given(d, {"sweep-qdot-tol", "ladder"}), ProblemUse::cg);
  EXPECT_EQ(s.sweep, ebla::decade_tolerances(-8, -5));
  EXPECT_EQ(s.policy.kind, ebla::DotKind::exact);  // the reference
  EXPECT_EQ(s.rungs, (std::vector<std::string>{"binary64", "binary32"}));
  EXPECT_EQ(ebla::parse_decade_range("1000:1e4", "x"), ebla::decade_tolerances(3, 4));
  EXPECT_TRUE(contains(error_of([] { ebla::parse_decade_range("2e-8:1", "x"); }), "x: '2e-8' is not a power of ten"));
  EXPECT_TRUE(contains(error_of([] { ebla::parse_decade_range("1e-3:1e-8", "x"); }), "the first tolerance exceeds the last"));
  EXPECT_TRUE(contains(error_of([] { ebla::parse_decade_range("1e-3", "x"); }), "is not of the form A:B"));
}

TEST(DotChoice, ContradictionsNameTheOption) {
  const auto error = [](DotChoice d, std::set<std::string> fields) {
    return error_of([&] { ebla::make_dot_spec(given(d, fields), ProblemUse::cg); });
  };
  DotChoice d;
  d.dot = "exact";
  EXPECT_TRUE(contains(error(d, {"dot", "qdot-tol"}), "run --qdot-tol: implies --dot qdot, which contradicts --dot exact"));
  EXPECT_TRUE(contains(error(DotChoice{}, {"ladder"}), "run --ladder: applies to qdot dot products"));
  DotChoice bad_tol;
  bad_tol.qdot_tol = "-1";
  EXPECT_TRUE(contains(error(bad_tol, {"qdot-tol"}), "run --qdot-tol: '-1' is not a positive finite tolerance"));
  DotChoice paper;
  paper.qdot_tol = "auto";
  paper.qdot_policy = "paper";
  EXPECT_TRUE(contains(error(paper, {"qdot-tol", "qdot-policy"}), "run --qdot-policy: paper: --qdot-tol auto relies"));
  DotChoice fixed;
  fixed.dot = "fixed";
  EXPECT_TRUE(contains(error(fixed, {"dot"}), "run --dot fixed: needs --format"));
  DotChoice wide;
  wide.format = "binary64";
  EXPECT_TRUE(contains(error(wide, {"format"}), "run --format: binary64 is as precise as double"));
  DotChoice margin;
  margin.qdot_tol = "1e-8";
  margin.margin = 65;
  EXPECT_TRUE(contains(error(margin, {"qdot-tol", "qdot-margin"}), "run --qdot-margin: 65 is not in 0..64"));
  DotChoice collectives;
  collectives.collectives = 3;
  EXPECT_TRUE(contains(error(collectives, {}), "run --qdot-collectives: 3 is not 1 or 2"));
}

TEST(DotChoice, ExperimentChoosesItsOwnDots) {
  const ebla::DotSpec s = ebla::experiment_dot_spec(DotChoice{});
  EXPECT_EQ(s.sweep, ebla::decade_tolerances(-12, -3));
  EXPECT_EQ(s.automatic(ProblemUse::cg).kind, ebla::DotKind::automatic);
  DotChoice d;
  d.qdot_tol = "1e-6";
  EXPECT_TRUE(contains(error_of([&] { ebla::experiment_dot_spec(given(d, {"qdot-tol"})); }),
                       "run --qdot-tol: --experiment auto chooses the dot products itself"));
}

TEST(DotChoice, CheckRejectsABadLadderAndAMarginOnRanks) {
  DotChoice d;
  d.qdot_tol = "1e-8";
  d.ladder = "binary32,binary64";  // least precise first
  const DotChoice names = given(DotChoice{}, {});
  const ebla::DotSpec s = ebla::make_dot_spec(given(d, {"qdot-tol", "ladder"}), ProblemUse::cg);
  EXPECT_TRUE(contains(error_of([&] { ebla::check_dot_spec(s, names, 1); }), "run --ladder"));
  DotChoice m;
  m.qdot_tol = "1e-8";
  m.margin = 4;
  const ebla::DotSpec ms = ebla::make_dot_spec(given(m, {"qdot-tol", "qdot-margin"}), ProblemUse::cg);
  EXPECT_NO_THROW(ebla::check_dot_spec(ms, names, 1));
  EXPECT_TRUE(contains(error_of([&] { ebla::check_dot_spec(ms, names, 2); }), "run --qdot-margin: applies on one process"));
}

TEST(AutoStudy, SetsOfCgAndPower) {
  ebla::CgOptions base;
  base.max_iterations = 77;
  const auto cg = ebla::cg_auto_set(matrices, base);
  ASSERT_EQ(cg.size(), 5u);
  EXPECT_EQ(cg[0].name, "HB/1138_bus");
  EXPECT_EQ(cg[0].spec.matrix, matrices + "/1138_bus.mtx");
  EXPECT_TRUE(cg[0].solver.jacobi);
  EXPECT_FALSE(cg[3].solver.jacobi);
  for (const auto& c : cg) {
    EXPECT_EQ(c.solver.tolerance, 1e-8);
    EXPECT_EQ(c.solver.norm, ebla::Norm::relative);
    EXPECT_EQ(c.solver.max_iterations, 77);
    EXPECT_NO_THROW(ebla::check_problem_spec(c.spec, ProblemUse::cg)) << c.name;
  }
  const auto power = ebla::power_auto_set(matrices, ebla::PowerOptions{});
  ASSERT_EQ(power.size(), 4u);
  EXPECT_EQ(power[1].spec.seed, 3u);
  EXPECT_EQ(power[1].solver.max_iterations, 1000);
  EXPECT_EQ(power[3].spec.source, ebla::ProblemSource::matrix);
  ebla::AutoSetNames names;
  names.matrix_dir = "run --matrix-dir";
  EXPECT_TRUE(contains(error_of([&] { ebla::power_auto_set("/nonexistent", ebla::PowerOptions{}, names); }),
                       "run --matrix-dir: cannot open '/nonexistent/1138_bus.mtx'"));
}

TEST(AutoStudy, SequenceRunsExactEachToleranceThenAuto) {
  ebla::DotSpec dots = ebla::experiment_dot_spec(DotChoice{});
  dots.sweep = ebla::decade_tolerances(-6, -5);
  ebla::AutoReport r("p", "d", "s", "exact CG", "r^T r", "p^T q");
  std::vector<std::string> labels, groups;
  const ebla::AutoRun run = [&](const std::string& label, const ebla::DotPolicy& policy, double tolerance,
                                const std::string& group) {
    labels.push_back(label);
    groups.push_back(group);
    if (tolerance > 0) {
      EXPECT_EQ(policy.qdot.tolerance, tolerance);
    }
    r.add(label, ebla::SolverStatus::converged, true, 10, tolerance, ebla::DotMix{}, ebla::DotMix{});
    return std::vector<ebla::SolverEvent>(label == "auto" ? 2 : 0);
  };
  ebla::run_auto_sequence(r, dots, ProblemUse::cg, run, nullptr);
  EXPECT_EQ(labels, (std::vector<std::string>{"exact", "1e-06", "1e-05", "auto"}));
  EXPECT_EQ(groups.front(), "exact");
  EXPECT_EQ(groups.back(), "auto");
  EXPECT_EQ(r.events.size(), 2u);
  EXPECT_TRUE(r.verdict.iterations_met);
}

}  // namespace
