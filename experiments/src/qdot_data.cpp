#include <ebla/experiments/qdot_data.hpp>

#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>

#include <cmath>
#include <random>

namespace ebla::experiments {

const char* to_string(QdotDist d) { return d == QdotDist::A ? "A" : "B"; }

QdotDist qdot_dist_by_name(const std::string& name) {
  if (name == "A" || name == "a") return QdotDist::A;
  if (name == "B" || name == "b") return QdotDist::B;
  throw InvalidArgument("unknown distribution '" + name + "' (known: A, B)");
}

const char* const qdot_dist_definition =
    "components s 2^p with s ~ U[0.5, 1); A: p uniform on the integers in [-t/2, t/2]; "
    "B: p = round(N(0, sd = t/2)). x and y independent.";

namespace {

std::uint64_t splitmix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The seed writes p ~ U[-t/2, t/2] and p ~ N(0, t/2) for the exponent of s 2^p; an
// exponent is an integer, so p is drawn from the integers (A) or rounded (B), and the
// second parameter of N is taken as the standard deviation.
template <class T>
void fill(std::vector<T>& v, QdotDist d, double t, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> significand(0.5, 1.0);
  std::uniform_int_distribution<int> uniform_p(static_cast<int>(std::ceil(-t / 2)),
                                               static_cast<int>(std::floor(t / 2)));
  std::normal_distribution<double> normal_p(0.0, t / 2);
  for (auto& e : v) {
    const double s = significand(gen);
    const int p = d == QdotDist::A ? uniform_p(gen) : static_cast<int>(std::lround(normal_p(gen)));
    e = static_cast<T>(std::ldexp(s, p));
  }
}

}  // namespace

std::uint64_t qdot_data_seed(std::int64_t seed, QdotDist d, double t, std::int64_t n, int sample) {
  std::uint64_t h = splitmix(static_cast<std::uint64_t>(seed));
  h = splitmix(h ^ static_cast<std::uint64_t>(d));
  h = splitmix(h ^ bit_cast<std::uint64_t>(t));
  h = splitmix(h ^ static_cast<std::uint64_t>(n));
  return splitmix(h ^ static_cast<std::uint64_t>(sample));
}

template <class T>
QdotData<T> qdot_data(QdotDist d, double t, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  QdotData<T> data{std::vector<T>(static_cast<std::size_t>(n)), std::vector<T>(static_cast<std::size_t>(n))};
  fill(data.x, d, t, gen);
  fill(data.y, d, t, gen);
  return data;
}

template QdotData<double> qdot_data<double>(QdotDist, double, std::int64_t, std::uint64_t);
template QdotData<float> qdot_data<float>(QdotDist, double, std::int64_t, std::uint64_t);

}  // namespace ebla::experiments
