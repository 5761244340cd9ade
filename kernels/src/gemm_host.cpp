// The host GEMM engines: OpenBLAS's cblas_dgemm and cblas_sgemm, and oneDNN's matmul
// primitive with bfloat16 inputs and binary32 output.
//
// oneDNN's engine and stream are made once; a matmul primitive is made once per shape and
// kept in a small cache (most recently used first), together with the reorder of B into the
// layout the primitive prefers and the buffer it reorders into. Calls into oneDNN hold a
// mutex: the cached buffers are shared, and oneDNN already uses every core for one call.
#include <ebla/kernels/gemm_host.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/parallel.hpp>

#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <climits>
#include <list>
#include <mutex>
#include <utility>

namespace ebla::host {

namespace {

constexpr std::size_t plan_capacity = 8;   // shapes whose primitives are kept
constexpr std::int64_t reorder_rows = 1024;  // automatic: reorder B when m is at least this

// oneDNN's names for its instruction sets (those of DNNL_MAX_CPU_ISA).
std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all: return "all";
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
  }
  return "unknown (" + std::to_string(static_cast<int>(isa)) + ")";
}

// True when the instruction set includes AVX512_BF16 (AMX's set includes it).
bool has_bf16(dnnl::cpu_isa isa) {
  const auto bits = static_cast<unsigned>(isa);
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (bits & bf16) == bf16;
}

GemmEngines find_engines() {
  GemmEngines e;
  e.blas = openblas_get_config();
  try {
    const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    e.onednn_isa = isa_name(isa);
    e.onednn_bf16 = has_bf16(isa);
  } catch (const dnnl::error&) {  // no CPU engine: oneDNN is not usable
    e.onednn_isa.clear();
    e.onednn_bf16 = false;
  }
  return e;
}

// Rejects negative sizes and null pointers to data that exists.
void check_shape(const char* function, std::int64_t m, std::int64_t n, std::int64_t k, const void* A,
                 const void* B, const void* C) {
  if (m < 0 || n < 0 || k < 0)
    throw_invalid(function, "m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) +
                                ": sizes must be >= 0");
  if (A == nullptr && m > 0 && k > 0) throw_invalid(function, "A is NULL with m, k > 0");
  if (B == nullptr && k > 0 && n > 0) throw_invalid(function, "B is NULL with k, n > 0");
  if (C == nullptr && m > 0 && n > 0) throw_invalid(function, "C is NULL with m, n > 0");
}

// The BLAS takes int sizes (Debian's OpenBLAS has 32-bit integers).
void check_blas_int(const char* function, std::int64_t m, std::int64_t n, std::int64_t k) {
  if (std::max({m, n, k}) > INT_MAX)
    throw_invalid(function, "m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) +
                                ": the BLAS takes sizes up to " + std::to_string(INT_MAX));
}

// Handles the shapes with nothing to multiply; true when C is complete.
template <class T>
bool trivial(std::int64_t m, std::int64_t n, std::int64_t k, T* C) {
  if (m == 0 || n == 0) return true;
  if (k > 0) return false;
  std::fill_n(C, m * n, T(0));
  return true;
}

template <class T, class Gemm>
void blas_gemm(const char* function, Gemm gemm, std::int64_t m, std::int64_t n, std::int64_t k, const T* A,
               const T* B, T* C) {
  check_shape(function, m, n, k, A, B, C);
  check_blas_int(function, m, n, k);
  if (trivial(m, n, k, C)) return;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, T(1), A, K, B, N, T(0), C, N);
}

// blas_gemm on C's rows in blocks of by_rows_block, each block on one thread.
template <class T, class Gemm>
void blas_gemm_by_rows(const char* function, Gemm gemm, std::int64_t m, std::int64_t n, std::int64_t k, const T* A,
                       const T* B, T* C) {
  check_shape(function, m, n, k, A, B, C);
  check_blas_int(function, m, n, k);
  if (trivial(m, n, k, C)) return;
  struct OneThread {  // OpenBLAS on the calling thread only, while the blocks run
    int before = openblas_get_num_threads();
    OneThread() { openblas_set_num_threads(1); }
    ~OneThread() { openblas_set_num_threads(before); }
  } one;
  const std::int64_t block = by_rows_block(m);
  const std::size_t blocks = ebla::detail::chunk_count(static_cast<std::size_t>(m), static_cast<std::size_t>(block));
  ebla::detail::for_each_chunk(blocks, [&](std::size_t b) {
    const std::int64_t first = static_cast<std::int64_t>(b) * block;
    const std::int64_t rows = std::min(block, m - first);
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k),
         T(1), A + first * k, static_cast<int>(k), B, static_cast<int>(n), T(0), C + first * n, static_cast<int>(n));
  });
}

// One shape's matmul, and the reorder of B into the primitive's layout (when it has its own).
struct Bf16Plan {
  dnnl::memory::desc a, b, c;    // row-major, as the caller's arrays are
  dnnl::matmul matmul;
  bool reorders = false;
  dnnl::memory weights;          // B in the primitive's layout
  dnnl::reorder to_weights;
};

