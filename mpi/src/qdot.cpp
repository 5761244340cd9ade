// Distributed qdot: the serial phases of ebla::qdot with one MPI_Allreduce each, and the
// one-collective qdot that accumulates every level before the plan is known.
#include <ebla/mpi/qdot.hpp>

#include <ebla/core/exact.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/kernels/qdot_host.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ebla::mpi {

namespace {

// What the computation phase reduces: the serial accumulator and the number of ranks that
// found their arguments invalid (so that every rank throws, none waits).
struct State {
  detail::QdotAccum acc;
  std::int64_t invalid;
};

// inout = in (lower ranks) joined with inout: the join of the serial kernel's lanes.
void join_states(void* in, void* inout, int* len, MPI_Datatype*) {
  const State* a = static_cast<const State*>(in);
  State* b = static_cast<State*>(inout);
  for (int i = 0; i < *len; ++i) {
    State r = a[i];
    detail::qdot_accum_join(r.acc, b[i].acc);
    r.invalid += b[i].invalid;
    b[i] = r;
  }
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("ebla::mpi::qdot: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
}

// Local argument checks: an empty string when the arguments are valid on this rank.
template <class T>
std::string local_problem(const BasicDistributedVector<T>& x, const BasicDistributedVector<T>& y) {
  if (x.local_size != y.local_size)
    return "x has " + std::to_string(x.local_size) + " local components but y has " + std::to_string(y.local_size);
  if (x.local_size > 0 && (x.data == nullptr || y.data == nullptr))
    return std::string(x.data == nullptr ? "x" : "y") + " is null but its local length is " + std::to_string(x.local_size);
  int same = MPI_UNEQUAL;
  check_mpi(MPI_Comm_compare(x.comm, y.comm, &same), "MPI_Comm_compare");
  if (same != MPI_IDENT && same != MPI_CONGRUENT) return "x and y live on different communicators";
  return {};
}

[[noreturn]] void throw_collective(const char* function, const std::string& mine, std::int64_t ranks) {
  throw_invalid(function, mine.empty() ? "invalid arguments on " + std::to_string(ranks) + " rank(s)" : mine);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The input precision: t = 53 for double, 24 for float.
template <class T>
constexpr int input_t = std::is_same<T, double>::value ? 53 : 24;

// The plain dot product of the local block (in double): fixed chunks of a size set by n
// alone, each summed on its own (on every host thread), their sums added in chunk order,
// so that the value is the same for any thread count.
template <class T>
double plain_dot(const T* x, const T* y, std::size_t n) {
  const std::size_t chunk = detail::stream_chunk(n);
  std::vector<double> part(detail::chunk_count(n, chunk));
  detail::for_each_chunk(part.size(), [&](std::size_t c) {
    const std::size_t first = c * chunk, last = std::min(n, first + chunk);
    double sum = 0;
    for (std::size_t i = first; i < last; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(y[i]);
    part[c] = sum;
  });
  double sum = 0;
  for (const double p : part) sum += p;
  return sum;
}

}  // namespace

namespace {

template <class T>
QdotPlan select(const BasicDistributedVector<T>& x, const BasicDistributedVector<T>& y, const QdotOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string problem = local_problem(x, y);
  if (problem.empty()) {
    try {
      detail::resolve_ladder(options, input_t<T>, "ebla::mpi::qdot_select");
    } catch (const InvalidArgument& e) {
      problem = e.what();
    }
  }
  // slots [0, qdot_hist_size): the histogram; the last one: ranks with invalid arguments
  std::vector<std::int64_t> h(detail::qdot_hist_size + 1, 0);
  if (problem.empty())  // the local histogram (threaded; float read widened to double)
    detail::qdot_histogram_host(x.data, y.data, x.local_size, h.data());
  else
    h[detail::qdot_hist_size] = 1;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, h.data(), static_cast<int>(h.size()), MPI_INT64_T, MPI_SUM, x.comm),
            "MPI_Allreduce");
  if (h[detail::qdot_hist_size] > 0) throw_collective("ebla::mpi::qdot_select", problem, h[detail::qdot_hist_size]);
  // every component has exactly one slot (a bin, zero or nonfinite): the global length
  std::int64_t n = 0;
  for (int j = 0; j < detail::qdot_hist_size; ++j) n += h[j];
  QdotPlan plan = detail::plan_from_histogram(h.data(), static_cast<std::size_t>(n), input_t<T>, options);
  plan.select_seconds = seconds_since(t0);
  return plan;
}

template <class T>
QdotResult compute(const BasicDistributedVector<T>& x, const BasicDistributedVector<T>& y, const QdotPlan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string problem = local_problem(x, y);
  if (problem.empty()) {
    try {
      detail::check_plan(plan, plan.n, input_t<T>, "ebla::mpi::qdot_compute");
    } catch (const InvalidArgument& e) {
      problem = e.what();
    }
  }
  State st;
  detail::qdot_accum_init(st.acc);
  st.invalid = problem.empty() ? 0 : 1;
  if (problem.empty()) {
    st.acc = detail::qdot_accumulate_host(x.data, y.data, x.local_size, plan);  // threaded, chunks joined in order
    if (st.acc.nonfinite > 0 || plan.nonfinite) {  // the plain dot product, NaN/Inf as it gives them
      st.acc.s = plain_dot(x.data, y.data, x.local_size);
      st.acc.c = 0;
    }
  }
  MPI_Datatype type;
  MPI_Op op;
  check_mpi(MPI_Type_contiguous(static_cast<int>(sizeof(State)), MPI_BYTE, &type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  check_mpi(MPI_Op_create(&join_states, 0, &op), "MPI_Op_create");  // not commutative: rank order
  State global;
  const int rc = MPI_Allreduce(&st, &global, 1, type, op, x.comm);
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  check_mpi(rc, "MPI_Allreduce");
  if (global.invalid > 0) throw_collective("ebla::mpi::qdot_compute", problem, global.invalid);
  std::int64_t n = global.acc.zeros + global.acc.nonfinite;
  for (int l = 0; l < detail::qdot_max_levels; ++l) n += global.acc.count[l];
  if (static_cast<std::size_t>(n) != plan.n)
    throw_invalid("ebla::mpi::qdot_compute", "the plan was selected for vectors of global length " +
                                                 std::to_string(plan.n) + ", not " + std::to_string(n));
  QdotResult r = detail::finish_result(plan, global.acc, plan.n);
  if (r.stats.nonfinite) r.value = global.acc.s;  // the sum of the ranks' plain dots
  r.stats.compute_seconds = seconds_since(t0);
  return r;
}

}  // namespace

QdotPlan qdot_select(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options) {
  return select(x, y, options);
}
QdotPlan qdot_select(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotOptions& options) {
  return select(x, y, options);
}
QdotResult qdot_compute(const DistributedVector& x, const DistributedVector& y, const QdotPlan& plan) {
  return compute(x, y, plan);
}
QdotResult qdot_compute(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotPlan& plan) {
  return compute(x, y, plan);
}

// ---- one collective per dot -------------------------------------------------------------
//
// The plan depends on the global histogram, the sums on the plan: to need one collective,
// every rank accumulates each product at every computed level of the ladder (the levels
// that are not perforate; a perforated component contributes |x_i y_i| = |fl(x_i y_i)|,
// which the input-precision level already sums), per exponent bin, before the plan is
// known. The state is fixed in size by a window of W = qdot_window bins: slot j holds bin
// top - j, top the largest bin seen; the bins below the window go into one "underflow"
// sum, accumulated at the input precision (level 0) only, with their count and their
// smallest bin. Merging two states re-anchors the window at the larger top and moves the
// bins of the other that fall below it into the underflow (its level-0 sum joined exactly,
// its count added). A rank's local pass is made of such merges too: its block is cut into
// chunks of a size set by the local length alone, each accumulated into a state of its own
// (the chunks on every host thread), and the chunks' states merged in chunk order, so that
// the rank's state is the same bits for any thread count. A bin lands in the underflow iff
// it lies W or more below the GLOBAL top (no chunk's or rank's top nor any partial merge's
// exceeds it), so the split is the same for every number of ranks and chunks and every
// order of the merges; only roundings differ.
//
// W = 64: a product in a bin W below the top one is below 2^(3 - W) times it, i.e. under
// 2^-61 relative: below the rounding of the input precision (2^-53) by a factor 2^8, so
// for any tolerance above the unit roundoff the serial selection would perforate such bins
// unless there are hundreds of their components per component of the top bin; computing
// them at the input precision instead costs nothing in accuracy. W bins of a count and K
// sums of 24 bytes and a 104-byte header make 104 + W (8 + 24 K) bytes: 5 224 for the
// default ladder (K = 3), a message still dominated by latency; W = 32 would cut into the
// bins that tolerances near 2^-30 quantize.
//
// After the collective, every rank builds the histogram: the window's bins, and the
// underflow count as ONE pseudo-bin at the smallest underflow bin e_u. That placement keeps
// the budget selection sound: the budget is tolerance * L with L = sum_e M_e 2^e, which
// must not exceed |x|^T|y|; each underflow component has |x_i y_i| >= 2^(e_i) >= 2^(e_u),
// so U 2^(e_u) is at most their share of |x|^T|y| (a placement at the largest underflow
// bin, or just below the window, could exceed it and let the plan spend budget that does
// not exist). The serial selection then chooses the plan (detail::plan_from_histogram);
// the pseudo-bin's level is set to 0, as it is computed (so the plan's counts per level
// are what was done, and its budget_used, which counted whatever the selection assigned
// the pseudo-bin, can only overstate what is spent). Without underflow the histogram is
// the global one and the plan that of the serial qdot_select.
//
// Why the a-priori tolerance still holds (budget policy): the approximation error is that
// of the window bins the plan quantized or perforated, below the sum of M_e 2^e times 4 u_l
// (4 perforated), which the selection computed exactly (true counts, true bins) and kept
// within tolerance * L <= tolerance * |x|^T|y|; the underflow components are at the input
// precision, the rounding any double dot product has, so they add no approximation error.
//
// Why the a-posteriori bound of detail::finish_result still holds: the value is a join of
// accumulators in which every product the plan computes (in the window at its bin's level,
// in the underflow at level 0) enters exactly once, by TwoSum, and the accumulators of the
// levels not chosen are discarded: it is what the serial kernel computes with one lane per
// rank, chunk, bin and level, joined in some order. Every TwoSum is exact; one error term per
// product added and one per join of two nonempty accumulators (a join with an empty one
// adds an exact 0), i.e. at most n + (n - 1) terms whatever the number of joins (those of
// a binary tree with at most n leaves), within the N = 2n + 2 of the accumulation bound;
// the final s + c rounds once. Q and the bound terms b = sum c_l |q_i| are sums of
// nonnegative terms with the constant c_l of the level actually used (c_0 for the
// underflow): here b = sum over the used (bin, level) of c_l Q_(e,l), formed in long
// double (no underflow of c_l Q, roundings below u_d) and rounded up to double, so that
// each term c_l |q_i| passes through at most n + 1 roundings, as the factor
// (1 - gamma_(n+1))^-1 of finish_result assumes. Components counted per level are the
// counts of the window bins at their plan level and the underflow at level 0, so the
// underflow term m 2^-1074 counts every nonzero product once.

namespace {

constexpr int W = qdot_window;
constexpr std::int64_t no_bin = -(std::int64_t{1} << 40);  // the top of a state without products
constexpr std::int64_t no_min = std::int64_t{1} << 40;     // smallest underflow bin of an empty underflow

// A compensated sum of products at one level: s + c, and Q = sum |q_i|.
struct Sum {
  double s, c, q;
};

[[gnu::always_inline]] inline void add(Sum& a, double p) {
  double s, err;
  detail::two_sum(a.s, p, s, err);
  a.s = s;
  a.c += err;
  a.q += detail::magnitude(p);
}

// The join of detail::qdot_accum_join on (s, c, q): the sums merge exactly by TwoSum.
inline void join(Sum& d, const Sum& o) {
  double s, err;
  detail::two_sum(d.s, o.s, s, err);
  d.s = s;
  d.c = d.c + o.c + err;
  d.q = d.q + o.q;
}

struct Head {
  std::int64_t invalid;                    // ranks with invalid arguments
  std::int64_t levels;                     // K: computed levels per bin (the layout)
  std::uint64_t options_min, options_max;  // fingerprints of the valid ranks' options
  std::int64_t top;                        // bin of slot 0 (slot j: bin top - j), or no_bin
  std::int64_t zeros, nonfinite;           // components with x_i y_i == 0, with NaN or Inf
  double plain;                            // the plain dot product (used if NaN or Inf are seen)
  std::int64_t under_count, under_min;     // components below the window, their smallest bin
  Sum under;                               // their sum at level 0
};
static_assert(sizeof(Head) == 13 * 8, "the state is a sequence of 8-byte words");

// A rank's state: the header, the counts of the window's bins, K sums per bin.
struct WindowState {
  Head h;
  std::int64_t count[W];
  std::vector<Sum> sum;  // slot j, level l: sum[j * K + l]
};

std::size_t state_bytes(std::int64_t K) {
  return sizeof(Head) + sizeof(std::int64_t) * W + sizeof(Sum) * static_cast<std::size_t>(W * K);
}

void init(WindowState& st, int K) {
  std::memset(&st.h, 0, sizeof st.h);
  st.h.levels = K;
  st.h.options_min = std::numeric_limits<std::uint64_t>::max();
  st.h.options_max = 0;
  st.h.top = no_bin;
  st.h.under_min = no_min;
  std::fill(st.count, st.count + W, 0);
  st.sum.assign(static_cast<std::size_t>(W * K), Sum{0, 0, 0});
}

void pack(const WindowState& st, unsigned char* out) {
  std::memcpy(out, &st.h, sizeof st.h);
  std::memcpy(out + sizeof st.h, st.count, sizeof st.count);
  std::memcpy(out + sizeof st.h + sizeof st.count, st.sum.data(), sizeof(Sum) * st.sum.size());
}

// Reads a packed state; returns its size in bytes.
std::size_t unpack(const unsigned char* in, WindowState& st) {
  std::memcpy(&st.h, in, sizeof st.h);
  std::memcpy(st.count, in + sizeof st.h, sizeof st.count);
  st.sum.resize(static_cast<std::size_t>(W * st.h.levels));
  std::memcpy(st.sum.data(), in + sizeof st.h + sizeof st.count, sizeof(Sum) * st.sum.size());
  return state_bytes(st.h.levels);
}

// A bin's level-0 sum and count into the underflow.
inline void to_underflow(Head& h, std::int64_t bin, std::int64_t count, const Sum& level0) {
  join(h.under, level0);
  h.under_count += count;
  h.under_min = std::min(h.under_min, bin);
}

// The bins of o into r (whose top is at least o's): those below r's window into the underflow.
void fold(const WindowState& o, WindowState& r) {
  const int K = static_cast<int>(r.h.levels);
  join(r.h.under, o.h.under);
  r.h.under_count += o.h.under_count;
  r.h.under_min = std::min(r.h.under_min, o.h.under_min);
  if (o.h.top == no_bin) return;
  const std::int64_t d = r.h.top - o.h.top;
  for (int j = 0; j < W; ++j) {
    if (o.count[j] == 0) continue;
    const Sum* from = o.sum.data() + static_cast<std::ptrdiff_t>(j) * K;
    if (j + d >= W) {
      to_underflow(r.h, o.h.top - j, o.count[j], from[0]);
      continue;
    }
    r.count[j + d] += o.count[j];
    Sum* to = r.sum.data() + (j + d) * K;
    for (int l = 0; l < K; ++l) join(to[l], from[l]);
  }
}

// r = a followed by b: a from the lower ranks, or a rank's earlier chunks.
void merge(const WindowState& a, const WindowState& b, WindowState& r) {
  init(r, static_cast<int>(a.h.levels));
  r.h.invalid = a.h.invalid + b.h.invalid;
  r.h.options_min = std::min(a.h.options_min, b.h.options_min);
  r.h.options_max = std::max(a.h.options_max, b.h.options_max);
  r.h.top = std::max(a.h.top, b.h.top);
  r.h.zeros = a.h.zeros + b.h.zeros;
  r.h.nonfinite = a.h.nonfinite + b.h.nonfinite;
  r.h.plain = a.h.plain + b.h.plain;
  fold(a, r);
  fold(b, r);
}

// One pass over the local block, in blocks of `block` components, compiled for AVX-512,
// AVX2 and the baseline and chosen at run time. Per block: first, branch-free and
// vectorised, each component's bin (or a code for a zero or non-finite product) and its
// product at every computed level (shift[l] = 53 - t_l; level 0: fl(x_i y_i), as the
// serial kernel); then, component by component, its K products into its bin's K sums at
// once: the sums of one bin are vectors over the levels (4 levels a vector), so that one
// vector TwoSum adds a component at every level.
constexpr std::size_t block = 512;
constexpr std::int32_t code_zero = -(1 << 30);  // below every bin (bins are >= -2148)
constexpr std::int32_t code_nonfinite = code_zero - 1;

typedef double v4d __attribute__((vector_size(32)));
typedef std::uint64_t v4u __attribute__((vector_size(32)));

template <int K>
struct Block {
  std::int32_t bin[block];
  double p[K][block];
};

// The sums of one bin at every level: level l is element l % 4 of vector l / 4.
template <int K>
struct LevelSums {
  static constexpr int V = (K + 3) / 4;
  v4d s[V], c[V], q[V];
};

// The window of the local pass: `lanes` copies (component i of a block goes to lane i mod
// lanes, so that consecutive products in one bin do not wait for each other's sums), each
// with W bins, the underflow (slot W: only its level 0 is used) and a slot that takes the
// zero and non-finite components (slot W + 1, discarded), so that the loop has no branch.
constexpr int lanes = 2;
constexpr int slots = W + 2;

template <int K>
struct LocalWindow {
  std::int64_t top = no_bin;
  std::int64_t under_min = no_min;
  std::int64_t count[lanes][slots] = {};
  LevelSums<K> sum[lanes][slots] = {};
};

template <int K>
Sum level_sum(const LevelSums<K>& a, int l) {
  return Sum{a.s[l / 4][l % 4], a.c[l / 4][l % 4], a.q[l / 4][l % 4]};
}

// The local window re-anchored at a larger top bin e (rare: at most once per new top bin of
// a chunk). A slot with no component holds zero sums, so only the slots with components move.
template <int K>
[[gnu::noinline]] void raise_window(LocalWindow<K>& w, Head& h, std::int64_t e) {
  const std::int64_t d = e - w.top;
  for (int lane = 0; lane < lanes; ++lane)
    for (int j = W - 1; j >= 0; --j) {  // from the bottom: targets j + d are already vacated
      std::int64_t& count = w.count[lane][j];
      if (count == 0) continue;
      if (j + d >= W)
        to_underflow(h, w.top - j, count, level_sum(w.sum[lane][j], 0));
      else {
        w.count[lane][j + d] = count;
        w.sum[lane][j + d] = w.sum[lane][j];
      }
      count = 0;
      w.sum[lane][j] = LevelSums<K>{};
    }
  w.top = e;
}

// x rounded to nearest on 53 - k bits by Veltkamp's splitting, sigma = 2^k + 1: as the
// AVX-512 kernel of the serial qdot does (qdot_host.cpp; three operations instead of a
// dozen, ties either way), with the same factors left exact as round_significand.
[[gnu::always_inline]] inline double round_veltkamp(double x, double sigma) {
  const std::uint64_t field = (bit_cast<std::uint64_t>(x) & binary64::abs_mask) >> 52;
  const double g = sigma * x;
  const double r = g - (g - x);
  return field < 60 || field > 1992 ? x : r;
}

// The bins and products of a block; returns the largest bin (or code_zero). Rounding by
// Veltkamp's splitting (veltkamp) or by round_significand, as the serial kernel of the
// same instruction set.
template <int K, bool veltkamp>
[[gnu::always_inline]] inline std::int32_t products(const double* x, const double* y, std::size_t len,
                                                    const std::int64_t* sh, Block<K>& b, std::int64_t& zeros,
                                                    std::int64_t& nonfinite) {
  std::int64_t top = code_zero, nz = 0, nf = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const std::uint64_t ax = bit_cast<std::uint64_t>(x[i]) & binary64::abs_mask;
    const std::uint64_t ay = bit_cast<std::uint64_t>(y[i]) & binary64::abs_mask;
    const std::uint64_t bad = detail::mask_eq(ax >> 52, 0x7ff) | detail::mask_eq(ay >> 52, 0x7ff);
    const std::uint64_t zero = (detail::mask_zero(ax) | detail::mask_zero(ay)) & ~bad;
    const std::int64_t e = detail::qdot_exponent(ax) + detail::qdot_exponent(ay);
    const std::int64_t code = static_cast<std::int64_t>(
        (bad & static_cast<std::uint64_t>(std::int64_t{code_nonfinite})) |
        (zero & static_cast<std::uint64_t>(std::int64_t{code_zero})) | (static_cast<std::uint64_t>(e) & ~(bad | zero)));
    b.bin[i] = static_cast<std::int32_t>(code);
    top = std::max(top, code);
    nz += static_cast<std::int64_t>(zero & 1);
    nf += static_cast<std::int64_t>(bad & 1);
  }
  for (std::size_t i = 0; i < len; ++i) b.p[0][i] = x[i] * y[i];
  for (int l = 1; l < K; ++l) {
    const std::int64_t k = sh[l];
    if constexpr (veltkamp) {
      const double sigma = std::ldexp(1.0, static_cast<int>(k)) + 1;
      for (std::size_t i = 0; i < len; ++i) b.p[l][i] = round_veltkamp(x[i], sigma) * round_veltkamp(y[i], sigma);
    } else {
      for (std::size_t i = 0; i < len; ++i)
        b.p[l][i] = detail::round_significand(x[i], k) * detail::round_significand(y[i], k);
    }
  }
  zeros += nz;
  nonfinite += nf;
  return static_cast<std::int32_t>(top);
}

// Component i of the block into its slot of lane `lane` (window top t).
template <int K>
[[gnu::always_inline]] inline void add_component(LocalWindow<K>& w, int lane, std::int64_t t, const Block<K>& b,
                                                 std::size_t i) {
  const std::int64_t e = b.bin[i];
  const std::int64_t j = t - e;  // negative only for the codes when no bin has been seen
  const bool inside = static_cast<std::uint64_t>(j) < static_cast<std::uint64_t>(W);
  const bool below = !inside && e > code_zero;
  const std::int64_t slot = inside ? j : (below ? W : W + 1);
  w.under_min = std::min(w.under_min, below ? e : no_min);
  ++w.count[lane][slot];
  LevelSums<K>& a = w.sum[lane][slot];
  const v4u abs_mask = {binary64::abs_mask, binary64::abs_mask, binary64::abs_mask, binary64::abs_mask};
  for (int v = 0; v < LevelSums<K>::V; ++v) {
    v4d p;
    for (int k = 0; k < 4; ++k) p[k] = 4 * v + k < K ? b.p[4 * v + k < K ? 4 * v + k : 0][i] : 0.0;
    const v4d s = a.s[v] + p;  // TwoSum, level by level
    const v4d z = s - a.s[v];
    const v4d err = (a.s[v] - (s - z)) + (p - z);
    a.s[v] = s;
    a.c[v] += err;
    a.q[v] += reinterpret_cast<v4d>(reinterpret_cast<v4u>(p) & abs_mask);
  }
}

template <int K, bool veltkamp>
[[gnu::always_inline]] inline void accumulate_block(const double* x, const double* y, std::size_t len,
                                                    const std::int64_t* sh, LocalWindow<K>& w, Head& h) {
  Block<K> b;
  const std::int64_t top = products<K, veltkamp>(x, y, len, sh, b, h.zeros, h.nonfinite);
  if (top > w.top && top > code_zero) raise_window(w, h, top);
  const std::int64_t t = w.top;
  std::size_t i = 0;
  for (; i + lanes <= len; i += lanes)
    for (int lane = 0; lane < lanes; ++lane) add_component(w, lane, t, b, i + lane);
  for (; i < len; ++i) add_component(w, 0, t, b, i);
}

template <int K>
using BlockFn = void (*)(const double*, const double*, std::size_t, const std::int64_t*, LocalWindow<K>&, Head&);

#define EBLA_BLOCK_VARIANT(name, veltkamp, attributes)                                                        \
  template <int K>                                                                                            \
  attributes void name(const double* x, const double* y, std::size_t len, const std::int64_t* sh,            \
                       LocalWindow<K>& w, Head& h) {                                                          \
    accumulate_block<K, veltkamp>(x, y, len, sh, w, h);                                                       \
  }
#if defined(__x86_64__) && defined(__GNUC__)
EBLA_BLOCK_VARIANT(block_avx512, true, __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2"))))
EBLA_BLOCK_VARIANT(block_avx2, false, __attribute__((target("avx2,bmi,bmi2"))))
#endif
EBLA_BLOCK_VARIANT(block_baseline, false, )
#undef EBLA_BLOCK_VARIANT

template <int K>
BlockFn<K> block_for(detail::HostIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa == detail::HostIsa::avx512) return &block_avx512<K>;
  if (isa == detail::HostIsa::avx2) return &block_avx2<K>;
#endif
  (void)isa;
  return &block_baseline<K>;
}

// The local pass over one chunk of the block into st (empty): the chunk's own window, its
// lanes joined into st in lane order.
template <int K, class T>
void accumulate_chunk(const T* x, const T* y, std::size_t n, const std::int64_t* shift, BlockFn<K> run,
                      WindowState& st) {
  Head& h = st.h;
  auto w = std::make_unique<LocalWindow<K>>();
  for (std::size_t first = 0; first < n; first += block) {
    const std::size_t len = std::min(block, n - first);
    if constexpr (std::is_same<T, double>::value) {
      run(x + first, y + first, len, shift, *w, h);
    } else {  // a float block widened (exactly) to double
      double xd[block], yd[block];
      std::copy(x + first, x + first + len, xd);
      std::copy(y + first, y + first + len, yd);
      run(xd, yd, len, shift, *w, h);
    }
  }
  // the lanes joined into the state, in lane order (an empty slot holds zero sums)
  h.top = w->top;
  h.under_min = std::min(h.under_min, w->under_min);
  for (int lane = 0; lane < lanes; ++lane) {
    for (int j = 0; j < W; ++j) {
      if (w->count[lane][j] == 0) continue;
      st.count[j] += w->count[lane][j];
      for (int l = 0; l < K; ++l) join(st.sum[static_cast<std::size_t>(j * K + l)], level_sum(w->sum[lane][j], l));
    }
    join(h.under, level_sum(w->sum[lane][W], 0));
    h.under_count += w->count[lane][W];
  }
}

// The local pass over the block, merged into st: fixed chunks (a size set by n alone), each
// with a state of its own, on every host thread; then the chunks' states merged in chunk
// order by the merge of the ranks' states. The merge tree depends on n alone, so the state
// is the same bits for any thread count.
template <int K, class T>
void accumulate_levels(const T* x, const T* y, std::size_t n, const std::int64_t* shift, WindowState& st,
                       detail::HostIsa isa) {
  const BlockFn<K> run = block_for<K>(isa);
  const std::size_t chunk = detail::stream_chunk(n);
  std::vector<WindowState> part(detail::chunk_count(n, chunk));
  detail::for_each_chunk(part.size(), [&](std::size_t c) {
    const std::size_t first = c * chunk;
    init(part[c], K);
    accumulate_chunk<K>(x + first, y + first, std::min(chunk, n - first), shift, run, part[c]);
  });
  WindowState merged;
  for (const WindowState& p : part) {
    merge(st, p, merged);
    std::swap(st, merged);
  }
}

template <class T>
void accumulate_levels(const T* x, const T* y, std::size_t n, const std::int64_t* shift, WindowState& st,
                       detail::HostIsa isa) {
  switch (st.h.levels) {
    case 1: return accumulate_levels<1>(x, y, n, shift, st, isa);
    case 2: return accumulate_levels<2>(x, y, n, shift, st, isa);
    case 3: return accumulate_levels<3>(x, y, n, shift, st, isa);
    case 4: return accumulate_levels<4>(x, y, n, shift, st, isa);
    case 5: return accumulate_levels<5>(x, y, n, shift, st, isa);
    case 6: return accumulate_levels<6>(x, y, n, shift, st, isa);
    case 7: return accumulate_levels<7>(x, y, n, shift, st, isa);
    default: return accumulate_levels<8>(x, y, n, shift, st, isa);
  }
}
static_assert(detail::qdot_max_levels == 8, "accumulate_levels dispatches on up to 8 levels");

// This rank's share of the value when some rank holds NaN or Inf: its plain dot product if
// it holds some (a second pass, only then), else its input-precision sum (finite, as its
// plain dot would be unless that overflows, when this overflows too).
template <class T>
double plain_share(const T* x, const T* y, std::size_t n, const WindowState& st) {
  if (st.h.nonfinite > 0) return plain_dot(x, y, n);
  Sum total = st.h.under;
  for (int j = W - 1; j >= 0; --j) join(total, st.sum[static_cast<std::size_t>(j * st.h.levels)]);
  return total.s;
}

// inout = in (lower ranks) merged with inout.
void merge_windows(void* in, void* inout, int* len, MPI_Datatype*) {
  const unsigned char* a = static_cast<const unsigned char*>(in);
  unsigned char* b = static_cast<unsigned char*>(inout);
  WindowState sa, sb, r;
  for (int i = 0; i < *len; ++i) {
    const std::size_t bytes = unpack(a, sa);
    unpack(b, sb);
    merge(sa, sb, r);
    pack(r, b);
    a += bytes;
    b += bytes;
  }
}

// Computed levels per bin: those of the ladder but perforate, from the options as given
// (valid or not: every rank must reduce the same number of bytes).
int computed_levels(const QdotOptions& options, int input_t) {
  if (options.ladder.empty()) return input_t == 53 ? 3 : 2;  // [binary64,] binary32, binary16 (and perforate)
  const std::size_t k = options.ladder.size() - (options.ladder.back().perforate ? 1 : 0);
  return static_cast<int>(std::clamp<std::size_t>(k, 1, detail::qdot_max_levels));
}

// What must agree between the ranks: tolerance, policy and the resolved ladder.
std::uint64_t options_fingerprint(const QdotOptions& options, const std::vector<QdotLevel>& ladder) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(bit_cast<std::uint64_t>(options.tolerance));
  mix(static_cast<std::uint64_t>(options.policy));
  for (const auto& l : ladder) mix(l.perforate ? 0 : static_cast<std::uint64_t>(l.format.t));
  return h;
}

// A nonnegative long double rounded up to a double.
double round_up(long double v) {
  double d = static_cast<double>(v);
  if (static_cast<long double>(d) < v) d = std::nextafter(d, std::numeric_limits<double>::infinity());
  return d;
}

template <class T>
QdotResult one_collective(const BasicDistributedVector<T>& x, const BasicDistributedVector<T>& y,
                          const QdotOptions& options, QdotPlan* plan_used, detail::HostIsa isa) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string problem = local_problem(x, y);
  std::vector<QdotLevel> ladder;
  if (problem.empty()) {
    try {
      ladder = detail::resolve_ladder(options, input_t<T>, "ebla::mpi::qdot");
    } catch (const InvalidArgument& e) {
      problem = e.what();
    }
  }
  const int K = computed_levels(options, input_t<T>);
  WindowState st;
  init(st, K);
  if (problem.empty()) {
    st.h.options_min = st.h.options_max = options_fingerprint(options, ladder);
    QdotPlan levels_only;
    levels_only.ladder = ladder;
    const detail::QdotKernelLevels L = detail::kernel_levels(levels_only);
    accumulate_levels(x.data, y.data, x.local_size, L.shift, st, isa);
    st.h.plain = plain_share(x.data, y.data, x.local_size, st);
  } else {
    st.h.invalid = 1;
  }

  const std::size_t bytes = state_bytes(K);
  std::vector<unsigned char> send(bytes), recv(bytes);
  pack(st, send.data());
  MPI_Datatype type;
  MPI_Op op;
  check_mpi(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  check_mpi(MPI_Op_create(&merge_windows, 0, &op), "MPI_Op_create");  // not commutative: rank order
  const int rc = MPI_Allreduce(send.data(), recv.data(), 1, type, op, x.comm);
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  check_mpi(rc, "MPI_Allreduce");
  WindowState g;
  unpack(recv.data(), g);
  if (g.h.invalid > 0) throw_collective("ebla::mpi::qdot", problem, g.h.invalid);
  if (g.h.options_min != g.h.options_max)
    throw_invalid("ebla::mpi::qdot", "the options (tolerance, policy or ladder) differ between the ranks");

  // the histogram: the window's bins and the underflow as one pseudo-bin at its smallest bin
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<std::int64_t> hist(detail::qdot_hist_size, 0);
  std::int64_t n = g.h.zeros + g.h.nonfinite + g.h.under_count;
  for (int j = 0; j < W; ++j) {
    if (g.count[j] == 0) continue;
    hist[static_cast<std::size_t>(g.h.top - j + detail::qdot_offset)] = g.count[j];
    n += g.count[j];
  }
  if (g.h.under_count > 0) hist[static_cast<std::size_t>(g.h.under_min + detail::qdot_offset)] = g.h.under_count;
  hist[detail::qdot_slot_zero] = g.h.zeros;
  hist[detail::qdot_slot_nonfinite] = g.h.nonfinite;
  QdotPlan plan = detail::plan_from_histogram(hist.data(), static_cast<std::size_t>(n), input_t<T>, options);
  if (g.h.under_count > 0) plan.level[static_cast<std::size_t>(g.h.under_min - plan.e_min)] = 0;
  plan.select_seconds = seconds_since(t1);

  // the sums of the levels chosen, in bin order from the underflow up
  const detail::QdotKernelLevels L = detail::kernel_levels(plan);
  detail::QdotAccum acc;
  detail::qdot_accum_init(acc);
  Sum total{0, 0, 0};
  long double q = 0, b = 0;
  if (g.h.under_count > 0) {
    join(total, g.h.under);
    q += g.h.under.q;
    b += static_cast<long double>(L.c[0]) * g.h.under.q;
    acc.count[0] += g.h.under_count;
  }
  for (int j = W - 1; j >= 0; --j) {
    if (g.count[j] == 0) continue;
    const int l = plan.level[static_cast<std::size_t>(g.h.top - j - plan.e_min)];
    const Sum* level = g.sum.data() + static_cast<std::ptrdiff_t>(j) * K;
    acc.count[l] += g.count[j];
    const Sum& used = l == L.perforate ? level[0] : level[l];  // perforate: |fl(x_i y_i)| of level 0
    if (l != L.perforate) join(total, used);
    q += used.q;
    b += static_cast<long double>(L.c[l]) * used.q;
  }
  acc.s = total.s;
  acc.c = total.c;
  acc.q = round_up(q);
  acc.b = round_up(b);
  acc.zeros = g.h.zeros;
  acc.nonfinite = g.h.nonfinite;
  QdotResult r = detail::finish_result(plan, acc, plan.n);
  if (r.stats.nonfinite) r.value = g.h.plain;  // the sum of the ranks' plain dots
  r.stats.select_seconds = plan.select_seconds;
  r.stats.compute_seconds = seconds_since(t0);
  if (plan_used != nullptr) *plan_used = std::move(plan);
  return r;
}

}  // namespace

QdotResult qdot(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options,
                QdotPlan* plan_used) {
  return one_collective(x, y, options, plan_used, detail::best_host_isa());
}
QdotResult qdot(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotOptions& options,
                QdotPlan* plan_used) {
  return one_collective(x, y, options, plan_used, detail::best_host_isa());
}
QdotResult qdot_with_isa(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options,
                         QdotPlan* plan_used, detail::HostIsa isa) {
  return one_collective(x, y, options, plan_used, isa);
}
QdotResult qdot_with_isa(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotOptions& options,
                         QdotPlan* plan_used, detail::HostIsa isa) {
  return one_collective(x, y, options, plan_used, isa);
}

}  // namespace ebla::mpi
