// The throughputs of gemm_select's cost model, measured once per machine and stored in a
// profile file (as FFTW stores its wisdom), so that a choice does not hang on how busy the
// machine was at the moment of the call.
//
//   ebla::GemmCosts costs = ebla::gemm_costs(ebla::default_gemm_profile_path());
//   ebla::GemmOptions opt;  opt.tolerance = 1e-4;  opt.cost = costs.model;
//   ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
//
// The file. Lines of `key value` (a `#` line is a comment), in this order:
//   ebla-gemm-profile 1             the format
//   version 0.1.0                   ebla's version
//   written 1796036000              seconds since the Unix epoch (a comment gives the date)
//   cpu <model name>                /proc/cpuinfo's "model name"
//   cores 2                         logical processors
//   threads 2                       BLAS threads (OpenBLAS; oneDNN takes OpenMP's)
//   kokkos_threads 1                threads of Kokkos' host space (the emulated engine)
//   isa avx2 fma avx512f ...        the CPU flags the engines and host passes depend on
//   onednn avx512_core_bf16         oneDNN's ISA ("none": not usable)
//   onednn_bf16 yes                 oneDNN's bfloat16 matmul runs natively
//   blas OpenBLAS 0.3.21 ...        the BLAS library's configuration string
//   host_passes avx512              the instruction set of gemm's host passes
//   timing sgemm 1.2e-11 repetitions 5 fastest 0.0016 median 0.0017 attempts 1
//   ...                             one line per entry: dgemm, sgemm, onednn_bf16 (where it
//                                   runs), emulated, split; seconds per multiply-add (split:
//                                   per element and word), then how it was measured
//   end
// A file that does not parse (truncated: no `end`; garbage; a field of the wrong type; an
// unknown or repeated key) is corrupt. One from another machine (any of cpu .. host_passes
// differs), another ebla version, older than gemm_profile_max_age or written in the future
// is not used either. gemm_costs says why in its warnings, measures again and replaces it.
//
// The noise rule. An entry is timed by `repetitions` calls after one warm-up call; the
// repetitions agree when their median is at most `spread` times the fastest. If they do not,
// the entry is timed again, at most `attempts` times in all. An entry whose repetitions never
// agree is used for the call at hand (its fastest repetition) but not stored: the next call
// measures it again.
//
// Files are written to a temporary name in the same directory and renamed over the profile:
// a reader sees the old file or the new one, never half of one.
//
// Where it runs: on the host (files, the host engines).
#pragma once

#include <ebla/kernels/gemm.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ebla {

/// The machine and build a profile describes.
struct GemmMachine {
  std::string version;     ///< ebla's version
  std::string cpu;         ///< "model name" of /proc/cpuinfo ("unknown" without one)
  int cores = 0;           ///< logical processors (std::thread::hardware_concurrency)
  int threads = 0;         ///< BLAS threads
  int kokkos_threads = 0;  ///< Kokkos' host threads (0 when Kokkos is not initialised)
  std::string isa;         ///< the flags among avx avx2 fma f16c avx512f avx512bw avx512vl
                           ///< avx512_bf16 avx512_fp16 amx_tile amx_bf16 the CPU has ("-": none)
  std::string onednn;      ///< oneDNN's ISA ("none")
  bool onednn_bf16 = false;
  std::string blas;        ///< the BLAS configuration string
  std::string host_passes; ///< baseline, avx2 or avx512
  /// This machine, now.
  static GemmMachine here();
};

/// The fields in which a profile's machine differs from `here`, each as "cpu: 'X' here,
/// 'Y' in the profile", joined by "; " ("" if none).
std::string machine_mismatch(const GemmMachine& here, const GemmMachine& profile);

/// How an entry is timed (top of this header).
struct GemmTimingRule {
  int repetitions = 5;  ///< timed calls per attempt, after one warm-up call
  double spread = 1.5;  ///< agree: median <= spread * fastest
  int attempts = 3;     ///< at most this many attempts
};

