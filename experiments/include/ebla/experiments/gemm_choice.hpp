// `ebla gemm` stated as text and checked into what runs: one run of ebla::gemm, the
// tolerance-driven selection, or one of the GEMM experiments (gemm_study.hpp), with the
// data, the config and the sizes checked before any work.
//
//   ebla::experiments::GemmChoice c;
//   c.experiment = "tensor-core";
//   c.m = "64";
//   c.given = [](const std::string& f) { return f == "m"; };
//   const ebla::experiments::GemmSpec s = ebla::experiments::make_gemm_spec(c);
//   // s.mode == GemmMode::tensor_core, s.data.m == 64, s.gemm: binary16 words on h100_fp16
#pragma once

#include <ebla/experiments/gemm_study.hpp>
#include <ebla/kernels/gemm.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ebla::experiments {

enum class GemmMode { run, select, narrow_range, tensor_core };

/// The choice as text. Fields are named by their long option names without dashes
/// ("k-list", "no-scaling", "progress" for the experiments' progress callback); `given` says
/// which were given (every option a mode does not use is an error), `name` how messages
/// name one ("--m" -> "ebla gemm --m"; by default "ebla::GemmChoice --m").
struct GemmChoice {
  std::string experiment;  ///< narrow-range or tensor-core; empty: a run, or the selection with tolerance
  std::string figure = "both";  ///< narrow-range: 5.1, 5.2 or both
  std::string m, k, n;     ///< empty: the mode's default
  std::vector<std::string> k_list;  ///< narrow-range
  std::string range = "10", distribution = "uniform", given_format = "binary64";
  std::string input, words = "1", engine = "emulated", unit;  ///< input, unit empty: the mode's default
  bool no_scaling = false, no_subnormals = false, reference = false;
  std::string tolerance, failure = "0.01";
  std::int64_t seed = 1;
  std::string threads = "2";  ///< narrow-range: 1..64
  std::function<bool(const std::string& field)> given;
  std::function<std::string(const std::string& option)> name;
  bool was_given(const std::string& field) const { return given && given(field); }
  std::string named(const std::string& option) const;
};

/// What runs, checked.
struct GemmSpec {
  GemmMode mode = GemmMode::run;
  GemmData data;                     ///< m, k, n, distribution, l, given format, seed
  std::vector<std::int64_t> k_list;  ///< narrow-range (default 10, ..., 1e5)
  std::vector<std::string> figures;  ///< narrow-range: "5.1", "5.2"
  GemmConfig gemm;                   ///< run and tensor-core, validated as ebla::gemm would
  std::string unit_name;             ///< of the emulated engine
  double tolerance = 0;              ///< select
  double failure = 0.01;
  bool scaling = true, subnormals = true, reference = false;
  int threads = 2;                   ///< narrow-range: configs run on this many threads
};

/// The mode (experiment, or select when a tolerance was given), the options it uses (others
/// given are errors), sizes (whole, positive, at most 1e8; at most 2^28 entries per matrix;
/// the memory of a run or of the tensor-core experiment), formats, engine, unit, failure
/// probability in (0, 1), l in [0, 300], figures and threads. Throws InvalidArgument naming
/// the options. Needs no Kokkos.
GemmSpec make_gemm_spec(const GemmChoice& choice);

}  // namespace ebla::experiments
