// The host GEMM engines: the real BLAS (OpenBLAS) and oneDNN, behind one small interface.
//
//   const auto& e = ebla::host::gemm_engines();           // what this CPU and build offer
//   ebla::host::sgemm(m, n, k, A, B, C);                  // C = A B, row-major
//   if (e.onednn_bf16) ebla::host::bf16_gemm(m, n, k, A16, B16, C);
//
// Numerics, from the libraries' documentation and structure, and checked on this machine (AMD
// Zen 4 with AVX512_BF16; OpenBLAS 0.3.21 picks its Cooperlake kernels, oneDNN 2.6.3 its brgemm
// matmul for avx512_core_bf16) by tests/kernels/test_gemm_host.cpp: exact results where every
// order is exact, the gamma_k bound on random data, DAZ/FTZ, overflow, infinities and NaN. The
// summation orders quoted as "observed" were matched bit for bit against emulated FMA chains
// once; they are the libraries' choice, not promised, and may change with their versions.
//
//  - sgemm / dgemm (OpenBLAS): C_ij is a sum of the k products a_il b_lj computed by binary32
//    (binary64) FMAs and additions, round to nearest, in the floating-point environment the
//    threads run in (the default: gradual underflow, no FTZ/DAZ; ebla never changes it). Order
//    observed: one FMA chain along k (l = 0, 1, ...) for small products; for larger ones, blocks
//    of 320 along k (the last two balanced), each an FMA chain from 0, added to C in turn. No
//    Strassen-like algorithm (OpenBLAS's level 3 is Goto's blocked algorithm; threads split m
//    and n, never k). A product is one rounding inside an FMA, so it is exact whenever it fits:
//    for inputs that are bfloat16, binary16 or tf32 values (significands of at most 11 bits)
//    whose products lie in binary32's normal range, sgemm adds exact products; dgemm does so
//    for binary32 inputs.
//  - bf16_gemm (oneDNN; src and weights bf16, dst f32): the inner products run on VDPBF16PS.
//    The Intel SDM: per binary32 lane, c += a_2i+1 b_2i+1, then c += a_2i b_2i, each an FMA
//    rounded to nearest even, with bfloat16 inputs and the accumulator read as zero when
//    subnormal (DAZ), results below 2^-126 flushed to zero after rounding (FTZ), MXCSR ignored
//    (units::avx512_bf16_dot, docs/matrix-units.md, checked against the instruction). Order
//    observed: k cut into blocks of 512 or 1024 (oneDNN's choice), each block one chain of
//    VDPBF16PS steps from 0 along k, the blocks' sums added in binary32 in turn (ordinary
//    additions, with gradual underflow). So C_ij is a sum of the k exact products (bfloat16
//    has 8-bit significands) by binary32 FMAs and additions rounded to nearest, except that
//      * a subnormal bfloat16 input reads as zero, even when its product would be normal;
//      * an FMA whose rounded result lies below 2^-126 gives +-0: an absolute error < 2^-126
//        per step (<= 2^-150 with gradual underflow);
//    hence, with u = 2^-24,
//      |C_ij - (A'B')_ij| <= gamma_k(u) sum_l |a'_il b'_lj| + (1 + gamma_k(u)) k 2^-126,
//    A' and B' the inputs with their subnormals replaced by zero. The accumulation never
//    leaves binary32 (dst is f32; oneDNN's fpmath mode concerns f32 inputs only), and oneDNN's
//    matmul has no Strassen or Winograd variant. With AMX-BF16 (TDPBF16PS: exact products,
//    binary32 FMAs, DAZ, FTZ, round to nearest) the same model holds; no AMX here to check it.
//  - Infinities and NaN propagate as IEEE 754 says (inf * 0 = NaN); with an odd k, the padding
//    of the last bfloat16 pair contributes +0 (an infinity there stays an infinity).
//
// Performance: OpenBLAS (pthreads) and oneDNN (OpenMP) use every core by default
// (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS). OpenBLAS's result depends on its thread count (some
// entries are summed in another order); dgemm_by_rows / sgemm_by_rows do not. bf16_gemm keeps oneDNN's engine, stream and one
// matmul primitive per shape (the 8 most recently used); for m >= 1024 it first reorders B
// into the layout the primitive chooses (format_tag::any), included in its time. Measured
// here (best of 15), that gains 0-8% for m >= 1024 (2048^3: 5%) and loses 3-7% below (256^3,
// 512^3, 64 x 2048 x 2048), where the primitive's own packing of B costs less; bench_gemm
// compares both ways.
// Calls to bf16_gemm are serialised. A program that alternates between the two libraries
// pays for their idle threads: OpenBLAS's spin (sched_yield) for about 2^28 cycles after each
// call and libgomp's for a while too, taking a core from the other library (here, 1024^3:
// bf16_gemm right after sgemm 11.8 ms instead of 5.2, sgemm right after bf16_gemm 19.8 ms
// instead of 12.9). OPENBLAS_THREAD_TIMEOUT=4 and OMP_WAIT_POLICY=passive in the
// environment remove both (5.1 and 11.1 ms); they are read when the libraries load.
//
// Where it runs: on the host only (BLAS, oneDNN, host memory); ebla::gemm copies Views of other
// memory spaces through host memory before it calls them.
#pragma once

