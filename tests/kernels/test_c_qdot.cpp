// The BLAS-shaped C calls of <ebla/qdot.h> against the C++ API:
//  - ebla_dqdot / ebla_sqdot with increments (positive, negative as BLAS defines them, zero)
//    give the bits of ebla::qdot on the same elements gathered in BLAS order, and their
//    bound holds against a reference sum in __float128 (each product of two doubles is
//    exact there, and the sum of n of them is off by at most n 2^-112 |x|^T|y|, far below
//    any bound checked);
//  - options by name (policy, ladder) are those of the C++ options;
//  - a plan selected through the C API computes on other strided vectors with the bits of
//    ebla::qdot_compute under the C++ plan;
//  - bad input: NaN, EBLA_INVALID_ARGUMENT, and a message naming the function and value.
#include <ebla/ebla.h>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_stored.hpp>
#include <ebla/qdot.h>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <type_traits>
#include <vector>

namespace {

template <class T>
std::uint64_t bits(T v) {
  const double d = static_cast<double>(v);
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// n values over a wide range of exponents, both signs (distribution B of seed 002 in spirit:
// uniform significands times 2^k, k uniform in [-t, t])
template <class T>
std::vector<T> wide(std::mt19937_64& gen, std::size_t n, int t) {
  std::uniform_real_distribution<double> m(0.5, 1.0);
  std::uniform_int_distribution<int> k(-t, t);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>((gen() % 2 ? -1 : 1) * std::ldexp(m(gen), k(gen)));
  return v;
}

// The array that BLAS reads as `logical` with increment inc: element i at i inc (inc >= 0)
// or (n - 1 - i) |inc| (inc < 0); the other slots hold NaN, which no correct read sees.
template <class T>
std::vector<T> strided(const std::vector<T>& logical, std::ptrdiff_t inc) {
  const std::size_t n = logical.size();
  if (inc == 0) return {logical.front()};
  const std::size_t step = static_cast<std::size_t>(inc < 0 ? -inc : inc);
  std::vector<T> a((n - 1) * step + 1, std::numeric_limits<T>::quiet_NaN());
  for (std::size_t i = 0; i < n; ++i) a[(inc > 0 ? i : n - 1 - i) * step] = logical[i];
  return a;
}

template <class T>
__float128 reference(const std::vector<T>& x, const std::vector<T>& y) {
  __float128 s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += static_cast<__float128>(x[i]) * static_cast<__float128>(y[i]);
  return s;
}

template <class T>
bool within(const std::vector<T>& x, const std::vector<T>& y, double value, double bound) {
  const __float128 err = static_cast<__float128>(value) - reference(x, y);
  return (err < 0 ? -err : err) <= static_cast<__float128>(bound);
}

template <class T>
double c_qdot(std::size_t n, const T* x, std::ptrdiff_t incx, const T* y, std::ptrdiff_t incy,
              const ebla_qdot_options* o, ebla_qdot_info* info) {
  if constexpr (std::is_same<T, double>::value) return ebla_dqdot(n, x, incx, y, incy, o, info);
  else return ebla_sqdot(n, x, incx, y, incy, o, info);
}

template <class T>
void strided_calls(std::uint64_t seed, int& cases) {
  std::mt19937_64 gen(seed);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{20000}})
    for (std::ptrdiff_t incx : {1, 2, -1, -3})
      for (std::ptrdiff_t incy : {1, 3, -2}) {
        const std::vector<T> x = wide<T>(gen, n, 9), y = wide<T>(gen, n, 9);
        const std::vector<T> sx = strided(x, incx), sy = strided(y, incy);
        ebla_qdot_options o;
        ebla_qdot_options_init(&o);
        o.tolerance = n % 2 ? 1e-4 : 1e-8;
        ebla_qdot_info info;
        const double v = c_qdot(n, sx.data(), incx, sy.data(), incy, &o, &info);
        ebla::QdotOptions q;
        q.tolerance = o.tolerance;
        const ebla::QdotResult r = ebla::qdot(x.data(), y.data(), n, q);
        const std::string what = "n " + std::to_string(n) + ", incx " + std::to_string(incx) + ", incy " +
                                 std::to_string(incy);
        ++cases;
        EXPECT_EQ(info.status, EBLA_OK) << what << ": " << ebla_last_error();
        EXPECT_EQ(bits(v), bits(r.value)) << what;
        EXPECT_EQ(bits(info.bound), bits(r.bound)) << what;
        EXPECT_TRUE(within(x, y, v, info.bound)) << what;
        std::size_t counted = info.zeros;
        for (std::size_t c : info.count) counted += c;
        EXPECT_EQ(counted, n) << what;
      }
}

}  // namespace

