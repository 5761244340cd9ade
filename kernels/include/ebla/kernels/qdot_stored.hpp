// A stored, quantized vector for many dot products: select once on x, keep x in the formats
// its exponent bins allow, and compute x^T y for any number of vectors y from that form.
//
//   ebla::QdotStored s = ebla::qdot_store(x, n, options);   // bins, levels, tiles: once
//   ebla::QdotResult r = ebla::qdot(s, y, n);               // |r.value - x^T y| <= r.bound
//
// (the power method's x^T A x, a block of right-hand sides against one vector, ...).
//
// Bins. Component i with x_i != 0 goes to bin e_i = fexp(x_i) (seed 002's exact binning,
// Definition 3.1, of the one vector that is known). Rounding x_i = m 2^e (m in [1, 2)) to t
// bits moves it by at most half an ulp, 2^(e - t) = u 2^e; leaving it out moves it by
// |x_i| < 2 2^e.
//
// Selection (the budget policy of qdot.hpp with these costs, QdotErrorModel{1, 2}): the
// levels of the bins are chosen so that
//   sum over bins of M_e 2^e a_e <= tolerance L,   L = sum_e M_e 2^e <= ||x||_1,      (S1)
// with a_e = 0 at binary64, u at a format of unit roundoff u, 2 perforated. Then each
// stored x~_i errs by at most a_(e_i) 2^(e_i) (checked component by component when the tile
// is stored, below), so ||x~ - x||_1 <= tolerance ||x||_1 and, by Hoelder's inequality
// (p = 1, q = inf), for EVERY y:
//   |x~^T y - x^T y| <= sum_i |x~_i - x_i| |y_i| <= ||x~ - x||_1 ||y||_inf
//                    <= tolerance ||x||_1 ||y||_inf.                                   (S2)
// No bound on y enters the selection: the size of y cancels on both sides of (S2), so one
// stored vector serves every y, and nothing about y has to be assumed or checked beyond
// its length and that it is finite. (The product qdot of qdot.hpp promises
// tolerance |x|^T|y|, which needs y: the stored contract is the norm-wise one.)
//
// Storage. x is cut into tiles of detail::stored_tile (512) components. A tile is kept in
// the cheapest level of the ladder (perforate: nothing; then the 16-bit formats, binary32,
// binary64) under which every component's rounding error is at most its bin's allowance
// a_(e_i) 2^(e_i): the rounding to the tile's format with a power-of-two scale per tile
// (store_scale_exponent of its largest magnitude), so that nothing overflows and, where a
// component would fall below the format's normal range, the check sends the tile to a wider
// format. Words of each format lie in one array (binary64, binary32, or 16 bits for binary16
// and bfloat16), tile after tile; a tile is addressed by its level, its scale and its offset
// into that array: 8 + 8 + 8 + 1 bytes per tile of 512, 0.05 bytes a component, and y is read
// whole (no index per component). Perforated tiles store nothing and are not multiplied.
//
// Computation. In tile t of format F with scale 2^s: q_i = fl(x~_i y_i), x~_i = w_i 2^s
// exactly, summed in eight lanes (by TwoSum, exact, in binary64 tiles; plainly in the
// narrower ones, whose quantization error dwarfs that rounding), the lanes and then the
// tiles merged by TwoSum in a fixed order: the same bits for any number of threads. On the
// host the tiles run on every thread of the default host execution space, in loops compiled
// for AVX-512, AVX2 and baseline x86-64 (the same operations in the same order).
//
// What `bound` certifies, for every finite y of length n (a posteriori, from this y):
//   |value - x^T y| <= bound = quantization_bound + accumulation_bound, with
//   quantization_bound = sum over tiles t of (c_F Q_t + R_t ymax_t), corrected upward
//     for its own rounding, plus m 2^-1074 (m components multiplied) for underflow. Here
//     Q_t = sum_{i in t} |q_i|, ymax_t = max_{i in t} |y_i|, c_F = (u_F + u_d)/(1 - u_d)
//     (u_d = 2^-53; u_F = 0 for binary64), and R_t = sum |x_i - x~_i| over the components
//     of the tile whose stored value does not satisfy |x_i - x~_i| <= u_F |x~_i| (those
//     below the format's normal range, or all of them in a perforated tile), found when
//     the tile is stored. Per component: |x_i y_i - q_i| <= |x_i - x~_i| |y_i| +
//     |x~_i y_i - q_i|, and |x~_i y_i| <= (|q_i| + 2^-1075) / (1 - u_d) (Higham, Theorem 2.2,
//     with gradual underflow).
//   accumulation_bound = u_d |value| / (1 - u_d) + gamma_N N u_d (1 + gamma_N) Q
//     + gamma_64 P, N = n + 9 T + 2 (T tiles) bounding the TwoSums (each exact; the sum of
//     their errors rounds, and so does the final s + c: the accumulation bound of qdot.hpp),
//     Q = sum |q_i|, P = sum |q_i| over the tiles summed plainly (at most 64 terms a lane,
//     Higham (4.4)), both corrected upward.
// The tolerance contract (S2), for the value: |value - x^T y| <= tolerance ||x||_1 ||y||_inf
// + accumulation_bound + u_d sum |x~_i y_i| + m 2^-1074.
//
// Bad input throws InvalidArgument naming the function and the value: a non-finite x_i at
// qdot_store, the paper policy (its scores need y), a ladder format that cannot be stored
// (only binary64, binary32, binary16 and bfloat16 can), a y of another length or with a
// non-finite component at qdot.
//
// Where it runs: the tiles are stored and multiplied in Kokkos' default execution space
// (the Views of a QdotStored live in its memory); the pointer calls take host arrays.
#pragma once

