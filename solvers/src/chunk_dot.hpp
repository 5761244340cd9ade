// The chunk sum of CG's binary64 dot products (dots.cpp: plain_dot), shared with the CG passes
// that take a dot product of a chunk while it is in cache (cg.cpp).
#pragma once

#include <ebla/solvers/dots.hpp>

#include <cstddef>
#include <cstring>

namespace ebla::detail {

// Two doubles side by side (GCC's and Clang's vector extension): one SSE2 register.
typedef double Pair __attribute__((vector_size(16)));
inline Pair load_pair(const double* p) {
  Pair v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// fl(sum of x_i y_i) over i in [b, e) (b a multiple of 8), in eight interleaved partial sums
// s_k over i = k (mod 8) in order of i, added as ((s_0 + s_1) + (s_2 + s_3)) + ((s_4 + s_5) +
// (s_6 + s_7)). The eight sums are four pairs, s_0 s_1 in the first and so on: each lane
// does the operations of its s_k (with the loop over k written out, GCC's vectoriser
// shuffled the lanes and took 1.4x as long on vectors in the last-level cache).
inline double chunk_dot(const double* x, const double* y, std::size_t b, std::size_t e) {
  Pair s01 = {0, 0}, s23 = {0, 0}, s45 = {0, 0}, s67 = {0, 0};
  std::size_t i = b;
  for (; i + 8 <= e; i += 8) {
    s01 += load_pair(x + i) * load_pair(y + i);
    s23 += load_pair(x + i + 2) * load_pair(y + i + 2);
    s45 += load_pair(x + i + 4) * load_pair(y + i + 4);
    s67 += load_pair(x + i + 6) * load_pair(y + i + 6);
  }
  double s[8] = {s01[0], s01[1], s23[0], s23[1], s45[0], s45[1], s67[0], s67[1]};
  for (; i < e; ++i) s[i % 8] += x[i] * y[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/// The record of an exact dot product x^T y of two vectors (x != y) whose value is `value`:
/// no bound and no |x|^T |y| (not known), every component in binary64.
DotRecord exact_dot_record(double value);

}  // namespace ebla::detail