TEST(CQdot, StridedCallsGiveTheBitsOfTheCppQdotOnTheGatheredElements) {
  int cases = 0;
  strided_calls<double>(700, cases);
  strided_calls<float>(701, cases);
  EXPECT_EQ(cases, 96);
}

TEST(CQdot, IncrementOneGivesTheBitsOfEblaQdot) {
  std::mt19937_64 gen(702);
  const std::vector<double> x = wide<double>(gen, 5000, 20), y = wide<double>(gen, 5000, 20);
  ebla_qdot_info a, b;
  ebla_qdot_options o;
  ebla_qdot_options_init(&o);
  o.tolerance = 1e-6;
  EXPECT_EQ(bits(ebla_dqdot(x.size(), x.data(), 1, y.data(), 1, &o, &a)),
            bits(ebla_qdot(x.data(), y.data(), x.size(), 1e-6, &b)));
  EXPECT_EQ(bits(a.bound), bits(b.bound));
  // NULL options: the defaults (tolerance 1e-8)
  ebla_qdot_info d;
  ebla::QdotOptions q;
  EXPECT_EQ(q.tolerance, 1e-8);
  EXPECT_EQ(bits(ebla_dqdot(x.size(), x.data(), 1, y.data(), 1, nullptr, &d)),
            bits(ebla::qdot(x.data(), y.data(), x.size(), q).value));
}

// BLAS's incx = 0: every element is x[0]
TEST(CQdot, ZeroIncrementRepeatsTheFirstElement) {
  std::mt19937_64 gen(703);
  const std::vector<double> y = wide<double>(gen, 300, 9);
  const double x0 = 0.75;
  const std::vector<double> x(y.size(), x0);
  ebla_qdot_info info;
  const double v = ebla_dqdot(y.size(), &x0, 0, y.data(), 1, nullptr, &info);
  EXPECT_EQ(bits(v), bits(ebla::qdot(x.data(), y.data(), y.size(), ebla::QdotOptions{}).value));
  EXPECT_TRUE(within(x, y, v, info.bound));
}

TEST(CQdot, PolicyAndLadderByNameAreTheCppOptions) {
  std::mt19937_64 gen(704);
  const std::vector<double> x = wide<double>(gen, 4000, 12), y = wide<double>(gen, 4000, 12);
  for (const char* policy : {"budget", "paper"})
    for (const char* ladder : {"binary64,binary32,binary16,perforate", "binary64,bfloat16,fp8_e4m3"}) {
      ebla_qdot_options o;
      ebla_qdot_options_init(&o);
      o.tolerance = 1e-5;
      o.policy = policy;
      o.ladder = ladder;
      ebla_qdot_info info;
      const double v = ebla_dqdot(x.size(), x.data(), -1, y.data(), -1, &o, &info);
      ebla::QdotOptions q;
      q.tolerance = 1e-5;
      q.policy = ebla::qdot_policy_by_name(policy);
      q.ladder = ebla::qdot_ladder_by_names(ladder);
      // increments -1 on both: the arrays read backwards, element i = x[n - 1 - i]
      const std::vector<double> rx(x.rbegin(), x.rend()), ry(y.rbegin(), y.rend());
      const ebla::QdotResult r = ebla::qdot(rx.data(), ry.data(), rx.size(), q);
      EXPECT_EQ(bits(v), bits(r.value)) << policy << ", " << ladder;
      EXPECT_TRUE(within(x, y, v, info.bound)) << policy << ", " << ladder;
    }
}

