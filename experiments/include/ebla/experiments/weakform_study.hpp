// The weak-form kernel of seed 004, A[i,j,k] += sum_ii B[i,ii,k] C[j,ii], on random data, with
// the observed error of every layer next to the bounds (14) and (15), as a library function.
//
// A (its initial value), B and C are drawn in binary64 from a distribution (with in_format:
// then rounded to the unit's formats, the seed's assumption), the kernel runs with inputs and
// sums in the unit's formats (an FMA chain, ebla::weakform_unit, or any matrix unit), and each
// entry is compared with the exact A0 + B C (in __float128: products exact, the sum within
// (n + 2) 2^-113 of its magnitude, which the violation test allows for). Per layer: the
// largest error / (14') over the entries, the 1-, infinity- and Frobenius norms of the error
// against (15') and the printed (15).
#pragma once

#include <ebla/experiments/progress.hpp>
#include <ebla/kernels/weakform.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ebla::experiments {

/// uniform: U[-1,1]; positive: U[0,1]; cancellation: U[-1,1] with A0 = -B C^T (a tiny
/// result); wide: exponents across the input range, products and sums inside the accumulation
/// range; tiny: around the input format's underflow threshold, subnormals included.
enum class WeakformDistribution { uniform, positive, cancellation, wide, tiny };

struct WeakformSpec {
  std::size_t ni = 8, nj = 8, nk = 4, n = 16;
  MatrixUnit unit = weakform_unit(formats::binary32(), formats::binary32());
  WeakformDistribution distribution = WeakformDistribution::uniform;
  bool in_format = false;  ///< round the data to the unit's formats first
  std::uint64_t seed = 1;
  Progress progress;       ///< as each of its 3 steps starts, and at the end
};

/// The study as text: sizes (1e4 accepted), formats (format, or input and accumulation),
/// rounding and distribution by name, or a whole unit: a preset of matrix_unit_catalogue()
/// (unit) or a unit spec file (unit_file, unit_spec.hpp) instead of the formats, rounding and
/// product. Messages name a field through `name` ("--ni" -> "ebla weakform --ni", "" for the
/// sizes together; by default "ebla::WeakformChoice --ni"). A field counts as given when it is
/// set (not empty; rounding: not nearest_even) or when `given` says so (by its option's name
/// without "--": "rounding", "unit-file", ...).
struct WeakformChoice {
  std::string ni = "8", nj = "8", nk = "4", n = "16";
  std::string format, input, accumulation;  ///< format: both; empty input: binary32; accumulation: input
  std::string product;  ///< empty: an FMA chain; else each product rounded to this format first
  std::string rounding = "nearest_even", distribution = "uniform";
  std::string unit, unit_file;  ///< a catalogue preset or a spec file (not with the formats)
  bool in_format = false;
  std::int64_t seed = 1;
  std::function<bool(const std::string& field)> given;
  std::function<std::string(const std::string& option)> name;
  std::string named(const std::string& option) const;
};

/// The checked spec (without progress): whole sizes, ni, nj, nk >= 1 and n >= 0, each and
/// ni nj nk max(n, 1) at most 1e8; known formats, rounding and distribution; the unit as
/// weakform_unit accepts it, or a known preset (the message of an unknown one lists the
/// presets, the close ones first) or a valid spec file, without format, input,
/// accumulation, rounding or product. Throws InvalidArgument naming the field.
WeakformSpec make_weakform_spec(const WeakformChoice& choice);

using WeakformView3 = Kokkos::View<double***, Kokkos::HostSpace>;
using WeakformView2 = Kokkos::View<double**, Kokkos::HostSpace>;

/// A0 (ni x nj x nk), B (ni x n x nk) and C (nj x n) from mt19937_64(seed).
struct WeakformData {
  WeakformView3 A, B;
  WeakformView2 C;
};
WeakformData draw_weakform_data(const WeakformSpec& spec);

/// Errors of one layer against its bounds.
struct WeakformLayer {
  double max_ratio = 0;                   ///< max over entries of error / (14')
  double err1 = 0, errinf = 0, errf = 0;  ///< norms of the error
  long violations = 0;                    ///< entries and norms beyond the certified bounds
  long paper_exceeded = 0;                ///< entries beyond the printed (14)
};

struct WeakformResult {
  WeakformBounds bounds;
  std::vector<WeakformLayer> layers;  ///< nk

  long violations() const;
  long paper_exceeded() const;
};

WeakformResult weakform_study(const WeakformSpec& spec);

}  // namespace ebla::experiments