/// One measured entry.
struct GemmTiming {
  double seconds = 0;   ///< per unit of work: the fastest repetition of the last attempt / work
  int repetitions = 0;  ///< repetitions of that attempt
  double fastest = 0, median = 0;  ///< seconds of one repetition in that attempt
  int attempts = 0;     ///< attempts made
  bool agrees = false;  ///< the last attempt's repetitions agree (noise rule)
};

/// Times `run` (one call: one repetition, returning its seconds) by the rule; `work` is the
/// units of work of one call. Throws InvalidArgument for a rule without repetitions or
/// attempts, a spread below 1 or work that is not positive.
GemmTiming measure_timing(const std::function<double()>& run, double work, const GemmTimingRule& rule = {});

/// The entries of a profile on this machine: dgemm, sgemm, onednn_bf16 (if it runs here),
/// emulated, split.
std::vector<std::string> gemm_profile_entries();

/// Measures the named entries (gemm_profile_entries()) by the rule.
std::map<std::string, GemmTiming> measure_gemm_timings(const std::vector<std::string>& names,
                                                       const GemmTimingRule& rule = {});

/// The cost model of the timings (an engine without one, e.g. onednn_bf16 where it does not
/// run, costs +inf).
GemmCostModel cost_model(const std::map<std::string, GemmTiming>& timings);

struct GemmProfile {
  GemmMachine machine;
  std::int64_t written = 0;  ///< seconds since the Unix epoch
  std::map<std::string, GemmTiming> timings;  ///< the agreeing entries, by name
};

/// A profile's text (top of this header).
std::string to_text(const GemmProfile& profile);
/// Parses a profile's text; throws InvalidArgument naming the line and what is wrong.
GemmProfile parse_gemm_profile(const std::string& text);
/// Reads and parses a file; throws InvalidArgument if it cannot be read or parsed.
GemmProfile read_gemm_profile(const std::string& path);
/// Writes the profile (its directory created if need be) to a temporary file beside `path`
/// and renames it to `path`; throws InvalidArgument (with the system's reason) if it cannot.
void write_gemm_profile(const GemmProfile& profile, const std::string& path);

/// Where the profile lives: $EBLA_GEMM_PROFILE if set, else $XDG_CACHE_HOME/ebla/gemm-profile,
/// else $HOME/.cache/ebla/gemm-profile; "" when none of them is set (no profile: measure in
/// memory).
std::string default_gemm_profile_path();

/// Profiles older than this are stale: 30 days.
constexpr std::int64_t gemm_profile_max_age = 30 * 24 * 3600;

/// Why a profile cannot serve this machine at time `now` ("" if it can): another ebla version,
/// another machine (machine_mismatch), written in the future or more than max_age seconds ago.
std::string gemm_profile_problem(const GemmProfile& profile, const GemmMachine& here, std::int64_t now,
                                 std::int64_t max_age = gemm_profile_max_age);

/// Seconds since the Unix epoch.
std::int64_t unix_now();

/// The throughputs of a selection and where they came from.
struct GemmCosts {
  GemmCostModel model;
  std::string path;            ///< the profile ("" without one)
  bool read = false;           ///< a usable profile was read
  std::int64_t age = 0;        ///< seconds since it was written (when read)
  std::map<std::string, GemmTiming> timings;  ///< every entry used, read or measured
  std::vector<std::string> measured;          ///< entries measured now whose repetitions agree
  std::vector<std::string> noisy;             ///< measured now, never agreeing: not stored
  bool stored = false;                        ///< the profile was (re)written
  std::vector<std::string> warnings;          ///< a profile not used and why; a failed write
};

/// The throughputs for gemm_select. With a path: the profile there if it is usable (entries
/// it lacks are measured and added), else everything is measured and the file replaced; the
/// agreeing entries are stored. `remeasure` measures every entry whatever the file holds.
/// Without a path: everything measured, nothing stored. Never throws for a bad or unwritable
/// file: GemmCosts::warnings says what happened.
GemmCosts gemm_costs(const std::string& path, bool remeasure = false, const GemmTimingRule& rule = {});

}  // namespace ebla
