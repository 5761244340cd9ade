// The multiply-accumulate experiment of seed 000 (Bhola & Duraisamy), section 4.1, Fig. 5, as
// a library function.
//
// d = a b + c with a, b, c ~ U[1,2] i.i.d., computed by ebla::mpfma three ways:
//   MAC without FMA in the high format   fl(fl(a b) + c)            MpfmaConfig::mac(high)
//   FMA in the high format               fl(a b + c)                MpfmaConfig::fma(high)
//   MPFMA                                a, b in low, exact product, MpfmaConfig::mpfma(low, high)
//                                        sum in high
// For each sample: the relative forward error |d_hat - d| / |d| against the exact d, and the
// deterministic (DBEA) and probabilistic (VIBEA) bounds of mpfma.hpp relative to |d|, the
// quantities whose empirical distribution functions Fig. 5 shows. The deterministic bound must
// hold on every sample.
//
// The samples are drawn in binary64 and then represented in the `given` format (binary64 by
// default: every input of the three operations is then rounded, Lemmas 3.2 and 3.5). The seed's
// text ("the initial change in representation from fp32 to fp16 for a and b", and DBEA = VIBEA
// for FMA, section 3.1) implies inputs given in binary32.
#pragma once

#include <ebla/core/format.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/experiments/progress.hpp>
#include <ebla/experiments/statistics.hpp>
#include <ebla/kernels/mpfma.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ebla::experiments {

/// One of the three ways of computing d (a row of the table, a group of the file).
struct MacOperation {
  std::string key;    ///< "mac", "fma" or "mpfma": the HDF5 group name
  std::string label;  ///< for the table and the figure
  MpfmaConfig config;
};

/// The three operations of Fig. 5 with the failure probability of VIBEA (not validated:
/// validate(op.config) says which of them mpfma cannot emulate exactly).
std::vector<MacOperation> mac_operations(const Format& low, const Format& high, Rounding rounding, double failure);

struct MacSpec {
  Format low = formats::binary16(), high = formats::binary32();
  Format given = formats::binary64();  ///< the format the samples are given in (holds 1 and 2)
  Rounding rounding = Rounding::nearest_even;
  double failure = 0.01;
  std::int64_t samples = 100000;
  std::uint64_t seed = 1;  ///< of the samples and of stochastic rounding
  Progress progress;       ///< after the samples are drawn and after each operation
};

/// The study as text: formats and rounding by name, the failure probability and the
/// number of samples (1e5 accepted). Messages name a field through `name` ("--low" ->
/// "ebla mac --low"; by default "ebla::MacChoice --low").
struct MacChoice {
  std::string low = "binary16", high = "binary32", input_format = "binary64";
  std::string rounding = "nearest_even";
  std::string failure = "0.01", samples = "100000";
  std::int64_t seed = 1;
  std::function<std::string(const std::string& option)> name;
  std::string named(const std::string& option) const;
};

/// The checked spec (without progress): known formats and rounding; an input format that
/// holds 1 and 2; failure in (0, 1); a whole number of samples in [1, 1e7]; each operation's
/// config one that mpfma emulates exactly. Throws InvalidArgument naming the fields.
MacSpec make_mac_spec(const MacChoice& choice);

/// a, b, c: uniform draws from the 2^52 binary64 numbers of [1, 2), exactly (no rounding in
/// 1 + k 2^-52), from mt19937_64(seed) in the order a, b, c per sample, then represented in
/// `given` (to nearest).
struct MacSamples {
  std::vector<double> a, b, c;
};
MacSamples draw_mac_samples(const MacSpec& spec);

/// Per sample: relative error and bounds (Fig. 5's three curves of one operation).
struct MacOutcome {
  Sample error, dbea, vibea;
  std::int64_t violations = 0;      ///< error > DBEA: must be 0
  std::int64_t vibea_exceeded = 0;  ///< error > VIBEA: expected in about a fraction `failure`
  double failure = 0, lambda = 0;   ///< as mpfma states them (failure 0 for directed rounding)
};

struct MacResult {
  std::vector<MacOperation> operations;
  std::vector<MacOutcome> outcomes;  ///< one per operation

  std::int64_t violations() const;  ///< of DBEA, over the operations
};

/// Runs the three operations of mac_operations(spec...) on the samples of draw_mac_samples;
/// throws InvalidArgument if mpfma cannot emulate one of them.
MacResult mac_study(const MacSpec& spec);

/// The parameters on `g`, and a group per operation with its errors and bounds;
/// `stamp` writes the attributes every group carries (creator, version, command line).
void write_mac(const Hdf5Group& root, const MacSpec& spec, const MacResult& result,
               const std::function<void(const Hdf5Object&)>& stamp);

}  // namespace ebla::experiments
