// ebla gemm: mixed-precision matrix multiplication with certified error bounds (Model 1 of
// seed 001, kernels/include/ebla/kernels/gemm.hpp): one run, the tolerance-driven choice of
// formats and engine, and the GEMM experiments of the seeds (experiments/include/ebla/
// experiments/gemm_study.hpp describes them).
//
//   ebla gemm --m 256 --k 256 --n 256 --input bfloat16 --words 2 --engine sgemm --reference
//   ebla gemm --tolerance 1e-6 --reference                 gemm_select, default candidates
//                                                          (throughputs from the profile: ebla tune)
//   ebla gemm --experiment narrow-range [--figure 5.1]     seed 001, section 5, Figs. 5.1, 5.2
//   ebla gemm --experiment tensor-core                     seed 000, section 4.2, Fig. 6
//
// The seed "stores the matrices in fp16": --given binary16 rounds the entries first (default
// binary64). The certified bound must hold on every run and entry: a violation is reported and
// makes the exit code 1, as does a tolerance that no candidate meets. Bad input exits with 2,
// before any work (entries that --given cannot hold: as soon as they are drawn), and leaves no
// --output file. gemm_print.cpp runs each mode and prints it.
#include "commands.hpp"
#include "gemm_print.hpp"
#include "study_progress.hpp"

#include <ebla/experiments/gemm_choice.hpp>

#include <memory>

