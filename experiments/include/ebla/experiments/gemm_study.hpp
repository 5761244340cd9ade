// The GEMM studies of the seeds as library functions: the seeded matrices A and B, seed 001's
// narrow-range experiment (section 5, Figs. 5.1, 5.2) and seed 000's tensor-core GEMM (section
// 4.2, Fig. 6), each returning its numbers; and the HDF5 writers of these results and of one
// run or one selection of ebla::gemm.
//
// narrow-range: A (m x k) and B (k x n) with entries +-10^phi, phi ~ U[-l, l], random signs
// (seed 001, section 5.1); m = n = 10, k over a list. Each config is an FMA chain in the
// accumulation format (binary16 for Fig. 5.1, binary32 for Fig. 5.2) with fp8 or binary16
// words, p = 1, 2, 3, subnormals on and off, once in the formats' own ("narrow") range and once
// in the unbounded range (ebla::unbounded_range of the input and of the accumulation format).
// The error is seed 001's (5.1), ||C - AB||_inf / (||A||_inf ||B||_inf), against A B computed
// exactly (the seed uses binary64 matrix multiplication), next to the certified normwise bound
// and the seed's (Theorems 3.1 and 4.1), both relative to ||A||_inf ||B||_inf. The configs of
// one k run on `threads` threads, each into its own slot: the numbers do not depend on it.
//
// tensor-core: A (2^10 x 2^15) and B (2^15 x 2^3) with entries U(-1, 1), binary16 words on an
// H100-like unit, unscaled (the seed multiplies the matrices as they are, through cuBLAS); per
// entry the relative forward error |C - AB| / |AB| next to the certified and probable bounds
// and the seed's DBEA (Theorem 3.8) and VIBEA (Theorem 3.10), all relative to |AB|.
#pragma once

#include <ebla/core/format.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/experiments/progress.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/kernels/gemm.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace ebla::experiments {

// ---- the matrices -----------------------------------------------------------------------

/// uniform: U(-1, 1); logscale: +-10^phi, phi ~ U[-l, l] (seed 001, section 5.1).
enum class GemmDistribution { uniform, logscale };

/// The operands of a run: sizes, distribution, the format the entries are given in, the seed.
struct GemmData {
  std::int64_t m = 256, k = 256, n = 256;
  GemmDistribution distribution = GemmDistribution::uniform;
  double range = 10;                   ///< l of logscale
  Format given = formats::binary64();  ///< the entries are drawn, then rounded to nearest in it
  std::uint64_t seed = 1;
};

/// "U(-1, 1)" or "+-10^phi, phi ~ U[-l, l]".
std::string distribution_text(GemmDistribution d, double l);
/// The distribution, and " given in <format>" unless binary64.
std::string data_text(const GemmData& data);

/// A rows x cols matrix drawn row by row from gen.
HostMatrix draw_matrix(std::mt19937_64& gen, const char* name, std::int64_t rows, std::int64_t cols,
                       GemmDistribution d, double l);
/// A (m x k) and B (k x n) drawn from mt19937_64(seed), A first, then rounded to nearest in
/// `given`; throws InvalidArgument "'<given>' cannot represent the entry x of A" (or B) when an
/// entry overflows it.
std::pair<HostMatrix, HostMatrix> draw_operands(const GemmData& data);

/// ||C - E||_inf in binary64 (NaN if C holds a NaN).
double normwise_error(const HostMatrix& C, const HostMatrix& E);

/// describe() with the unit's catalogue name (describe() finds the name from the parameters,
/// which several presets share when the input format is left out).
std::string gemm_config_text(const GemmConfig& g, const std::string& unit_name);

// ---- seed 001, section 5: narrow range against unbounded range ---------------------------

/// One line of Fig. 5.1 or 5.2: one config over the k list.
struct NarrowCase {
  std::string figure;
  Format input, accumulation;
  bool subnormals = true;
  int words = 1;
  bool unbounded = false;

  /// The HDF5 group name, e.g. "fp8_e5m2_subnormals_on_p2_narrow".
  std::string key() const;
  /// "fp8_e5m2 -> binary16".
  std::string label() const;
  /// An FMA chain in the accumulation format: block 1, exact products, one rounding per step.
  GemmConfig config() const;
};

/// Fig. 5.1: fp8 inputs, binary16 accumulation; Fig. 5.2: binary16 and fp8 inputs, binary32
/// accumulation. Panels as in the seed: a row per input format, subnormals off (left) and on.
std::vector<NarrowCase> narrow_cases(const std::string& figure);