#include <cstdint>
#include <string>

namespace ebla::host {

/// What this build and this CPU offer (checked once at run time).
struct GemmEngines {
  bool onednn_bf16 = false;   ///< oneDNN matmul with bfloat16 inputs and binary32 output runs natively (the CPU has AVX512_BF16 or AMX-BF16, as oneDNN's own ISA query reports)
  std::string onednn_isa;     ///< oneDNN's name for the ISA it uses ("" if oneDNN is not usable)
  std::string blas;           ///< the BLAS library's name/config string (openblas_get_config())
};
const GemmEngines& gemm_engines();

/// The threads of OpenBLAS (dgemm, sgemm): openblas_set_num_threads / openblas_get_num_threads.
/// oneDNN's OpenMP build takes the calling thread's OpenMP setting (omp_set_num_threads).
void set_blas_threads(int threads);
int blas_threads();

/// Row-major, no transposes, contiguous: C (m x n) = A (m x k) B (k x n). k may be 0 (C = 0).
/// m, n, k >= 0; pointers may be null when the corresponding size product is 0. A negative
/// size, a null pointer to data that exists, or (BLAS: 32-bit sizes) a size above INT_MAX
/// throws ebla::InvalidArgument naming the function.
void dgemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* A, const double* B, double* C);   // BLAS dgemm (the baseline)
void sgemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* A, const float* B, float* C);      // BLAS sgemm
/// dgemm and sgemm whose every entry is the same bits on any number of threads (OpenBLAS's own
/// threads change how an entry is summed): C's rows in blocks of by_rows_block(m) (a quarter
/// of them, at least 256, rounded up to 64: each block repacks B), each block's product by the
/// BLAS on one thread, the blocks on the threads of Kokkos' default host execution space
/// (OpenBLAS is set to one thread meanwhile, then back). ebla::gemm uses these.
std::int64_t by_rows_block(std::int64_t m);
void dgemm_by_rows(std::int64_t m, std::int64_t n, std::int64_t k, const double* A, const double* B, double* C);
void sgemm_by_rows(std::int64_t m, std::int64_t n, std::int64_t k, const float* A, const float* B, float* C);
/// A, B: bfloat16 bit patterns (the high 16 bits of the binary32 value); C binary32. Through oneDNN's matmul primitive
/// (src bf16, weights bf16, dst f32). Throws ebla::InvalidArgument naming ebla::host::bf16_gemm if !gemm_engines().onednn_bf16.
void bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* A, const std::uint16_t* B, float* C);

namespace detail {

/// How bf16_gemm hands B to oneDNN: as given (row-major; the primitive repacks it inside),
/// reordered first into the layout the primitive chooses (format_tag::any), or automatic
/// (reordered when m >= 1024, where that was measured to pay; bench_gemm compares them).
enum class Bf16Weights { automatic, as_given, reordered };
void bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* A, const std::uint16_t* B, float* C,
               Bf16Weights weights);

}  // namespace detail

}  // namespace ebla::host