TEST(CQdot, APlanSelectedFromCComputesOtherStridedVectorsAsTheCppPlan) {
  std::mt19937_64 gen(705);
  const std::size_t n = 6000;
  const std::vector<double> x = wide<double>(gen, n, 9), y = wide<double>(gen, n, 9);
  const std::vector<double> x2 = wide<double>(gen, n, 9), y2 = wide<double>(gen, n, 9);
  ebla_qdot_options o;
  ebla_qdot_options_init(&o);
  o.tolerance = 1e-6;
  ebla_qdot_plan* plan = nullptr;
  const std::vector<double> sx = strided(x, 2);
  ASSERT_EQ(ebla_dqdot_select(n, sx.data(), 2, y.data(), 1, &o, &plan), EBLA_OK) << ebla_last_error();
  ASSERT_NE(plan, nullptr);
  ebla::QdotOptions q;
  q.tolerance = 1e-6;
  const ebla::QdotPlan cpp = ebla::qdot_select(x.data(), y.data(), n, q);
  const std::vector<double> sy2 = strided(y2, -3);
  ebla_qdot_info info;
  const double v = ebla_dqdot_compute(plan, n, x2.data(), 1, sy2.data(), -3, &info);
  const ebla::QdotResult r = ebla::qdot_compute(x2.data(), y2.data(), n, cpp);
  EXPECT_EQ(info.status, EBLA_OK);
  EXPECT_EQ(bits(v), bits(r.value));
  EXPECT_EQ(bits(info.bound), bits(r.bound));
  EXPECT_TRUE(within(x2, y2, v, info.bound));
  // the same plan from other threads at once: every call the same bits
  std::vector<double> values(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < values.size(); ++k)
    threads.emplace_back([&, k] { values[k] = ebla_dqdot_compute(plan, n, x2.data(), 1, sy2.data(), -3, nullptr); });
  for (auto& t : threads) t.join();
  for (double w : values) EXPECT_EQ(bits(w), bits(v));
  // a plan of doubles does not compute floats
  const std::vector<float> f(n, 1.0f);
  EXPECT_TRUE(std::isnan(ebla_sqdot_compute(plan, n, f.data(), 1, f.data(), 1, &info)));
  EXPECT_EQ(info.status, EBLA_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ebla_last_error()).find("ebla_sqdot_compute"), std::string::npos) << ebla_last_error();
  ebla_qdot_plan_destroy(plan);
  ebla_qdot_plan_destroy(nullptr);
  // float plans
  ebla_qdot_plan* fplan = nullptr;
  ASSERT_EQ(ebla_sqdot_select(n, f.data(), 1, f.data(), -1, &o, &fplan), EBLA_OK) << ebla_last_error();
  EXPECT_EQ(bits(ebla_sqdot_compute(fplan, n, f.data(), 1, f.data(), 1, &info)), bits(static_cast<double>(n)));
  ebla_qdot_plan_destroy(fplan);
}

