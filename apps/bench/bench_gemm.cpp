// The host GEMM engines, and ebla::gemm on them, against OpenBLAS DGEMM on the same matrices.
//
// Square n x n products, n = 512, 1024 and 2048, of matrices whose entries are bfloat16
// values (s 2^p, s ~ U[1, 2) rounded to bfloat16, p ~ U{-4..4}, random signs), held as
// binary64 for DGEMM, binary32 for SGEMM and bfloat16 bit patterns for oneDNN, so that every
// engine multiplies the same numbers. Times include everything an engine does per call (for
// oneDNN, the reorder of B into its preferred layout). One function per engine; each
// reports GFLOP/s (2 n^3 per call); repeated (5 times by default), the medians are compared
// with DGEMM's.
//
// The ebla_* rows are whole ebla::gemm calls (Model 1: scaling, words, the engine's products,
// assembly, and the certified normwise bound; no entrywise bounds): bfloat16 / binary16 words
// on oneDNN and SGEMM with p = 1 and 3, binary64 on DGEMM, and `ebla_tol1e-6`, the plan
// gemm_select picks for a certified relative normwise bound of 1e-6 (chosen before timing;
// the choice is printed). The emulated_* rows time the bit-exact emulation of two units, and
// of one block unit at K = 4, 16 and 32 products per unit operation.
//
// Threads: as many as Kokkos' default host execution space runs (OMP_NUM_THREADS, or
// --kokkos-num-threads=N with Kokkos 4), for ebla's own passes and, set here to the same
// number, for OpenBLAS (openblas_set_num_threads) and oneDNN (its OpenMP build follows
// omp_set_num_threads); the summary states the count. scripts/bench.sh runs 1, then 2.
//
// Run with OPENBLAS_THREAD_TIMEOUT=4 OMP_WAIT_POLICY=passive (scripts/bench.sh does): OpenBLAS's
// and oneDNN's idle threads otherwise spin for a while after each call and take a core from the
// other library, which slows runs that alternate between them.
#include <ebla/core/parallel.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>
#include <omp.h>

#include "bench_common.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

struct Matrices {
  std::vector<double> a64, b64;
  std::vector<float> a32, b32;
  std::vector<std::uint16_t> a16, b16;
};
std::map<std::int64_t, Matrices> data;

std::uint16_t bf16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return static_cast<std::uint16_t>(u >> 16);
}

// A bfloat16 value: s 2^p with s rounded to 8 significant bits (by truncation; any 8-bit s will do).
float random_bf16(std::mt19937_64& gen) {
  std::uniform_real_distribution<float> s(1.0f, 2.0f);
  std::uniform_int_distribution<int> p(-4, 4);
  const float v = (gen() & 1 ? -1.0f : 1.0f) * std::ldexp(std::floor(s(gen) * 128.0f) / 128.0f, p(gen));
  return v;
}

const Matrices& matrices(std::int64_t n) {
  auto it = data.find(n);
  if (it != data.end()) return it->second;
  Matrices d;
  std::mt19937_64 gen(2048);
  const auto count = static_cast<std::size_t>(n * n);
  for (auto* m : {&d.a32, &d.b32}) {
    m->resize(count);
    for (auto& x : *m) x = random_bf16(gen);
  }
  d.a64.assign(d.a32.begin(), d.a32.end());
  d.b64.assign(d.b32.begin(), d.b32.end());
  for (auto [from, to] : {std::pair{&d.a32, &d.a16}, std::pair{&d.b32, &d.b16}}) {
    to->resize(count);
    for (std::size_t i = 0; i < count; ++i) (*to)[i] = bf16_bits((*from)[i]);
  }
  return data.emplace(n, std::move(d)).first->second;
}

