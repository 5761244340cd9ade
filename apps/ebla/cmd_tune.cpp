// ebla tune: measures the throughputs of the GEMM selection on this machine and stores them in
// the profile that `ebla gemm --tolerance` reads (kernels/include/ebla/kernels/gemm_profile.hpp).
//
//   ebla tune                          the default profile ($EBLA_GEMM_PROFILE, $XDG_CACHE_HOME/
//                                      ebla/gemm-profile or ~/.cache/ebla/gemm-profile)
//   ebla tune --profile FILE
//
// Exit code 0 when every entry was measured with agreeing repetitions and stored; 1 when an
// entry stayed noisy (the others are stored) or the file could not be written; 2 for bad input.
#include "commands.hpp"
#include "gemm_print.hpp"
#include "table.hpp"

#include <ebla/kernels/gemm_profile.hpp>

#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>

namespace ebla::cli {

namespace {

int run_tune(const std::string& profile) {
  KokkosSession kokkos;
  const GemmMachine m = GemmMachine::here();
  std::printf("ebla tune: the throughputs of the GEMM selection on this machine\n");
  std::printf("  cpu %s, %d cores, %d BLAS threads, %d Kokkos threads\n", m.cpu.c_str(), m.cores, m.threads,
              m.kokkos_threads);
  std::printf("  isa %s; oneDNN %s%s; host passes %s\n", m.isa.c_str(), m.onednn.c_str(),
              m.onednn_bf16 ? " (bfloat16 matmul)" : "", m.host_passes.c_str());
  const GemmTimingRule rule;
  std::printf("  each entry: %d repetitions after a warm-up; they agree when the median is at most %g times the "
              "fastest (at most %d attempts)\n\n",
              rule.repetitions, rule.spread, rule.attempts);
  const GemmCosts costs = gemm_command::costs_for(profile, true);
  Table table({"entry", "seconds per unit", "fastest ms", "median ms", "attempts", ""});
  for (const auto& [name, t] : costs.timings)
    table.add({name, fmt::format("{:.3e}", t.seconds), fmt::format("{:.3f}", 1e3 * t.fastest),
               fmt::format("{:.3f}", 1e3 * t.median), std::to_string(t.attempts),
               t.agrees ? "stored" : "noisy, not stored"});
  table.print();
  std::printf("(the unit: one multiply-add; for split, one element and word)\n");
  if (costs.stored) std::printf("wrote %s\n", costs.path.c_str());
  else if (costs.path.empty()) std::printf("not stored: no profile (neither XDG_CACHE_HOME nor HOME is set; --profile FILE)\n");
  else std::printf("not stored\n");
  return costs.stored && costs.noisy.empty() ? 0 : 1;
}

}  // namespace

Command add_tune(CLI::App& app) {
  auto profile = std::make_shared<std::string>();
  app.add_option("--profile", *profile,
                 "The profile file (default: $EBLA_GEMM_PROFILE, else $XDG_CACHE_HOME/ebla/gemm-profile, else "
                 "~/.cache/ebla/gemm-profile)");
  app.footer(
      "Measures the engines of the GEMM selection (dgemm, sgemm, onednn_bf16, the emulated unit, the\n"
      "split into words) and stores them with this machine's description; `ebla gemm --tolerance`\n"
      "reads them instead of measuring at each call. A profile from another machine or ebla version,\n"
      "older than 30 days or corrupt is ignored with a warning and measured again (docs/gemm.md).\n"
      "Exit code: 0 when every entry was stored; 1 when one stayed noisy or the file could not be\n"
      "written; 2 for bad input.");
  return [profile] { return run_tune(*profile); };
}

}  // namespace ebla::cli
