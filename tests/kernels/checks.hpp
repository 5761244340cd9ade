// Checks shared by the kernel tests: a tally of compared cases that reports its first
// mismatches, an expectation that a call throws InvalidArgument naming given fragments, and
// bitwise comparison of doubles.
#pragma once

#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace ebla_test {

/// The bits of a double.
inline std::uint64_t bits_of(double x) { return ebla::bit_cast<std::uint64_t>(x); }

/// Same bits, or both NaN.
inline bool same(double a, double b) { return bits_of(a) == bits_of(b) || (std::isnan(a) && std::isnan(b)); }

/// A double in C99 hex ("%a").
inline std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

/// Cases compared and mismatches found; report() prints the counts and fails on a mismatch.
struct Tally {
  std::uint64_t cases = 0, mismatches = 0;
  std::vector<std::string> first;
  void mismatch(const std::string& s) {
    ++mismatches;
    if (first.size() < 8) first.push_back(s);
  }
  void report(const std::string& name) const {
    std::cout << "[ counts   ] " << name << ": " << cases << " cases, " << mismatches
              << " mismatches\n";
    ::testing::Test::RecordProperty(name + "_cases", std::to_string(cases));
    std::string s;
    for (const auto& m : first) s += "\n  " + m;
    EXPECT_EQ(mismatches, 0u) << name << ":" << s;
    EXPECT_GT(cases, 0u) << name;
  }
};

/// fn() throws ebla::InvalidArgument whose message contains every fragment.
template <class Fn>
void expect_invalid(Fn fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << fragments.front();
  } catch (const ebla::InvalidArgument& e) {
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
  }
}

}  // namespace ebla_test