TEST(CQdot, BadInputGivesNanTheStatusAndAMessageNamingFunctionAndValue) {
  const std::vector<double> x = {1.0, 2.0, 3.0}, y = {4.0, 5.0, 6.0};
  ebla_qdot_info info;
  ebla_qdot_options o;
  ebla_qdot_options_init(&o);
  auto expect_bad = [&](double v, const std::vector<std::string>& parts) {
    EXPECT_TRUE(std::isnan(v));
    EXPECT_EQ(info.status, EBLA_INVALID_ARGUMENT);
    const std::string what = ebla_last_error();
    for (const auto& p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  };
  o.tolerance = -1;
  expect_bad(ebla_dqdot(3, x.data(), 1, y.data(), 1, &o, &info), {"ebla_dqdot", "tolerance"});
  ebla_qdot_options_init(&o);
  o.policy = "budgte";
  expect_bad(ebla_dqdot(3, x.data(), 1, y.data(), 1, &o, &info), {"ebla_dqdot", "budgte"});
  ebla_qdot_options_init(&o);
  o.ladder = "binary64,binary33";
  expect_bad(ebla_sqdot(0, nullptr, 1, nullptr, 1, &o, &info), {"ebla_sqdot", "binary33"});
  expect_bad(ebla_dqdot(3, nullptr, 2, y.data(), 1, nullptr, &info), {"ebla_dqdot", "x is null"});
  // n elements |inc| apart that run past the end of the address space
  expect_bad(ebla_dqdot(std::size_t{1} << 40, x.data(), 1, y.data(), -(std::ptrdiff_t{1} << 30), nullptr, &info),
             {"ebla_dqdot", "y: n = 1099511627776"});
  expect_bad(ebla_dqdot(static_cast<std::size_t>(-1), x.data(), 1, y.data(), 1, nullptr, &info),
             {"ebla_dqdot", "more elements"});
  ebla_qdot_plan* plan = reinterpret_cast<ebla_qdot_plan*>(&o);  // must be overwritten with NULL
  EXPECT_EQ(ebla_dqdot_select(3, x.data(), 1, y.data(), 1, &o, nullptr), EBLA_INVALID_ARGUMENT);
  o.tolerance = 0;
  EXPECT_EQ(ebla_dqdot_select(3, x.data(), 1, y.data(), 1, &o, &plan), EBLA_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  expect_bad(ebla_dqdot_compute(nullptr, 3, x.data(), 1, y.data(), 1, &info), {"ebla_dqdot_compute", "plan is null"});
}

// A tolerance of 4 or more lets the budget policy perforate every product: the C++ default
// (QdotOptions::perforate_all) then returns exactly 0, with nothing computed. The C calls
// compute the top bin instead: a nonzero value within the certified bound, the flag set,
// the bits of the C++ call with perforate_all = false. r^T r of a positive r and x^T y of
// mixed signs, budget and paper policies.
TEST(CQdot, NoDotProductComesBackZeroFromEveryProductPerforated) {
  std::mt19937_64 gen(706);
  const std::size_t n = 3000;
  std::vector<double> r = wide<double>(gen, n, 4);
  for (auto& v : r) v = std::fabs(v);
  const std::vector<double> x = wide<double>(gen, n, 4), y = wide<double>(gen, n, 4);
  int guarded = 0;
  const std::pair<const std::vector<double>*, const std::vector<double>*> pairs[] = {{&r, &r}, {&x, &y}};
  for (const auto& [a, b] : pairs)
    for (const char* policy : {"budget", "paper"})
      for (double tol : {1e-8, 1e0, 1e2, 1e6}) {
        const std::string what = std::string(policy) + ", tolerance " + std::to_string(tol);
        ebla::QdotOptions q;
        q.tolerance = tol;
        q.policy = ebla::qdot_policy_by_name(policy);
        const ebla::QdotResult plain = ebla::qdot(a->data(), b->data(), n, q);
        q.perforate_all = false;
        const ebla::QdotResult kept = ebla::qdot(a->data(), b->data(), n, q);
        ebla_qdot_options o;
        ebla_qdot_options_init(&o);
        o.tolerance = tol;
        o.policy = policy;
        ebla_qdot_info info;
        const double v = ebla_dqdot(n, a->data(), 1, b->data(), 1, &o, &info);
        EXPECT_EQ(bits(v), bits(kept.value)) << what;
        EXPECT_EQ(info.kept_top_bin, kept.stats.kept_top_bin ? 1 : 0) << what;
        EXPECT_TRUE(within(*a, *b, v, info.bound)) << what;
        const bool all_perforated = plain.stats.count_per_level.back() == n;
        EXPECT_EQ(kept.stats.kept_top_bin, all_perforated) << what;
        if (all_perforated) {
          ++guarded;
          EXPECT_EQ(plain.value, 0.0) << what;
          EXPECT_NE(v, 0.0) << what;
          EXPECT_LT(info.count[3], n) << what;
        } else {
          EXPECT_EQ(bits(v), bits(plain.value)) << what;
        }
      }
  EXPECT_GE(guarded, 4);  // 1e2 and 1e6 perforate everything under the budget policy
  // ebla_qdot too
  ebla_qdot_info info;
  EXPECT_GT(ebla_qdot(r.data(), r.data(), n, 1e2, &info), 0.0);
  EXPECT_EQ(info.kept_top_bin, 1);
}

namespace {

// The C call on the constant vector c (increment 0) against ebla::qdot on the contiguous
// copy of it: value, bound and counts, bit for bit; and the plan of the C API computing on
// the same vectors gives the bits of ebla::qdot_compute under the C++ plan.
template <class T>
void constant_against_copy(std::size_t n, T c, const std::vector<T>& y, std::ptrdiff_t incy, bool x_constant,
                           double tolerance) {
  const std::vector<T> copy(n, c);
  const std::vector<T> sy = strided(y, incy);
  ebla_qdot_options o;
  ebla_qdot_options_init(&o);
  o.tolerance = tolerance;
  ebla_qdot_info info;
  const double v = x_constant ? c_qdot(n, &c, 0, sy.data(), incy, &o, &info) : c_qdot(n, sy.data(), incy, &c, 0, &o, &info);
  ebla::QdotOptions q;
  q.tolerance = tolerance;
  q.perforate_all = false;
  const ebla::QdotResult r = x_constant ? ebla::qdot(copy.data(), y.data(), n, q) : ebla::qdot(y.data(), copy.data(), n, q);
  const std::string what = std::string(x_constant ? "x" : "y") + " constant, n " + std::to_string(n) + ", incy " +
                           std::to_string(incy) + ", tolerance " + std::to_string(tolerance);
  ASSERT_EQ(info.status, EBLA_OK) << what << ": " << ebla_last_error();
  EXPECT_EQ(bits(v), bits(r.value)) << what;
  EXPECT_EQ(bits(info.bound), bits(r.bound)) << what;
  for (std::size_t l = 0; l < 4 && l < r.stats.count_per_level.size(); ++l)
    EXPECT_EQ(info.count[l], r.stats.count_per_level[l]) << what << ", level " << l;
  EXPECT_EQ(info.zeros, r.stats.zeros) << what;
  ebla_qdot_plan* plan = nullptr;
  ebla_qdot_info computed;
  double w;
  if constexpr (std::is_same<T, double>::value) {
    ASSERT_EQ(ebla_dqdot_select(n, &c, 0, sy.data(), incy, &o, &plan), EBLA_OK) << what << ": " << ebla_last_error();
    w = ebla_dqdot_compute(plan, n, &c, 0, sy.data(), incy, &computed);
  } else {
    ASSERT_EQ(ebla_sqdot_select(n, &c, 0, sy.data(), incy, &o, &plan), EBLA_OK) << what << ": " << ebla_last_error();
    w = ebla_sqdot_compute(plan, n, &c, 0, sy.data(), incy, &computed);
  }
  ebla_qdot_plan_destroy(plan);
  const ebla::QdotResult rc = ebla::qdot_compute(copy.data(), y.data(), n, ebla::qdot_select(copy.data(), y.data(), n, q));
  EXPECT_EQ(bits(w), bits(rc.value)) << what << " (plan)";
  EXPECT_EQ(bits(computed.bound), bits(rc.bound)) << what << " (plan)";
}

// The peak resident memory of the process, in bytes.
double peak_resident_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024;  // Linux: KiB
}

}  // namespace

// BLAS increment 0: every element is x[0]. The C calls read the constant where a copy would
// hold it, so the results are those of the contiguous copy to the bit, over one chunk and
// many (core/parallel.hpp: chunks of 2^12 to 2^15), x or y constant, y strided or not.
TEST(CQdot, ZeroIncrementGivesTheBitsOfTheContiguousCopy) {
  std::mt19937_64 gen(707);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{5000}, std::size_t{300001}})
    for (std::ptrdiff_t incy : {1, -2})
      for (double tolerance : {1e-10, 1e-3}) {
        const std::vector<double> y = wide<double>(gen, n, 30);
        const std::vector<float> f = wide<float>(gen, n, 20);
        constant_against_copy<double>(n, std::ldexp(0.7, static_cast<int>(gen() % 20) - 10), y, incy, true, tolerance);
        constant_against_copy<double>(n, -1.3, y, incy, false, tolerance);
        constant_against_copy<float>(n, 0.3f, f, incy, true, tolerance);
      }
}