void set_flops(benchmark::State& state, std::int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void dgemm(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto& d = matrices(n);
  std::vector<double> c(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    ebla::host::dgemm(n, n, n, d.a64.data(), d.b64.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void sgemm(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto& d = matrices(n);
  std::vector<float> c(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    ebla::host::sgemm(n, n, n, d.a32.data(), d.b32.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

// oneDNN bfloat16 with B handed over as bf16_gemm chooses, as given, or reordered first.
void bf16_with(benchmark::State& state, ebla::host::detail::Bf16Weights weights) {
  if (!ebla::host::gemm_engines().onednn_bf16) {
    state.SkipWithError("oneDNN has no native bfloat16 matmul on this CPU");
    return;
  }
  const std::int64_t n = state.range(0);
  const auto& d = matrices(n);
  std::vector<float> c(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    ebla::host::detail::bf16_gemm(n, n, n, d.a16.data(), d.b16.data(), c.data(), weights);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void bf16(benchmark::State& state) { bf16_with(state, ebla::host::detail::Bf16Weights::automatic); }

// ebla::gemm with one config on the bench matrices (as binary64).
void ebla_with(benchmark::State& state, const ebla::GemmConfig& config) {
  const std::int64_t n = state.range(0);
  const auto& d = matrices(n);
  const ebla::ConstHostMatrix A(d.a64.data(), n, n), B(d.b64.data(), n, n);
  double bound = 0, split = 0, product = 0, bounds = 0;  // seconds summed over the iterations
  for (auto _ : state) {
    const ebla::GemmResult r = ebla::gemm(A, B, config);
    bound = r.normwise_bound / (r.norm_a * r.norm_b);
    split += r.split_seconds;
    product += r.product_seconds;
    bounds += r.bound_seconds;
    benchmark::DoNotOptimize(r.C.data());
  }
  state.counters["rel_bound"] = bound;
  // the phases' shares of the call: scaling and words, the engine's products, the bound
  const double whole = split + product + bounds;
  if (whole > 0) {
    state.counters["split%"] = 100 * split / whole;
    state.counters["product%"] = 100 * product / whole;
    state.counters["bound%"] = 100 * bounds / whole;
  }
  set_flops(state, n);
}

ebla::GemmConfig config(const char* input, int words, ebla::GemmEngine engine) {
  ebla::GemmConfig c;
  c.input = ebla::format_by_name(input);
  c.words = words;
  c.engine = engine;
  c.componentwise = false;
  return c;
}

void ebla_bf16_onednn(benchmark::State& state) {
  if (!ebla::host::gemm_engines().onednn_bf16) return state.SkipWithError("no oneDNN bfloat16");
  ebla_with(state, config("bfloat16", 1, ebla::GemmEngine::onednn_bf16));
}
void ebla_bf16x3_onednn(benchmark::State& state) {
  if (!ebla::host::gemm_engines().onednn_bf16) return state.SkipWithError("no oneDNN bfloat16");
  ebla_with(state, config("bfloat16", 3, ebla::GemmEngine::onednn_bf16));
}
void ebla_bf16_sgemm(benchmark::State& state) { ebla_with(state, config("bfloat16", 1, ebla::GemmEngine::sgemm)); }
void ebla_fp16_sgemm(benchmark::State& state) { ebla_with(state, config("binary16", 1, ebla::GemmEngine::sgemm)); }
void ebla_dgemm(benchmark::State& state) { ebla_with(state, config("binary64", 1, ebla::GemmEngine::dgemm)); }

// The generic emulation (ebla::unit_gemm, integer arithmetic on significands, Kokkos kernel):
// its rate in products per second for an FMA chain (the binary64 shortcut) and for an
// H100-like block unit (b = 16, multi-operand addition with truncated alignment).
void emulated_with(benchmark::State& state, const char* unit_name) {
  const std::int64_t n = state.range(0);
  const auto& d = matrices(n);
  const ebla::ConstHostMatrix A(d.a64.data(), n, n), B(d.b64.data(), n, n);
  ebla::HostMatrix C("C", n, n);
  ebla::MatrixUnit unit = ebla::matrix_unit_by_name(unit_name);
  unit.input = ebla::formats::bfloat16();
  unit.input_subnormals = true;
  for (auto _ : state) ebla::unit_gemm(unit, A, B, C);
  state.counters["products/s"] = benchmark::Counter(
      static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n),
      benchmark::Counter::kIsIterationInvariantRate);
}
// The same block unit with K products per unit operation (K = 4, 16, 32) on 256 x 256 x 256
// products: unit dot products (d = c + sum of K products) per second.
void emulated_block(benchmark::State& state) {
  constexpr std::int64_t n = 256;
  const std::int64_t K = state.range(0);
  const auto& d = matrices(n);
  const ebla::ConstHostMatrix A(d.a64.data(), n, n), B(d.b64.data(), n, n);
  ebla::HostMatrix C("C", n, n);
  ebla::MatrixUnit unit = ebla::matrix_unit_by_name("h100_bf16");
  unit.block = static_cast<int>(K);
  for (auto _ : state) ebla::unit_gemm(unit, A, B, C);
  const double products = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  state.counters["products/s"] = benchmark::Counter(products, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["unit_ops/s"] =
      benchmark::Counter(products / static_cast<double>(K), benchmark::Counter::kIsIterationInvariantRate);
}
void emulated_fma_binary32(benchmark::State& state) { emulated_with(state, "fma_binary32"); }
void emulated_h100(benchmark::State& state) { emulated_with(state, "h100_bf16"); }

std::map<std::int64_t, std::string> chosen;  // n -> what gemm_select chose for 1e-6

void ebla_tol(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto& d = matrices(n);
  const ebla::ConstHostMatrix A(d.a64.data(), n, n), B(d.b64.data(), n, n);
  ebla::GemmOptions opt;
  opt.tolerance = 1e-6;
  const ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
  char line[200];
  std::snprintf(line, sizeof line, "%s (certified %.2e%s)", ebla::describe(plan.config).c_str(),
                plan.relative_bound, plan.meets_tolerance ? "" : ", tolerance NOT met");
  chosen[n] = line;
  ebla_with(state, plan.config);
}
void bf16_as_given(benchmark::State& state) { bf16_with(state, ebla::host::detail::Bf16Weights::as_given); }
void bf16_reordered(benchmark::State& state) { bf16_with(state, ebla::host::detail::Bf16Weights::reordered); }

const char* const engines[] = {"dgemm",          "sgemm",           "bf16",
                               "bf16_as_given",  "bf16_reordered",  "ebla_bf16_onednn",
                               "ebla_bf16_sgemm", "ebla_fp16_sgemm", "ebla_bf16x3_onednn",
                               "ebla_dgemm",     "ebla_tol"};
const char* const sizes[] = {"512", "1024", "2048"};

void print_summary(const MedianReporter& reporter) {
  const auto& e = ebla::host::gemm_engines();
  std::printf("\n%s; oneDNN ISA %s\n", e.blas.c_str(), e.onednn_isa.c_str());
  std::printf("threads: %d (Kokkos %s %d, OpenBLAS %d, OpenMP for oneDNN %d)\n", ebla::detail::host_threads(),
              Kokkos::DefaultHostExecutionSpace::name(), ebla::detail::host_threads(), ebla::host::blas_threads(),
              omp_get_max_threads());
  std::printf("square n x n; medians; GFLOP/s (2 n^3 per call), and in parentheses the speed-up "
              "over DGEMM\n");
  for (const char* n : sizes) {
    std::printf("n = %s\n", n);
    const double flops = 2.0 * std::pow(std::stod(n), 3);
    const auto time = [&](const char* name) {
      const auto it = reporter.median.find(std::string(name) + "/" + n);
      return it == reporter.median.end() ? 0.0 : it->second * 1e-3;  // ms -> s
    };
    for (const char* name : engines)
      if (time(name) > 0 && time("dgemm") > 0)
        std::printf("  %-20s %8.1f (%5.2fx)\n", name, flops / time(name) * 1e-9, time("dgemm") / time(name));
    const auto it = chosen.find(std::stoll(n));
    if (it != chosen.end()) std::printf("  ebla_tol: gemm_select(1e-6) chose %s\n", it->second.c_str());
  }
  // the emulation: 256^3 products per call
  const double products = std::pow(256.0, 3);
  const auto rate = [&](const std::string& name, double per) {
    const auto it = reporter.median.find(name);
    if (it != reporter.median.end())
      std::printf("  %-24s %7.2f million products/s, %7.2f million unit operations/s\n", name.c_str(),
                  products / (it->second * 1e-3) * 1e-6, products / per / (it->second * 1e-3) * 1e-6);
  };
  std::printf("emulation, 256 x 256 x 256 products; medians\n");
  rate("emulated_fma_binary32/256", 1);
  rate("emulated_h100/256", 16);
  for (const int K : {4, 16, 32}) rate("emulated_block/" + std::to_string(K), K);
}

}  // namespace

BENCHMARK(dgemm)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sgemm)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bf16)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bf16_as_given)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bf16_reordered)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ebla_bf16_onednn)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ebla_bf16_sgemm)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ebla_fp16_sgemm)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ebla_bf16x3_onednn)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ebla_dgemm)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ebla_tol)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(emulated_fma_binary32)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(emulated_h100)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(emulated_block)->Arg(4)->Arg(16)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    // the engines on as many threads as ebla's passes
    const int threads = ebla::detail::host_threads();
    ebla::host::set_blas_threads(threads);
    omp_set_num_threads(threads);
    std::vector<char*> args(argv, argv + argc);
    initialize_benchmarks(args, 5);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    print_summary(reporter);
    benchmark::Shutdown();
    data.clear();
  }
  Kokkos::finalize();
  return 0;
}