#include <ebla/core/storage.hpp>
#include <ebla/kernels/qdot.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

/// x kept in the formats its exponent bins allow (see the top of this header). Plain data:
/// copies share the stored words.
struct QdotStored {
  std::size_t n = 0;
  /// The selection on x alone: bins e = fexp(x_i), plan.level the ladder index of bin
  /// e_min + j, plan.count its components; input_t 53, policy budget.
  QdotPlan plan;
  /// Storage of each ladder level (binary64, binary32, binary16, bfloat16; unused for
  /// perforate).
  std::vector<Storage> storage;
  /// Components stored at each ladder level (the level of their tile).
  std::vector<std::size_t> count_per_level;
  /// Tiles stored at each ladder level.
  std::vector<std::size_t> tiles_per_level;
  std::size_t zeros = 0;            ///< components with x_i == 0
  double l1 = 0;                    ///< ||x||_1, rounded up
  double error_l1 = 0;              ///< ||x - x~||_1, rounded up: at most tolerance * l1
  double store_seconds = 0;         ///< time of qdot_store
  // The words of each format, tile after tile.
  Kokkos::View<double*> f64;
  Kokkos::View<float*> f32;
  Kokkos::View<std::uint16_t*> u16;  ///< binary16 or bfloat16 bits
  // Per tile (detail::stored_tile components each, the last one shorter).
  Kokkos::View<std::uint8_t*> tile_level;  ///< ladder index
  Kokkos::View<std::size_t*> tile_offset;  ///< first word in its format's array
  Kokkos::View<double*> tile_scale;        ///< 2^s: x~_i = word 2^s
  std::vector<std::uint8_t> host_level;    ///< tile_level, on the host
  std::vector<double> rest;                ///< R_t (see the top of this header), rounded up

  std::size_t tiles() const { return host_level.size(); }
  /// Bytes held: the words and the tiles' level, offset, scale and R_t.
  std::size_t bytes() const;
  /// Human-readable summary: the plan, and the components and tiles per level.
  std::string to_string() const;
};

/// Selects the bins' levels of x and stores it (see the top of this header). Options:
/// tolerance (> 0, finite), the ladder (default {binary64, binary32, binary16, perforate};
/// its formats among binary64, binary32, binary16 and bfloat16), perforate_all (false: a
/// tolerance that would perforate every component keeps the top bin, as in qdot). The policy
/// must be budget; reuse_plan and plan_margin are not used. Throws InvalidArgument (function
/// ebla::qdot_store) for bad options, x null with n > 0, or a component of x that is NaN or
/// infinite (naming its index and value).
QdotStored qdot_store(const double* x, std::size_t n, const QdotOptions& options);
QdotStored qdot_store(Kokkos::View<const double*> x, const QdotOptions& options);

/// x^T y from the stored x, with the bound certified for this y (see the top of this
/// header); stats.count_per_level: components computed at each ladder level,
/// stats.passes = 1. Throws InvalidArgument (function ebla::qdot(stored)) for a y of another
/// length, y null with n > 0, or a component of y that is NaN or infinite (naming its index
/// and value).
QdotResult qdot(const QdotStored& x, const double* y, std::size_t n);
QdotResult qdot(const QdotStored& x, Kokkos::View<const double*> y);

/// The stored values x~ (exactly), on the host.
std::vector<double> qdot_stored_values(const QdotStored& x);

}  // namespace ebla