namespace ebla::cli {

namespace {

using namespace gemm_command;

// The choice (experiments/gemm_choice.hpp), the CLI11 options that bound it, and output.
struct GemmCliOptions : experiments::GemmChoice {
  std::string progress, output, profile;
  std::vector<const CLI::Option*> registered;  // to tell which options were given
};

Config make_config(const GemmCliOptions& o) {
  Config c;
  static_cast<experiments::GemmSpec&>(c) = make_gemm_spec(o);
  c.progress = progress_interval(o.progress, "ebla gemm --progress");
  c.output = o.output;
  c.profile = o.profile;
  return c;
}

int run_gemm(const GemmCliOptions& options) {
  const Config c = make_config(options);  // every option checked before any work
  KokkosSession kokkos;
  // created (and so checked) before the work, committed after it: no file on failure
  std::unique_ptr<Hdf5Writer> out;
  if (!c.output.empty())
    out = under_option("ebla gemm --output", [&] { return std::make_unique<Hdf5Writer>(c.output); });
  int rc = 0;
  switch (c.mode) {
    case Mode::run: rc = run_single(c, out.get()); break;
    case Mode::select: rc = run_select(c, out.get()); break;
    case Mode::narrow_range: rc = run_narrow(c, out.get()); break;
    case Mode::tensor_core: rc = run_tensor_core(c, out.get()); break;
  }
  if (out) {
    out->commit();
    std::printf("wrote %s\n", c.output.c_str());
  }
  return rc;
}

}  // namespace

Command add_gemm(CLI::App& app) {
  auto o = std::make_shared<GemmCliOptions>();
  auto& r = o->registered;
  o->given = given_among(r);
  o->name = [](const std::string& option) { return "ebla gemm " + option; };
  r.push_back(app.add_option("--experiment,-e", o->experiment,
                             "narrow-range (Mary & Mikaitis, Figs. 5.1, 5.2) or tensor-core (Bhola & Duraisamy, Fig. 6); "
                             "without it, one run (or the selection with --tolerance)"));
  r.push_back(app.add_option("--figure", o->figure, "narrow-range: 5.1, 5.2 or both")->capture_default_str());
  r.push_back(app.add_option("--k-list", o->k_list, "narrow-range: the inner dimensions k")->delimiter(','));
  r.push_back(app.add_option("--threads", o->threads, "narrow-range: configs computed on this many threads "
                                                      "(the results do not depend on it)")
                  ->capture_default_str());
  r.push_back(app.add_option("--m", o->m, "Rows of A (default 256; narrow-range 10; tensor-core 1024)"));
  r.push_back(app.add_option("--k", o->k, "Columns of A, rows of B (default 256; tensor-core 32768)"));
  r.push_back(app.add_option("--n", o->n, "Columns of B (default 256; narrow-range 10; tensor-core 8)"));
  r.push_back(app.add_option("--distribution", o->distribution,
                             "Entries: uniform (U(-1, 1)) or logscale (+-10^phi, phi ~ U[-l, l])")
                  ->capture_default_str());
  r.push_back(app.add_option("--given", o->given_format,
                             "Format the entries are stored in: drawn in binary64, then rounded to nearest in it")
                  ->capture_default_str());
  r.push_back(app.add_option("--range", o->range, "l of the logscale entries (narrow-range: always logscale)")
                  ->capture_default_str());
  r.push_back(app.add_option("--input", o->input, "Format of the words (default bfloat16; tensor-core binary16)"));
  r.push_back(app.add_option("--words,-p", o->words, "p, the words per entry: 1, 2 or 3")->capture_default_str());
  r.push_back(app.add_option("--engine", o->engine, "emulated, sgemm, onednn_bf16 or dgemm")->capture_default_str());
  r.push_back(app.add_option("--unit", o->unit,
                             "Matrix-multiply unit of the emulated engine, from the catalogue (default "
                             "fma_binary32; tensor-core h100_fp16)"));
  r.push_back(app.add_flag("--no-scaling", o->no_scaling, "No power-of-two scaling (Mary & Mikaitis (3.1))"));
  r.push_back(app.add_flag("--no-subnormals", o->no_subnormals, "Words without subnormals, the unit DAZ/FTZ"));
  r.push_back(app.add_flag("--reference", o->reference,
                           "Also compute AB exactly, the observed error, and the entrywise bounds to compare"));
  r.push_back(app.add_option("--tolerance", o->tolerance,
                             "Choose the cheapest default candidate with a certified ||C - AB|| <= tolerance "
                             "||A|| ||B||"));
  r.push_back(app.add_option("--failure", o->failure, "Failure probability of the probabilistic bounds, in (0, 1)")
                  ->capture_default_str());
  r.push_back(app.add_option("--seed", o->seed, "Seed of the matrices (mt19937_64)")->capture_default_str()->check(seed_range()));
  r.push_back(app.add_option("--output,-o", o->output, "Write parameters and results to this HDF5 file")->check(output_file()));
  app.add_option("--profile", o->profile,
                 "--tolerance: the throughput profile to read or write (default: $EBLA_GEMM_PROFILE, else "
                 "$XDG_CACHE_HOME/ebla/gemm-profile, else ~/.cache/ebla/gemm-profile; ebla tune makes one)");
  add_progress_option(app, o->progress);
  r.push_back(app.get_option("--progress"));
  app.footer(
      "C = A B by Model 1 of Mary & Mikaitis (scaling, p words, products on an engine) with certified\n"
      "bounds (docs/gemm.md). Experiments (docs/gemm-experiments.md):\n"
      "  narrow-range: m = n = 10, k = 10,100,1000,10000,100000, entries +-10^phi, phi ~ U[-10, 10];\n"
      "                Fig. 5.1: fp8 words, binary16 FMA chain; Fig. 5.2: binary16 and fp8 words,\n"
      "                binary32; p = 1, 2, 3, subnormals off and on, narrow and unbounded range\n"
      "  tensor-core:  m = 1024, k = 32768, n = 8, entries U(-1, 1), binary16 on h100_fp16\n"
      "The experiments report progress on stderr (--progress N: a line at most every N seconds;\n"
      "0: none; default 1 when stderr is a terminal, else 0); stdout is the same either way.\n"
      "apps/plot_gemm.py draws the figures from --output.\n"
      "Exit code: 0 when every error is within the certified bound; 1 otherwise, or when no\n"
      "candidate meets --tolerance; 2 for bad input.");
  return [o] { return run_gemm(*o); };
}

}  // namespace ebla::cli
