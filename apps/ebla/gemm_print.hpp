// ebla gemm's modes after parsing: the parsed command line (Config) and the function of each
// mode that calls the library, prints its tables and writes its HDF5 groups.
#pragma once

#include <ebla/core/hdf5.hpp>
#include <ebla/experiments/gemm_choice.hpp>
#include <ebla/experiments/gemm_study.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_profile.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ebla::cli::gemm_command {

using Mode = experiments::GemmMode;

/// The checked choice (experiments/gemm_choice.hpp), and the output options.
struct Config : experiments::GemmSpec {
  double progress = 0;    // seconds between progress lines on stderr (0: none)
  std::string output;
  std::string profile;    // --profile: the profile file ("" for the default path)
};

/// The throughputs of a selection from the profile at `path` (or the default one when empty),
/// measured and stored as gemm_costs says; its warnings are printed on stderr.
GemmCosts costs_for(const std::string& path, bool remeasure);
/// Where the throughputs came from, one line: "profile PATH, written 2 min ago", "measured now,
/// stored in profile PATH", ...
std::string costs_origin(const GemmCosts& costs);

// Each returns the exit code (1 when the certified bound was violated or no candidate meets
// the tolerance); `out` is null without --output.
int run_single(const Config& c, Hdf5Writer* out);
int run_select(const Config& c, Hdf5Writer* out);
int run_narrow(const Config& c, Hdf5Writer* out);
int run_tensor_core(const Config& c, Hdf5Writer* out);

}  // namespace ebla::cli::gemm_command