// n = 2^27 elements from one-element buffers: no array of n is made (a copy of x alone
// would be 1 GiB), and the value is n x_0 y_0 within the bound.
TEST(CQdot, ZeroIncrementMakesNoArrayOfN) {
  const std::size_t n = std::size_t{1} << 27;
  const double x = 0.75, y = -1.5;
  const double before = peak_resident_bytes();
  ebla_qdot_info info;
  const double v = ebla_dqdot(n, &x, 0, &y, 0, nullptr, &info);
  const double grown = peak_resident_bytes() - before;
  ASSERT_EQ(info.status, EBLA_OK) << ebla_last_error();
  EXPECT_LT(grown, 64.0 * 1024 * 1024) << "the peak resident memory grew by " << grown << " bytes";
  EXPECT_LE(std::fabs(v - static_cast<double>(n) * x * y), info.bound);
}

// n beyond what any memory holds: the invalid-argument status and a message naming the
// function and n, checked before any allocation, for arrays and constants alike.
TEST(CQdot, HugeLengthIsAnInvalidArgumentNamingN) {
  const float x = 1.0f, y = 2.0f;
  const std::size_t n = std::size_t{1} << 60;
  for (std::ptrdiff_t inc : {0, 1}) {
    ebla_qdot_info info;
    const double v = ebla_sqdot(n, &x, inc, &y, inc, nullptr, &info);
    const std::string what = ebla_last_error();
    EXPECT_TRUE(std::isnan(v));
    EXPECT_EQ(info.status, EBLA_INVALID_ARGUMENT) << what;
    EXPECT_EQ(what.rfind("ebla_sqdot: n = 1152921504606846976", 0), 0u) << what;
    ebla_qdot_plan* plan = nullptr;
    EXPECT_EQ(ebla_sqdot_select(n, &x, inc, &y, inc, nullptr, &plan), EBLA_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ebla_last_error()).find("ebla_sqdot_select: n = 1152921504606846976"), std::string::npos)
        << ebla_last_error();
    EXPECT_EQ(plan, nullptr);
  }
}

