#include <ebla/experiments/statistics.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ebla::experiments {

namespace {
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> Sample::sorted() const {
  std::vector<double> s = values_;
  // NaN last, so that the order statistics of the numbers come first
  std::sort(s.begin(), s.end(), [](double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; });
  return s;
}

double Sample::min() const { return empty() ? nan : sorted().front(); }

double Sample::max() const { return empty() ? nan : sorted().back(); }

double Sample::mean() const {
  if (empty()) return nan;
  double s = 0;
  for (const double v : values_) s += v;
  return s / static_cast<double>(values_.size());
}

double Sample::median() const {
  if (empty()) return nan;
  const std::vector<double> s = sorted();
  const std::size_t h = s.size() / 2;
  return s.size() % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

double Sample::quantile(double q) const {
  if (empty()) return nan;
  const std::vector<double> s = sorted();
  const double at = q * static_cast<double>(s.size() - 1);  // position between order statistics
  const auto below = static_cast<std::size_t>(std::floor(at));
  if (static_cast<double>(below) == at) return s[below];
  const std::size_t above = std::min(below + 1, s.size() - 1);
  return s[below] + (at - static_cast<double>(below)) * (s[above] - s[below]);
}

}  // namespace ebla::experiments
