// Tests of the GEMM selection's throughputs and choice (ebla/kernels/gemm_profile.hpp,
// ebla::gemm_choice), from their contracts:
//
//  1. The profile's text: a round trip through text and through a file, and refusals of
//     truncated, garbage and mistyped files naming the line.
//  2. A profile's problems: another machine (naming the field), another version, stale,
//     written in the future.
//  3. The noise rule, on injected timings: agreeing repetitions are taken at once, disagreeing
//     ones measured again, and never-agreeing ones marked.
//  4. gemm_costs on a file in a temporary directory: measured and stored, then read; a corrupt
//     or foreign file replaced with a warning; no path: nothing stored.
//  5. The tie rule, on made-up costs: the tighter bound, then the fewer products, within the
//     margin; the cheaper beyond it; and the selection of binary32 over binary16 on SGEMM at
//     equal modelled cost (the first-cheapest rule chose binary16).
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_profile.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

namespace {

using ebla::GemmCandidateReport;
using ebla::GemmConfig;
using ebla::GemmEngine;
using ebla::GemmMachine;
using ebla::GemmProfile;
using ebla::GemmTiming;
using ebla::GemmTimingRule;
namespace formats = ebla::formats;

/// A directory of its own under the build's temporary directory, removed at the end.
struct TemporaryDirectory {
  std::filesystem::path path;
  TemporaryDirectory() {
    const char* base = std::getenv("TMPDIR");
    path = std::filesystem::path(base != nullptr && *base != '\0' ? base : "/tmp") /
           ("ebla_gemm_profile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TemporaryDirectory() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

/// Replaces the line starting with `key ` by `key value`.
std::string with_line(const std::string& text, const std::string& key, const std::string& value) {
  std::istringstream in(text);
  std::string out, line;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind(key + " ", 0) == 0) {
      line = key + " " + value;
      found = true;
    }
    out += line + "\n";
  }
  EXPECT_TRUE(found) << key;
  return out;
}

GemmProfile sample_profile() {
  GemmProfile p;
  p.machine = GemmMachine::here();
  p.written = ebla::unix_now();
  GemmTiming t;
  t.seconds = 1.234567e-11;
  t.repetitions = 5;
  t.fastest = 1.5e-3;
  t.median = 1.6e-3;
  t.attempts = 2;
  t.agrees = true;
  p.timings["sgemm"] = t;
  t.seconds = 2.5e-11;
  t.attempts = 1;
  p.timings["dgemm"] = t;
  t.seconds = 3e-9;
  p.timings["split"] = t;
  return p;
}

/// Expects f to throw InvalidArgument whose message contains every one of `parts`.
template <class F>
void expect_invalid(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one naming " << parts.front();
  } catch (const ebla::InvalidArgument& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// ===========================================================================================
// 1. The text

TEST(GemmProfileText, RoundTripsThroughTextAndFile) {
  const GemmProfile p = sample_profile();
  const auto same = [&](const GemmProfile& q) {
    EXPECT_EQ(q.written, p.written);
    EXPECT_EQ(ebla::machine_mismatch(p.machine, q.machine), "");
    EXPECT_EQ(q.machine.version, p.machine.version);
    ASSERT_EQ(q.timings.size(), p.timings.size());
    for (const auto& [name, t] : p.timings) {
      const GemmTiming& u = q.timings.at(name);
      EXPECT_NEAR(u.seconds, t.seconds, 1e-6 * t.seconds) << name;  // printed with 7 digits
      EXPECT_EQ(u.repetitions, t.repetitions);
      EXPECT_NEAR(u.fastest, t.fastest, 1e-6 * t.fastest);
      EXPECT_NEAR(u.median, t.median, 1e-6 * t.median);
      EXPECT_EQ(u.attempts, t.attempts);
      EXPECT_TRUE(u.agrees);
    }
  };
  same(ebla::parse_gemm_profile(ebla::to_text(p)));
  TemporaryDirectory dir;
  const std::string path = (dir.path / "sub" / "profile").string();  // its directory is created
  ebla::write_gemm_profile(p, path);
  same(ebla::read_gemm_profile(path));
  EXPECT_EQ(read_text(path), ebla::to_text(p));
  // nothing left beside it
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path / "sub")) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
}

TEST(GemmProfileText, RefusesCorruptTextNamingTheLine) {
  const std::string good = ebla::to_text(sample_profile());
  ASSERT_NO_THROW(ebla::parse_gemm_profile(good));
  // truncated: every proper prefix that ends a line lacks `end`
  for (std::size_t at = good.find('\n'); at + 1 < good.size(); at = good.find('\n', at + 1))
    expect_invalid([&] { ebla::parse_gemm_profile(good.substr(0, at + 1)); }, {"ebla::parse_gemm_profile"});
  expect_invalid([&] { ebla::parse_gemm_profile(good.substr(0, good.size() - 4)); }, {"truncated"});
  expect_invalid([&] { ebla::parse_gemm_profile(""); }, {"not an ebla GEMM profile"});
  expect_invalid([&] { ebla::parse_gemm_profile("\x7f" "ELF garbage\n\x01\x02\n"); }, {"line 1", "not an ebla GEMM profile"});
  expect_invalid([&] { ebla::parse_gemm_profile(with_line(good, "cores", "two")); }, {"cores", "'two' is not a whole number"});
  expect_invalid([&] { ebla::parse_gemm_profile(with_line(good, "written", "yesterday")); }, {"written", "yesterday"});
  expect_invalid([&] { ebla::parse_gemm_profile(with_line(good, "onednn_bf16", "maybe")); }, {"onednn_bf16", "maybe"});
  expect_invalid([&] { ebla::parse_gemm_profile(with_line(good, "timing dgemm", "fast")); }, {"timing"});
  expect_invalid(
      [&] { ebla::parse_gemm_profile(with_line(good, "timing dgemm", "-1e-11 repetitions 5 fastest 1 median 1 attempts 1")); },
      {"not positive"});
  expect_invalid(
      [&] { ebla::parse_gemm_profile(with_line(good, "timing dgemm", "1e-11 repetitions five fastest 1 median 1 attempts 1")); },
      {"repetitions", "five"});
  expect_invalid([&] { ebla::parse_gemm_profile(good + "cores 3\n"); }, {"after 'end'"});
  expect_invalid([&] { ebla::parse_gemm_profile(with_line(good, "isa", "x\ncolour blue")); }, {"unknown key 'colour'"});
  expect_invalid([&] { ebla::parse_gemm_profile(with_line(good, "isa", "x\ncores 1")); }, {"'cores' repeated"});
  expect_invalid([&] { ebla::read_gemm_profile("/nonexistent/ebla/profile"); }, {"/nonexistent/ebla/profile", "cannot be read"});
}

// ===========================================================================================
// 2. Problems

TEST(GemmProfileProblem, NamesAnotherMachineVersionAndAge) {
  const GemmMachine here = GemmMachine::here();
  const std::int64_t now = ebla::unix_now();
  GemmProfile p = sample_profile();
  p.written = now - 100;
  EXPECT_EQ(ebla::gemm_profile_problem(p, here, now), "");
  GemmProfile other = p;
  other.machine.cpu = "Imaginary CPU 9000";
  const std::string mismatch = ebla::gemm_profile_problem(other, here, now);
  EXPECT_NE(mismatch.find("another machine (cpu: '" + here.cpu + "' here, 'Imaginary CPU 9000' in the profile)"),
            std::string::npos)
      << mismatch;
  other = p;
  other.machine.threads = here.threads + 1;
  other.machine.isa = "avx512_fp16 amx_bf16";
  const std::string two = ebla::machine_mismatch(here, other.machine);
  EXPECT_NE(two.find("threads: '"), std::string::npos) << two;
  EXPECT_NE(two.find("; isa: '"), std::string::npos) << two;
  other = p;
  other.machine.version = "0.0.0";
  EXPECT_NE(ebla::gemm_profile_problem(other, here, now).find("written by ebla 0.0.0"), std::string::npos);
  other = p;
  other.written = now - 31 * 86400;
  EXPECT_NE(ebla::gemm_profile_problem(other, here, now).find("stale: written 31 days ago, more than 30 days"),
            std::string::npos);
  other.written = now - 29 * 86400;
  EXPECT_EQ(ebla::gemm_profile_problem(other, here, now), "");
  EXPECT_NE(ebla::gemm_profile_problem(other, here, now, 86400).find("stale"), std::string::npos);
  other.written = now + 3600;
  EXPECT_NE(ebla::gemm_profile_problem(other, here, now).find("in the future"), std::string::npos);
}

// ===========================================================================================
// 3. The noise rule

/// A run that returns the given seconds in turn (the first for the warm-up call).
struct Injected {
  std::vector<double> times;
  std::size_t calls = 0;
  double operator()() { return times.at(calls++); }
};

TEST(GemmTimingNoise, AgreeingRepetitionsAreTakenAtOnce) {
  Injected run{{9.0, 1.0, 1.2, 1.1, 1.4, 1.3}};  // warm-up 9, then median 1.2 <= 1.5 * 1.0
  const GemmTiming t = ebla::measure_timing(std::ref(run), 4.0);
  EXPECT_TRUE(t.agrees);
  EXPECT_EQ(t.attempts, 1);
  EXPECT_EQ(t.repetitions, 5);
  EXPECT_EQ(t.fastest, 1.0);
  EXPECT_EQ(t.median, 1.2);
  EXPECT_EQ(t.seconds, 0.25);
  EXPECT_EQ(run.calls, 6u);
}

TEST(GemmTimingNoise, DisagreeingRepetitionsAreMeasuredAgain) {
  // attempt 1: median 3.0 > 1.5 * 1.0 (a busy machine); attempt 2 agrees
  Injected run{{5.0, 1.0, 3.0, 3.5, 2.9, 4.0, 2.0, 2.1, 2.2, 2.0, 2.4}};
  const GemmTiming t = ebla::measure_timing(std::ref(run), 1.0);
  EXPECT_TRUE(t.agrees);
  EXPECT_EQ(t.attempts, 2);
  EXPECT_EQ(t.fastest, 2.0);
  EXPECT_EQ(t.median, 2.1);
  EXPECT_EQ(run.calls, 11u);
}

TEST(GemmTimingNoise, NeverAgreeingRepetitionsAreMarkedAfterTheLastAttempt) {
  std::vector<double> times = {1.0};
  for (int a = 0; a < 3; ++a)
    for (double v : {1.0, 2.0, 2.0, 5.0, 6.0}) times.push_back(v * (a + 1));  // median 2 x fastest
  Injected run{times};
  const GemmTiming t = ebla::measure_timing(std::ref(run), 2.0);
  EXPECT_FALSE(t.agrees);
  EXPECT_EQ(t.attempts, 3);
  EXPECT_EQ(run.calls, 16u);
  EXPECT_EQ(t.fastest, 3.0);  // the last attempt's
  EXPECT_EQ(t.seconds, 1.5);
  // the same timings agree under a looser rule, and the boundary itself agrees
  Injected loose{times};
  EXPECT_TRUE(ebla::measure_timing(std::ref(loose), 2.0, GemmTimingRule{5, 2.0, 3}).agrees);
  EXPECT_EQ(loose.calls, 6u);
  // an even count takes the mean of the middle two: (1 + 2) / 2 = 1.5 agrees at 1.5
  Injected even{{1.0, 1.0, 1.0, 2.0, 2.0}};
  EXPECT_TRUE(ebla::measure_timing(std::ref(even), 1.0, GemmTimingRule{4, 1.5, 1}).agrees);
  expect_invalid([] { ebla::measure_timing([] { return 1.0; }, 1.0, GemmTimingRule{0, 1.5, 3}); },
                 {"ebla::measure_timing", "0 repetitions"});
  expect_invalid([] { ebla::measure_timing([] { return 1.0; }, 1.0, GemmTimingRule{5, 0.5, 3}); }, {"spread"});
  expect_invalid([] { ebla::measure_timing([] { return 1.0; }, 0.0); }, {"work"});
}

// ===========================================================================================
// 4. gemm_costs

const GemmTimingRule lenient{2, 1e6, 1};  // every measurement agrees: no flaky test on a busy machine

TEST(GemmCosts, MeasuresStoresAndThenReadsTheProfile) {
  TemporaryDirectory dir;
  const std::string path = (dir.path / "ebla" / "gemm-profile").string();
  const ebla::GemmCosts first = ebla::gemm_costs(path, false, lenient);
  EXPECT_FALSE(first.read);
  EXPECT_TRUE(first.stored);
  EXPECT_TRUE(first.warnings.empty());
  EXPECT_EQ(first.measured, ebla::gemm_profile_entries());
  const GemmProfile stored = ebla::read_gemm_profile(path);
  EXPECT_EQ(stored.timings.size(), ebla::gemm_profile_entries().size());
  EXPECT_EQ(ebla::gemm_profile_problem(stored, GemmMachine::here(), ebla::unix_now()), "");
  const ebla::GemmCosts second = ebla::gemm_costs(path, false, lenient);
  EXPECT_TRUE(second.read);
  EXPECT_FALSE(second.stored);
  EXPECT_TRUE(second.measured.empty());
  EXPECT_LE(second.age, 60);
  // the model is the stored one (to the printed digits), not a new measurement
  EXPECT_NEAR(second.model.sgemm, stored.timings.at("sgemm").seconds, 0);
  EXPECT_NEAR(second.model.sgemm, first.model.sgemm, 1e-6 * first.model.sgemm);
  EXPECT_NEAR(second.model.split, first.model.split, 1e-6 * first.model.split);
  // an entry missing from the file is measured and added; the file keeps its age
  GemmProfile partial = stored;
  partial.timings.erase("split");
  partial.written -= 1000;
  ebla::write_gemm_profile(partial, path);
  const ebla::GemmCosts third = ebla::gemm_costs(path, false, lenient);
  EXPECT_TRUE(third.read);
  EXPECT_EQ(third.measured, std::vector<std::string>{"split"});
  EXPECT_TRUE(third.stored);
  EXPECT_EQ(ebla::read_gemm_profile(path).written, partial.written);
  EXPECT_EQ(ebla::read_gemm_profile(path).timings.count("split"), 1u);
}

TEST(GemmCosts, ReplacesACorruptOrForeignProfileWithAWarning) {
  TemporaryDirectory dir;
  const std::string path = (dir.path / "gemm-profile").string();
  ASSERT_TRUE(ebla::gemm_costs(path, false, lenient).stored);
  const std::string good = read_text(path);
  struct Case {
    std::string text, warning;
  };
  const std::vector<Case> cases = {
      {good.substr(0, good.size() / 2), "corrupt"},
      {"garbage\n", "corrupt"},
      {with_line(good, "cores", "many"), "corrupt"},
      {with_line(good, "cpu", "Imaginary CPU 9000"), "another machine (cpu: "},
      {with_line(good, "written", std::to_string(ebla::unix_now() - 40 * 86400)), "stale"},
      {with_line(good, "version", "0.0.0"), "written by ebla 0.0.0"},
  };
  for (const Case& c : cases) {
    write_text(path, c.text);
    const ebla::GemmCosts costs = ebla::gemm_costs(path, false, lenient);
    EXPECT_FALSE(costs.read) << c.warning;
    ASSERT_EQ(costs.warnings.size(), 1u) << c.warning;
    EXPECT_NE(costs.warnings[0].find("profile " + path + " not used: " + c.warning), std::string::npos)
        << costs.warnings[0];
    EXPECT_TRUE(costs.stored);
    EXPECT_EQ(costs.measured, ebla::gemm_profile_entries());
    // replaced by a usable profile of this machine
    const GemmProfile now = ebla::read_gemm_profile(path);
    EXPECT_EQ(ebla::gemm_profile_problem(now, GemmMachine::here(), ebla::unix_now()), "") << c.warning;
  }
}

TEST(GemmCosts, WithoutAPathMeasuresInMemoryAndAnUnwritableOneWarns) {
  const ebla::GemmCosts costs = ebla::gemm_costs("", false, lenient);
  EXPECT_FALSE(costs.read);
  EXPECT_FALSE(costs.stored);
  EXPECT_TRUE(costs.warnings.empty());
  EXPECT_GT(costs.model.sgemm, 0);
  EXPECT_GT(costs.model.dgemm, 0);
  TemporaryDirectory dir;
  write_text((dir.path / "file").string(), "a file, not a directory\n");
  const std::string path = (dir.path / "file" / "gemm-profile").string();
  const ebla::GemmCosts unwritable = ebla::gemm_costs(path, false, lenient);
  EXPECT_FALSE(unwritable.stored);
  ASSERT_EQ(unwritable.warnings.size(), 1u);
  EXPECT_NE(unwritable.warnings[0].find("not stored"), std::string::npos) << unwritable.warnings[0];
}

TEST(GemmCosts, DefaultPathFollowsTheEnvironment) {
  const auto keep = [](const char* name) {
    const char* v = std::getenv(name);
    return std::make_pair(v != nullptr, v != nullptr ? std::string(v) : std::string());
  };
  const auto profile = keep("EBLA_GEMM_PROFILE"), xdg = keep("XDG_CACHE_HOME"), home = keep("HOME");
  ::setenv("EBLA_GEMM_PROFILE", "/p/file", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(ebla::default_gemm_profile_path(), "/p/file");
  ::unsetenv("EBLA_GEMM_PROFILE");
  EXPECT_EQ(ebla::default_gemm_profile_path(), "/x/ebla/gemm-profile");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // the XDG specification: ignored unless absolute
  EXPECT_EQ(ebla::default_gemm_profile_path(), "/h/.cache/ebla/gemm-profile");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  EXPECT_EQ(ebla::default_gemm_profile_path(), "");
  const auto restore = [](const char* name, const std::pair<bool, std::string>& v) {
    if (v.first) ::setenv(name, v.second.c_str(), 1);
    else ::unsetenv(name);
  };
  restore("EBLA_GEMM_PROFILE", profile);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

// ===========================================================================================
// 5. Ties

GemmCandidateReport report(const ebla::Format& f, int words, double bound, double seconds) {
  GemmCandidateReport r;
  r.config.input = f;
  r.config.words = words;
  r.config.engine = GemmEngine::sgemm;
  r.relative_bound = bound;
  r.seconds = seconds;
  return r;
}

TEST(GemmChoice, TiesGoToTheTighterBoundThenTheFewerProducts) {
  // equal cost: the tighter bound, wherever it stands in the list
  std::vector<GemmCandidateReport> c = {report(formats::binary16(), 1, 4.3e-4, 0.150),
                                        report(formats::binary32(), 1, 1.2e-4, 0.150)};
  EXPECT_EQ(ebla::gemm_choice(c, 1e-2), 1u);
  std::swap(c[0], c[1]);
  EXPECT_EQ(ebla::gemm_choice(c, 1e-2), 0u);
  // within the margin (1% dearer): still the tighter bound; beyond it (5%): the cheaper
  c = {report(formats::binary16(), 1, 4.3e-4, 0.150), report(formats::binary32(), 1, 1.2e-4, 0.1515)};
  EXPECT_EQ(ebla::gemm_choice(c, 1e-2), 1u);
  EXPECT_EQ(ebla::gemm_choice(c, 1e-2, 0.0), 0u);
  c[1].seconds = 0.1575;
  EXPECT_EQ(ebla::gemm_choice(c, 1e-2), 0u);
  // equal cost and bound: the fewer products (p = 1 before p = 2)
  c = {report(formats::bfloat16(), 2, 1e-5, 0.3), report(formats::bfloat16(), 1, 1e-5, 0.3)};
  EXPECT_EQ(ebla::gemm_choice(c, 1e-4), 1u);
  // a cheaper candidate that misses the tolerance is out; with a loose one it wins outright
  c = {report(formats::bfloat16(), 1, 1e-2, 0.01), report(formats::binary16(), 1, 4e-4, 0.15),
       report(formats::binary32(), 1, 1e-4, 0.15)};
  EXPECT_EQ(ebla::gemm_choice(c, 1e-3), 2u);
  EXPECT_EQ(ebla::gemm_choice(c, 1e-1), 0u);  // the cheapest, far below the others
  // none meets: the smallest bound, then the fewer products
  c = {report(formats::binary16(), 2, 1e-6, 0.3), report(formats::binary16(), 1, 1e-6, 0.1),
       report(formats::binary16(), 3, 1e-7, 0.6)};
  EXPECT_EQ(ebla::gemm_choice(c, 1e-9), 2u);
  c[2].relative_bound = 1e-6;
  EXPECT_EQ(ebla::gemm_choice(c, 1e-9), 1u);
  expect_invalid([] { ebla::gemm_choice({}, 1e-3); }, {"ebla::gemm_choice", "empty"});
  expect_invalid([&] { ebla::gemm_choice(c, 1e-3, -0.1); }, {"tie margin"});
}

TEST(GemmChoice, SelectionPrefersBinary32OverBinary16OnSgemmAtEqualCost) {
  // 64 x 64 products of U(-1, 1) entries; made-up throughputs: the SGEMM candidates cost what
  // binary16 x1 and binary32 x1 share (one product, one word), and oneDNN and DGEMM are dear
  std::mt19937_64 rng(38);
  std::uniform_real_distribution<double> u(-1, 1);
  ebla::HostMatrix A("A", 64, 64), B("B", 64, 64);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      A(i, j) = u(rng);
      B(i, j) = u(rng);
    }
  ebla::GemmCostModel cost;
  cost.sgemm = 1e-11;
  cost.dgemm = 1e-9;
  cost.onednn_bf16 = 1e-9;
  cost.emulated = 1e-6;
  cost.split = 1e-9;
  ebla::GemmOptions opt;
  opt.tolerance = 1e-2;
  opt.cost = cost;
  const ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
  std::size_t b16 = plan.candidates.size(), b32 = b16;
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const std::string name = ebla::describe(plan.candidates[i].config);
    if (name == "binary16 x1 on sgemm") b16 = i;
    if (name == "binary32 x1 on sgemm") b32 = i;
  }
  ASSERT_LT(b16, plan.candidates.size());
  ASSERT_LT(b32, plan.candidates.size());
  const GemmCandidateReport& h = plan.candidates[b16];
  const GemmCandidateReport& s = plan.candidates[b32];
  EXPECT_EQ(h.seconds, s.seconds);
  EXPECT_LT(s.relative_bound, h.relative_bound);
  EXPECT_LE(h.relative_bound, opt.tolerance);
  // the first strictly cheapest candidate meeting the tolerance, the rule before ties: binary16
  std::size_t first_cheapest = plan.candidates.size();
  for (std::size_t i = 0; i < plan.candidates.size(); ++i)
    if (plan.candidates[i].relative_bound <= opt.tolerance &&
        (first_cheapest == plan.candidates.size() || plan.candidates[i].seconds < plan.candidates[first_cheapest].seconds))
      first_cheapest = i;
  ASSERT_LT(first_cheapest, plan.candidates.size());
  EXPECT_NE(first_cheapest, b32);  // binary16 x1 (or bfloat16 x1 where oneDNN does not run)
  EXPECT_EQ(plan.candidates[first_cheapest].seconds, s.seconds);
  EXPECT_GT(plan.candidates[first_cheapest].relative_bound, s.relative_bound);
  EXPECT_TRUE(plan.meets_tolerance);
  EXPECT_EQ(ebla::describe(plan.config), "binary32 x1 on sgemm");
  EXPECT_EQ(plan.relative_bound, s.relative_bound);
}

}  // namespace