// A ladder names custom formats: levels separated by ';', or by ',' with a custom format's
// key=value pieces kept in it. Both give the bits of the C++ call on the same ladder.
TEST(CQdot, LadderNamesCustomFormats) {
  std::mt19937_64 gen(708);
  const std::size_t n = 20000;
  const std::vector<double> x = wide<double>(gen, n, 12), y = wide<double>(gen, n, 12);
  ebla::QdotOptions q;
  q.tolerance = 1e-3;
  q.perforate_all = false;
  q.ladder = {ebla::QdotLevel::of(ebla::formats::binary64()), ebla::QdotLevel::of(ebla::formats::binary32()),
              ebla::QdotLevel::of(ebla::format_by_name("custom:t=8,emin=-14,emax=15")), ebla::QdotLevel::skip()};
  const ebla::QdotResult r = ebla::qdot(x.data(), y.data(), n, q);
  ASSERT_GT(r.stats.count_per_level[2], 0u) << "the custom level is not used at this tolerance";
  for (const char* ladder : {"binary64;binary32;custom:t=8,emin=-14,emax=15;perforate",
                             "binary64,binary32,custom:t=8,emin=-14,emax=15,perforate"}) {
    ebla_qdot_options o;
    ebla_qdot_options_init(&o);
    o.tolerance = q.tolerance;
    o.ladder = ladder;
    ebla_qdot_info info;
    const double v = ebla_dqdot(n, x.data(), 1, y.data(), 1, &o, &info);
    ASSERT_EQ(info.status, EBLA_OK) << ladder << ": " << ebla_last_error();
    EXPECT_EQ(bits(v), bits(r.value)) << ladder;
    EXPECT_EQ(bits(info.bound), bits(r.bound)) << ladder;
    EXPECT_EQ(info.count[2], r.stats.count_per_level[2]) << ladder;
  }
}

