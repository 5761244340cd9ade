// ebla gemm's modes after parsing: the parsed command line (Config) and the function of each
// mode that calls the library, prints its tables and writes its HDF5 groups.
#pragma once

#include <ebla/core/hdf5.hpp>
#include <ebla/experiments/gemm_study.hpp>
#include <ebla/kernels/gemm.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ebla::cli::gemm_command {

enum class Mode { run, select, narrow_range, tensor_core };

struct Config {
  Mode mode = Mode::run;
  experiments::GemmData data;        // m, k, n, distribution, l, --given, seed
  std::vector<std::int64_t> k_list;  // narrow-range
  std::vector<std::string> figures;  // "5.1", "5.2"
  GemmConfig gemm;                   // run and tensor-core
  std::string unit_name;             // emulated engine
  double tolerance = 0;
  double failure = 0.01;
  bool scaling = true, subnormals = true, reference = false;
  int threads = 2;        // narrow-range: configs run on this many threads
  double progress = 0;    // seconds between progress lines on stderr (0: none)
  std::string output;
};

// Each returns the exit code (1 when the certified bound was violated or no candidate meets
// the tolerance); `out` is null without --output.
int run_single(const Config& c, Hdf5Writer* out);
int run_select(const Config& c, Hdf5Writer* out);
int run_narrow(const Config& c, Hdf5Writer* out);
int run_tensor_core(const Config& c, Hdf5Writer* out);

}  // namespace ebla::cli::gemm_command
