// Summaries of repeated measurements and of samples of errors, and a wall-clock timer: what
// every study reports (maximum, median, mean) computed in one place.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace ebla::experiments {

/// A sample of values (errors, ratios, seconds) and its order statistics. Empty samples have
/// NaN statistics; NaN values are kept and sort last.
class Sample {
public:
  Sample() = default;
  explicit Sample(std::vector<double> values) : values_(std::move(values)) {}

  void add(double value) { values_.push_back(value); }
  std::size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  const std::vector<double>& values() const { return values_; }

  double min() const;
  double max() const;
  double mean() const;
  /// The median: the middle value, or the mean of the two middle values of an even count.
  double median() const;
  /// The q-quantile (0 <= q <= 1) by linear interpolation between order statistics.
  double quantile(double q) const;

private:
  std::vector<double> sorted() const;
  std::vector<double> values_;
};

/// Wall-clock seconds since construction or the last restart().
class Stopwatch {
public:
  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

}  // namespace ebla::experiments