TEST(CQdot, MalformedLadderIsAnInvalidArgumentWithAMessage) {
  const std::vector<double> x = {1.0, 2.0}, y = {3.0, 4.0};
  const std::pair<const char*, const char*> cases[] = {
      {"binary64,,binary16", "level 2 of the ladder 'binary64,,binary16' is empty"},
      {"binary64;binary16;", "level 3 of the ladder 'binary64;binary16;' is empty"},
      {"binary64,emin=3", "unknown format 'emin=3'"},
      {"binary64;custom:t=8,emin=-6", "needs t, emin and emax"},
      {"binary64;custom:t=8;emin=-6;emax=7", "needs t, emin and emax"},
  };
  for (const auto& [ladder, message] : cases) {
    ebla_qdot_options o;
    ebla_qdot_options_init(&o);
    o.ladder = ladder;
    ebla_qdot_info info;
    const double v = ebla_dqdot(2, x.data(), 1, y.data(), 1, &o, &info);
    const std::string what = ebla_last_error();
    EXPECT_TRUE(std::isnan(v)) << ladder;
    EXPECT_EQ(info.status, EBLA_INVALID_ARGUMENT) << ladder;
    EXPECT_NE(what.find("ebla_dqdot: ebla::qdot_ladder_by_names"), std::string::npos) << what;
    EXPECT_NE(what.find(message), std::string::npos) << "'" << message << "' not in: " << what;
  }
}

