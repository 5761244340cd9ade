#include <ebla/core/exact_sum.hpp>

#include <cstring>
#include <limits>

namespace ebla {

namespace {

/// Whether any bit of the magnitude below index pos is set.
template <class Limbs>
bool any_below(const Limbs& l, int pos) {
  if (pos <= 0) return false;
  for (int i = 0; i < pos / 32; ++i)
    if (l[i] != 0) return true;
  const int r = pos % 32;
  return r != 0 && (l[pos / 32] & ((std::int64_t{1} << r) - 1)) != 0;
}

template <class Limbs>
bool zero(const Limbs& l) {
  for (const auto v : l)
    if (v != 0) return false;
  return true;
}

template <class Limbs>
bool bit(const Limbs& l, int i) {
  return i >= 0 && ((l[i / 32] >> (i % 32)) & 1) != 0;
}

}  // namespace

void ExactSum::carry(Limbs& l) {  // every limb but the top one into [0, 2^32)
  for (int i = 0; i + 1 < limbs; ++i) {
    const std::int64_t c = l[i] >> 32;  // floor division (arithmetic shift)
    l[i] -= c * (std::int64_t{1} << 32);
    l[i + 1] += c;
  }
}

// |sum| with every limb in [0, 2^32): after carry() only the top limb has a sign.
ExactSum::Limbs ExactSum::magnitude(bool& negative) const {
  Limbs l = limb_;
  carry(l);
  negative = l[limbs - 1] < 0;
  if (negative) {
    for (auto& v : l) v = -v;
    carry(l);
  }
  return l;
}

// Round to nearest, ties to even, of a nonzero magnitude to `precision` bits, no bit kept
// below index `lowest` (the quantum of the subnormals of the target).
ExactSum::Rounded ExactSum::round(const Limbs& l, int precision, int lowest) {
  int h = limbs - 1;
  while (l[h] == 0) --h;
  int lead = 32 * h + 31;  // index of the leading one
  while (!bit(l, lead)) --lead;
  int q = lead - precision + 1;  // index of the last kept bit
  if (q < lowest) q = lowest;
  u128 kept = 0;
  for (int i = lead; i >= q; --i) kept = (kept << 1) | (bit(l, i) ? 1 : 0);
  const bool half = bit(l, q - 1), sticky = any_below(l, q - 1);
  if (half && (sticky || (kept & 1) != 0)) ++kept;
  if ((kept >> precision) != 0) {  // carried out to 2^precision: one binade up
    kept >>= 1;
    ++q;
  }
  return {kept, q - offset};
}

int ExactSum::sign() const {
  bool negative = false;
  const Limbs l = magnitude(negative);
  return negative ? -1 : zero(l) ? 0 : 1;
}

double ExactSum::to_double() const {
  if (nonfinite_) return std::numeric_limits<double>::quiet_NaN();
  bool negative = false;
  const Limbs l = magnitude(negative);
  if (zero(l)) return 0.0;
  const Rounded r = round(l, 53, offset - 1074);  // binary64: 53 bits, quantum 2^-1074
  const double v = std::ldexp(static_cast<double>(r.kept), r.exponent);  // exact, or overflow to inf
  return negative ? -v : v;
}

#if defined(__SIZEOF_FLOAT128__)
float128 ExactSum::to_float128() const {
  if (nonfinite_) return std::numeric_limits<double>::quiet_NaN();
  bool negative = false;
  const Limbs l = magnitude(negative);
  if (zero(l)) return 0;
  const Rounded r = round(l, 113, 0);  // binary128: 113 bits; its range holds every sum
  const u128 biased = static_cast<u128>(r.exponent + 16383) << 112;  // 2^exponent in binary128
  float128 scale;  // memcpy, not bit_cast: bit_cast is also device code, and devices have no float128
  std::memcpy(&scale, &biased, sizeof scale);
  const float128 v = static_cast<float128>(r.kept) * scale;
  return negative ? -v : v;
}
#endif

double ExactSum::relative_error(double computed) const {
  if (!std::isfinite(computed)) return std::numeric_limits<double>::quiet_NaN();
  ExactSum difference = *this;
  difference.add(-computed);
  const double error = std::fabs(difference.to_double());
  return error == 0 ? 0.0 : error / std::fabs(to_double());
}

namespace {
template <class T>
ExactSum dot_sum(const T* x, const T* y, std::size_t n) {
  ExactSum s;
  for (std::size_t i = 0; i < n; ++i) s.add_product(x[i], y[i]);
  return s;
}
}  // namespace

ExactSum exact_dot_sum(const double* x, const double* y, std::size_t n) { return dot_sum(x, y, n); }
ExactSum exact_dot_sum(const float* x, const float* y, std::size_t n) { return dot_sum(x, y, n); }

double exact_dot(const double* x, const double* y, std::size_t n) { return dot_sum(x, y, n).to_double(); }
double exact_dot(const float* x, const float* y, std::size_t n) { return dot_sum(x, y, n).to_double(); }

double dot_relative_error(const double* x, const double* y, std::size_t n, double computed) {
  return dot_sum(x, y, n).relative_error(computed);
}
double dot_relative_error(const float* x, const float* y, std::size_t n, double computed) {
  return dot_sum(x, y, n).relative_error(computed);
}

}  // namespace ebla