struct Bf16Key {
  std::int64_t m, n, k;
  bool reorders;
  bool operator==(const Bf16Key& o) const { return m == o.m && n == o.n && k == o.k && reorders == o.reorders; }
};

class Onednn {
public:
  static Onednn& instance() {
    static Onednn* one = new Onednn;  // never destroyed: oneDNN's threads may outlive main
    return *one;
  }

  void run(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* A, const std::uint16_t* B, float* C,
           bool reorders) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bf16Plan& p = plan({m, n, k, reorders});
    // oneDNN's memory takes a non-const handle; A and B are only read
    dnnl::memory a(p.a, engine_, const_cast<std::uint16_t*>(A));
    dnnl::memory b(p.b, engine_, const_cast<std::uint16_t*>(B));
    dnnl::memory c(p.c, engine_, C);
    if (p.reorders) p.to_weights.execute(stream_, b, p.weights);
    p.matmul.execute(stream_, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, p.reorders ? p.weights : b}, {DNNL_ARG_DST, c}});
    stream_.wait();
  }

private:
  Onednn() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  Bf16Plan& plan(const Bf16Key& key) {
    const auto hit = std::find_if(plans_.begin(), plans_.end(), [&](const auto& e) { return e.first == key; });
    if (hit != plans_.end()) {
      plans_.splice(plans_.begin(), plans_, hit);
      return plans_.front().second;
    }
    plans_.emplace_front(key, make_plan(key));
    if (plans_.size() > plan_capacity) plans_.pop_back();
    return plans_.front().second;
  }

  Bf16Plan make_plan(const Bf16Key& key) const {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    Bf16Plan p;
    p.a = dnnl::memory::desc({key.m, key.k}, dt::bf16, tag::ab);
    p.b = dnnl::memory::desc({key.k, key.n}, dt::bf16, tag::ab);
    p.c = dnnl::memory::desc({key.m, key.n}, dt::f32, tag::ab);
    const dnnl::memory::desc weights({key.k, key.n}, dt::bf16, key.reorders ? tag::any : tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, weights, p.c), engine_);
    p.matmul = dnnl::matmul(pd);
    p.reorders = key.reorders && pd.weights_desc() != p.b;
    if (p.reorders) {
      p.weights = dnnl::memory(pd.weights_desc(), engine_);
      p.to_weights = dnnl::reorder(dnnl::reorder::primitive_desc(engine_, p.b, engine_, pd.weights_desc()));
    }
    return p;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::list<std::pair<Bf16Key, Bf16Plan>> plans_;  // most recently used first
  std::mutex mutex_;
};

}  // namespace

const GemmEngines& gemm_engines() {
  static const GemmEngines engines = find_engines();
  return engines;
}

void set_blas_threads(int threads) { openblas_set_num_threads(threads); }

int blas_threads() { return openblas_get_num_threads(); }

void dgemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* A, const double* B, double* C) {
  blas_gemm("ebla::host::dgemm", cblas_dgemm, m, n, k, A, B, C);
}

void sgemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* A, const float* B, float* C) {
  blas_gemm("ebla::host::sgemm", cblas_sgemm, m, n, k, A, B, C);
}

std::int64_t by_rows_block(std::int64_t m) {
  const std::int64_t quarter = (m + 3) / 4;
  return std::max<std::int64_t>(256, (quarter + 63) / 64 * 64);
}

void dgemm_by_rows(std::int64_t m, std::int64_t n, std::int64_t k, const double* A, const double* B, double* C) {
  blas_gemm_by_rows("ebla::host::dgemm_by_rows", cblas_dgemm, m, n, k, A, B, C);
}

void sgemm_by_rows(std::int64_t m, std::int64_t n, std::int64_t k, const float* A, const float* B, float* C) {
  blas_gemm_by_rows("ebla::host::sgemm_by_rows", cblas_sgemm, m, n, k, A, B, C);
}

void bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* A, const std::uint16_t* B,
               float* C) {
  detail::bf16_gemm(m, n, k, A, B, C, detail::Bf16Weights::automatic);
}

namespace detail {

void bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* A, const std::uint16_t* B,
               float* C, Bf16Weights weights) {
  constexpr const char* function = "ebla::host::bf16_gemm";
  if (!gemm_engines().onednn_bf16)
    throw_invalid(function, "oneDNN has no native bfloat16 matmul here (its ISA: \"" + gemm_engines().onednn_isa +
                                "\"; AVX512_BF16 or AMX-BF16 is needed)");
  check_shape(function, m, n, k, A, B, C);
  if (trivial(m, n, k, C)) return;
  const bool reorders = weights == Bf16Weights::reordered || (weights == Bf16Weights::automatic && m >= reorder_rows);
  Onednn::instance().run(m, n, k, A, B, C, reorders);
}

}  // namespace detail

}  // namespace ebla::host