// The stored vector from C: ebla_qdot_store with increments gives the bits of the C++
// qdot_store on the gathered elements, ebla_qdot_stored those of ebla::qdot(stored, y) on
// the gathered y, within the bound against __float128; bad input is refused with a message.
TEST(CQdot, AStoredVectorGivesTheBitsOfTheCppStoredVector) {
  std::mt19937_64 gen(31);
  int cases = 0;
  for (std::size_t n : {std::size_t{1}, std::size_t{700}, std::size_t{20000}})
    for (std::ptrdiff_t incx : {1, -2, 0})
      for (const double tol : {1e-12, 1e-6, 1e-2}) {
        const std::vector<double> x = incx == 0 ? std::vector<double>(n, 0.75) : wide<double>(gen, n, 9);
        const std::vector<double> sx = strided(x, incx);
        ebla_qdot_options o;
        ebla_qdot_options_init(&o);
        o.tolerance = tol;
        ebla_qdot_stored_vector* xs = nullptr;
        ASSERT_EQ(ebla_qdot_store(n, sx.data(), incx, &o, &xs), EBLA_OK) << ebla_last_error();
        ebla::QdotOptions co;
        co.tolerance = tol;
        co.perforate_all = false;
        const ebla::QdotStored cpp = ebla::qdot_store(x.data(), n, co);
        EXPECT_EQ(ebla_qdot_stored_bytes(xs), cpp.bytes());
        EXPECT_LE(ebla_qdot_stored_bytes(xs), 8 * n + 25 * ((n + 511) / 512));  // words, 25 bytes a tile
        for (std::ptrdiff_t incy : {1, 3, -1}) {
          const std::vector<double> y = wide<double>(gen, n, 9), sy = strided(y, incy);
          ebla_qdot_info info;
          const double v = ebla_qdot_stored(xs, n, sy.data(), incy, &info);
          const ebla::QdotResult r = ebla::qdot(cpp, y.data(), n);
          EXPECT_EQ(info.status, EBLA_OK);
          EXPECT_EQ(bits(v), bits(r.value));
          EXPECT_EQ(bits(info.bound), bits(r.bound));
          EXPECT_TRUE(within(x, y, v, info.bound)) << n << " " << tol;
          EXPECT_EQ(info.count[0] + info.count[1] + info.count[2] + info.count[3], n);
          ++cases;
        }
        ebla_qdot_stored_free(xs);
      }
  EXPECT_EQ(cases, 81);
  ebla_qdot_stored_free(nullptr);
  EXPECT_EQ(ebla_qdot_stored_bytes(nullptr), 0u);
}

TEST(CQdot, AStoredVectorRefusesBadInput) {
  std::vector<double> x = {1.0, 2.0, 3.0}, y = {4.0, 5.0, 6.0};
  ebla_qdot_options o;
  ebla_qdot_options_init(&o);
  ebla_qdot_stored_vector* xs = reinterpret_cast<ebla_qdot_stored_vector*>(&o);  // must become NULL
  auto last = [] { return std::string(ebla_last_error()); };
  o.tolerance = 0;
  EXPECT_EQ(ebla_qdot_store(3, x.data(), 1, &o, &xs), EBLA_INVALID_ARGUMENT);
  EXPECT_EQ(xs, nullptr);
  EXPECT_NE(last().find("ebla_qdot_store"), std::string::npos) << last();
  EXPECT_NE(last().find("tolerance"), std::string::npos) << last();
  ebla_qdot_options_init(&o);
  o.policy = "paper";
  EXPECT_EQ(ebla_qdot_store(3, x.data(), 1, &o, &xs), EBLA_INVALID_ARGUMENT);
  EXPECT_NE(last().find("paper"), std::string::npos) << last();
  x[2] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ebla_qdot_store(3, x.data(), 1, nullptr, &xs), EBLA_INVALID_ARGUMENT);
  EXPECT_NE(last().find("x[2] = inf"), std::string::npos) << last();
  EXPECT_EQ(ebla_qdot_store(3, nullptr, 1, nullptr, &xs), EBLA_INVALID_ARGUMENT);
  EXPECT_EQ(ebla_qdot_store(3, x.data(), 1, nullptr, nullptr), EBLA_INVALID_ARGUMENT);
  x[2] = 3.0;
  ASSERT_EQ(ebla_qdot_store(3, x.data(), 1, nullptr, &xs), EBLA_OK);
  ebla_qdot_info info;
  EXPECT_TRUE(std::isnan(ebla_qdot_stored(xs, 2, y.data(), 1, &info)));
  EXPECT_EQ(info.status, EBLA_INVALID_ARGUMENT);
  EXPECT_NE(last().find("ebla_qdot_stored"), std::string::npos) << last();
  y[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(ebla_qdot_stored(xs, 3, y.data(), 1, &info)));
  EXPECT_NE(last().find("y[1] = nan"), std::string::npos) << last();
  EXPECT_TRUE(std::isnan(ebla_qdot_stored(nullptr, 3, y.data(), 1, &info)));
  EXPECT_NE(last().find("stored is null"), std::string::npos) << last();
  ebla_qdot_stored_free(xs);
}