/// One config at one k.
struct NarrowPoint {
  double error = NAN, certified = NAN, paper = NAN;  ///< relative to ||A|| ||B||
  double abs_error = NAN, bound = NAN, theta = NAN, seconds = 0;
  bool violation = false;  ///< ||C - AB|| above a finite certified bound
};

struct NarrowFigure {
  std::string figure;
  std::vector<NarrowCase> cases;
  std::vector<std::vector<NarrowPoint>> points;  ///< [case][k]
  double seconds = 0;
};

struct NarrowRangeSpec {
  std::int64_t m = 10, n = 10;
  std::vector<std::int64_t> k_list = {10, 100, 1000, 10000, 100000};
  std::vector<std::string> figures = {"5.1", "5.2"};
  double range = 10;  ///< l of the entries +-10^phi, phi ~ U[-l, l]
  std::uint64_t seed = 1;
  int threads = 2;    ///< configs of one k computed on this many threads
  Progress progress;  ///< after every config and k (called by one thread at a time)
};

struct NarrowRangeResult {
  std::vector<NarrowFigure> figures;
  double data_seconds = 0;  ///< drawing the matrices and the exact AB

  std::int64_t runs() const;
  std::int64_t violations() const;
};

/// The data of each k come from (seed, k) alone: a k gets the same matrices in every list.
NarrowRangeResult narrow_range_study(const NarrowRangeSpec& spec);

// ---- seed 000, section 4.2: the tensor-core GEMM -----------------------------------------

struct TensorCoreSpec {
  GemmData data{1024, 32768, 8};
  GemmConfig gemm;    ///< componentwise on, unscaled: the seed's cuBLAS call on the matrices
  Progress progress;  ///< as each of its 4 steps starts, and at the end
};

/// An entry whose error exceeds its certified bound.
struct EntryViolation {
  std::size_t i = 0, j = 0;
  double error = 0, bound = 0;
};

struct TensorCoreResult {
  GemmResult gemm;
  HostMatrix exact;  ///< AB correctly rounded
  /// Per entry with AB != 0 (row-major), relative to |AB|.
  Sample error, certified, probable, dbea, vibea;
  Sample vibea_matrix;         ///< VIBEA failing with probability <= failure for the whole product
  Sample certified_over_dbea;  ///< certified bound / DBEA per entry
  Sample dbea_over_vibea;         ///< DBEA / VIBEA (per-entry lambda) per entry: the seed's Fig. 6 ratio
  Sample dbea_over_vibea_matrix;  ///< DBEA / VIBEA (whole-product lambda) per entry
  std::vector<EntryViolation> first_violations;  ///< the first 10
  std::int64_t entries = 0, violations = 0, zero = 0;
  std::int64_t above_probable = 0, above_dbea = 0, above_vibea = 0, above_vibea_matrix = 0;
  double data_seconds = 0, gemm_seconds = 0, exact_seconds = 0;
};

TensorCoreResult tensor_core_study(const TensorCoreSpec& spec);

// ---- HDF5 ---------------------------------------------------------------------------------

/// Writes the attributes every group of a file carries (creator, version, command line, seed).
using Hdf5Stamp = std::function<void(const Hdf5Object&)>;

/// One gemm() call: its parameters and results as attributes, its matrices as datasets.
/// `asked` is the config as given; r.config the one that ran (formats settled by ebla::gemm).
void write_gemm_run(const Hdf5Group& g, const GemmData& data, const std::string& unit_name, const GemmConfig& asked,
                    const GemmResult& r, const Hdf5Stamp& stamp);
/// gemm_select(): the options, the choice and every candidate (groups candidate_00, ...).
void write_gemm_selection(const Hdf5Group& g, const GemmData& data, const GemmOptions& options,
                          const GemmPlan& plan, double select_seconds, const Hdf5Stamp& stamp);
/// The group narrow_range of root, with a group per figure and one per config in it.
void write_narrow_range(const Hdf5Group& root, const NarrowRangeSpec& spec, const NarrowRangeResult& result,
                        const Hdf5Stamp& stamp);
/// The group tensor_core of root.
void write_tensor_core(const Hdf5Group& root, const TensorCoreSpec& spec, const std::string& unit_name,
                       const TensorCoreResult& result, const Hdf5Stamp& stamp);

}  // namespace ebla::experiments
