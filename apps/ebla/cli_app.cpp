// The `ebla` command's CLI11 app (see cli_app.hpp).
#include "cli_app.hpp"

#include <cstdlib>
#include <string>

namespace ebla::cli {

std::map<CLI::App*, Command> build_app(CLI::App& app, int& kokkos_threads) {
  app.name("ebla");
  app.description("ebla: error-bounded linear algebra (number formats, rounding, bounds)");
  app.set_version_flag("--version", "ebla " EBLA_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Command> commands;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands[sub] = adder(*sub);
  };
  add("formats", "List the catalogue of number formats", add_formats);
  add("round", "Round values to a format and show the result exactly", add_round);
  add("bounds", "Deterministic and probabilistic error constants for n roundings", add_bounds);
  add("qdot", "The error-bounded quantized dot product on synthetic data: one run, or the "
              "experiments of Diffenderfer et al. (tightness, effectiveness, speedup)", add_qdot);
  add("cg", "Conjugate gradients with exact, qdot or fixed-format dot products (Diffenderfer et al., Algorithm 4.1)",
      add_cg);
  add("power", "The power method with exact, qdot or fixed-format dot products (Diffenderfer et al., Algorithm 4.2)",
      add_power);
  add("mac", "d = a*b + c by MAC, FMA and mixed-precision FMA with their deterministic and probabilistic "
             "bounds (Bhola & Duraisamy, section 4.1, Fig. 5)", add_mac);
  add("gemm", "Mixed-precision GEMM (Model 1) with certified bounds: one run, the choice for a tolerance, "
              "or the experiments of Mary & Mikaitis (Figs. 5.1, 5.2) and Bhola & Duraisamy (Fig. 6)", add_gemm);
  add("tune", "Measure the GEMM engines' throughputs once and store them in the profile that gemm --tolerance reads",
      add_tune);
  add("probe", "The tests of Fasi et al. on a matrix-multiply unit: a preset, or this CPU's VDPBF16PS (avx512_bf16_hw)",
      add_probe);
  add("mma", "One dot product c + sum a_i b_i through a matrix-multiply unit, on values or bit patterns, "
             "or one per row of a file (--cases)",
      add_mma);
  add("weakform", "The weak-form kernel A += B C layer by layer with its layer-wise error bounds (Xie)",
      add_weakform);
  add("info", "This build and this machine: versions, Kokkos backends and threads, the instruction set of "
              "each host kernel, the GEMM engines", add_info);
  // the commands that run Kokkos take its host thread count (Kokkos's own spelling of the option)
  for (const char* name : {"qdot", "cg", "power", "mac", "gemm", "tune", "mma", "weakform", "info"})
    app.get_subcommand(name)
        ->add_option("--kokkos-num-threads", kokkos_threads,
                     "Threads of Kokkos's host execution space (OpenMP or Threads backends; a Serial one runs "
                     "one). Default: KOKKOS_NUM_THREADS, OMP_NUM_THREADS, else every core")
        ->check(
            [](const std::string& text) {
              char* end = nullptr;
              const long n = std::strtol(text.c_str(), &end, 10);
              return !text.empty() && *end == '\0' && n >= 1 && n <= 1024
                         ? std::string()
                         : "'" + text + "' is not a thread count in 1..1024";
            },
            "INT in 1..1024");
  return commands;
}

}  // namespace ebla::cli
