// ebla info: what this build runs on. The versions of ebla, Kokkos and Kokkos Kernels, the
// Kokkos backends and the host thread count, the instruction set each host kernel dispatches
// to on this CPU, the matrix instructions the CPU has, and the GEMM engines.
//
// The first lines do not depend on the machine (ebla's version, Kokkos's version and
// backends); the rest does.
#include "commands.hpp"

#include <ebla/core/parallel.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/probe.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <string>

namespace ebla::cli {

namespace {

// "4.6.1" from 40601 (as Kokkos's CMake package spells it).
std::string version_text(int v) { return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100); }

std::string kokkos_backends() {
  std::string s;
  auto add = [&s](const char* name) { s += (s.empty() ? "" : " ") + std::string(name); };
#ifdef KOKKOS_ENABLE_SERIAL
  add("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  add("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  add("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  add("CUDA");
#endif
#ifdef KOKKOS_ENABLE_HIP
  add("HIP");
#endif
  return s.empty() ? "none of Serial, OpenMP, Threads, CUDA, HIP" : s;
}

std::string kokkos_kernels_version() {
#ifdef KOKKOSKERNELS_VERSION
  return version_text(KOKKOSKERNELS_VERSION);
#else
  return "unknown (this installation defines no KOKKOSKERNELS_VERSION)";
#endif
}

// AVX-512 FP16 (VCVTSD2SH: binary16 rounding in hardware, which the rounding tests compare
// with); GCC 12 and Clang 16 know the feature's name (Clang 14 does not).
const char* avx512_fp16() {
#if (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 16) || (!defined(__clang__) && __GNUC__ >= 12))
  return __builtin_cpu_supports("avx512fp16") && __builtin_cpu_supports("avx512vl") ? "yes" : "no";
#else
  return "not checked by this compiler";
#endif
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

void line(const char* key, const std::string& value) { std::printf("%-22s %s\n", key, value.c_str()); }

void print_info() {
  std::printf("ebla %s\n", EBLA_VERSION);
  line("Kokkos", version_text(KOKKOS_VERSION));
  line("backends", kokkos_backends());
  line("default space", Kokkos::DefaultExecutionSpace::name());
  line("host space", Kokkos::DefaultHostExecutionSpace::name());
  line("host threads", std::to_string(detail::host_threads()));
  line("Kokkos Kernels", kokkos_kernels_version());
  line("quantize", detail::to_string(detail::best_host_isa()));
  line("qdot", detail::to_string(detail::best_host_isa()));
  line("gemm host passes", detail::to_string(detail::gemm_host_isa()));
  line("avx512_bf16", yes_no(avx512_bf16_available()));
  line("avx512_fp16", avx512_fp16());
  line("amx_bf16", yes_no(amx_bf16_available()));
  const host::GemmEngines& e = host::gemm_engines();
  line("gemm emulated", "yes");
  line("gemm dgemm, sgemm", e.blas.empty() ? std::string("no BLAS") : e.blas);
  const dnnl_version_t* v = dnnl_version();
  const std::string onednn = fmt::format("oneDNN {}.{}.{}", v->major, v->minor, v->patch);
  line("gemm onednn_bf16", e.onednn_isa.empty()
                               ? onednn + ", no CPU engine: not available"
                               : onednn + ", " + e.onednn_isa + (e.onednn_bf16 ? "" : ": not available (no bfloat16 on this CPU)"));
}

}  // namespace

Command add_info(CLI::App& app) {
  app.footer(
      "host threads: the threads of Kokkos's host execution space, on which the host kernels run\n"
      "(the same bits on any number). quantize, qdot, gemm host passes: the instruction set each\n"
      "dispatches to on this CPU (baseline, avx2, avx512). gemm ...: the GEMM engines and the\n"
      "libraries behind them.");
  return [] {
    KokkosSession kokkos;
    print_info();
    return 0;
  };
}

}  // namespace ebla::cli
