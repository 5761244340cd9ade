// The synthetic data of the qdot experiments (seed 002, section 4.1), drawn reproducibly:
// components s 2^p with s ~ U[0.5, 1); distribution A: p uniform on the integers in
// [-t/2, t/2]; distribution B: p = round(N(0, sd = t/2)); x and y independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla::experiments {

/// The two distributions of the exponent p (seed 002, section 4.1).
enum class QdotDist { A, B };

/// "A" or "B".
const char* to_string(QdotDist d);
/// A or B from "A", "a", "B" or "b"; throws ebla::InvalidArgument otherwise.
QdotDist qdot_dist_by_name(const std::string& name);

/// The definition of the distributions in words (recorded with the results).
extern const char* const qdot_dist_definition;

/// A seed per (seed, distribution, t, n, sample): the data of a sample do not depend on
/// which other parameters are swept, so every experiment and a single run with the same
/// (dist, t, n) see the same vectors (sample 0 is the single run's).
std::uint64_t qdot_data_seed(std::int64_t seed, QdotDist d, double t, std::int64_t n, int sample);

/// One vector pair of the input type T (double, or float: the values rounded to float).
template <class T>
struct QdotData {
  std::vector<T> x, y;
  std::size_t n() const { return x.size(); }
};

/// n components of x, then n of y, drawn by std::mt19937_64 seeded with `seed`.
template <class T>
QdotData<T> qdot_data(QdotDist d, double t, std::int64_t n, std::uint64_t seed);

extern template QdotData<double> qdot_data<double>(QdotDist, double, std::int64_t, std::uint64_t);
extern template QdotData<float> qdot_data<float>(QdotDist, double, std::int64_t, std::uint64_t);

}  // namespace ebla::experiments
