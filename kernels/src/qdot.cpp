// qdot: options, the two selection policies, the certified bound, and the pointer API.
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_host.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <utility>

namespace ebla {

const char* to_string(QdotPolicy p) { return p == QdotPolicy::paper ? "paper" : "budget"; }

QdotPolicy qdot_policy_by_name(const std::string& name) {
  if (name == "budget") return QdotPolicy::budget;
  if (name == "paper") return QdotPolicy::paper;
  throw_invalid("ebla::qdot_policy_by_name", "unknown policy '" + name + "' (known: budget, paper)");
}

namespace {

// The pieces of `text` between the separators, empty ones included.
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> pieces(1);
  for (char c : text) {
    if (c == separator) pieces.emplace_back();
    else pieces.back() += c;
  }
  return pieces;
}

bool custom_name(const std::string& name) { return name.rfind("custom:", 0) == 0; }

// The level names of a ladder: separated by ';' where one appears, else by ',', a piece
// key=value after a custom format being part of it (custom:t=8,emin=-6,emax=7).
std::vector<std::string> level_names(const std::string& names) {
  if (names.find(';') != std::string::npos) return split(names, ';');
  std::vector<std::string> levels;
  for (const std::string& piece : split(names, ',')) {
    if (!levels.empty() && custom_name(levels.back()) && piece.find('=') != std::string::npos)
      levels.back() += "," + piece;
    else
      levels.push_back(piece);
  }
  return levels;
}

}  // namespace

std::vector<QdotLevel> qdot_ladder_by_names(const std::string& names) {
  const char* function = "ebla::qdot_ladder_by_names";
  std::vector<QdotLevel> ladder;
  if (names.empty()) return ladder;  // the default ladder
  for (const std::string& name : level_names(names)) {
    const std::string where = "level " + std::to_string(ladder.size() + 1) + " of the ladder '" + names + "'";
    if (name.empty()) throw_invalid(function, where + " is empty (levels are separated by ';' or ',')");
    const auto format = [&] { return format_by_name(name); };
    if (name == "perforate") ladder.push_back(QdotLevel::skip());
    else ladder.push_back(QdotLevel::of(under_option(std::string(function) + ": " + where, format)));
  }
  return ladder;
}

std::string to_string(const std::vector<QdotLevel>& ladder) {
  std::string s;
  for (const auto& l : ladder) s += (s.empty() ? "" : ",") + (l.perforate ? std::string("perforate") : format_name(l.format));
  return s;
}

int QdotPlan::bins() const {
  int b = 0;
  for (auto c : count) b += c > 0;
  return b;
}

std::vector<std::size_t> QdotPlan::count_per_level() const {
  std::vector<std::size_t> per(ladder.size(), 0);
  for (std::size_t j = 0; j < count.size(); ++j) per[level[j]] += static_cast<std::size_t>(count[j]);
  return per;
}

std::string QdotPlan::to_string() const {
  std::ostringstream o;
  o << "qdot plan: n = " << n << ", policy " << ebla::to_string(policy) << ", tolerance " << tolerance
    << ", ladder " << ebla::to_string(ladder) << "\n";
  o << "  " << nonzero << " nonzero products in " << bins() << " bins, exponents " << e_min << " .. "
    << e_max << (early_termination ? " (early termination: all at input precision)" : "")
    << (kept_top_bin ? " (top bin kept: the tolerance allowed perforating every product)" : "")
    << (nonfinite ? " (NaN/Inf in the input)" : "") << "\n";
  const auto per = count_per_level();
  for (std::size_t l = 0; l < ladder.size(); ++l)
    o << "  " << (ladder[l].perforate ? std::string("perforate") : format_name(ladder[l].format)) << ": "
      << per[l] << " components\n";
  for (std::size_t j = 0; j < count.size(); ++j)
    if (count[j] > 0)
      o << "  bin " << e_min + static_cast<int>(j) << ": " << count[j] << " -> "
        << (ladder[level[j]].perforate ? std::string("perforate") : format_name(ladder[level[j]].format))
        << "\n";
  return o.str();
}

namespace detail {

namespace {

// the double unit roundoff, as long double: 1 + u_d must not round back to 1
constexpr long double u_double = 0x1p-53L;

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Rounds a nonnegative bound constant up: a relative 2^-50 covers the few roundings
// of its evaluation in long double.
double round_up(long double v) { return static_cast<double>(v) * (1 + 0x1p-50); }

// gamma_k = k u / (1 - k u) for the double unit roundoff.
long double gamma_d(long double k) { return k * u_double / (1 - k * u_double); }

// ceil(log2 m) for m >= 1.
int ceil_log2(std::int64_t m) {
  int b = 0;
  while ((std::int64_t{1} << b) < m) ++b;
  return b;
}

// floor(log2 v) for v > 0, exactly (frexp gives v = f 2^k with f in [0.5, 1)).
int floor_log2(double v) {
  int k = 0;
  std::frexp(v, &k);
  return k - 1;
}

// Which level (3.9) gives a bin with score sigma, generalised to any ladder: the least
// precise format with t > sigma; perforate when sigma < 0; else the input precision.
std::uint8_t paper_precision(int sigma, const std::vector<QdotLevel>& ladder) {
  const int last = static_cast<int>(ladder.size()) - 1;
  if (sigma < 0 && ladder[last].perforate) return static_cast<std::uint8_t>(last);
  for (int l = last; l >= 1; --l)
    if (!ladder[l].perforate && ladder[l].format.t > sigma) return static_cast<std::uint8_t>(l);
  return 0;
}

// Seed 002: scores (3.10) with eps/N_bins (section 4.1), precision function (3.9),
// early termination (Theorem 3.6).
void select_paper(QdotPlan& plan) {
  const double eps = plan.tolerance / plan.bins();
  const int fl = floor_log2(eps);
  // Theorem 3.6: mu_hat = bits of the precision directly below the input
  const int mu_hat = plan.ladder.size() > 1 && !plan.ladder[1].perforate ? plan.ladder[1].format.t : 0;
  if (plan.e_max - plan.e_min <= -fl - mu_hat) {
    plan.early_termination = true;
    return;
  }
  for (std::size_t j = 0; j < plan.count.size(); ++j) {
    if (plan.count[j] == 0) continue;
    const int u_k = plan.e_min + static_cast<int>(j);  // exact bin (u_k - 1, u_k]
    const int sigma = ceil_log2(plan.count[j]) + u_k - plan.e_max - fl + 1;  // (3.10)
    plan.level[j] = paper_precision(sigma, plan.ladder);                      // (3.9)
  }
}

// A-priori error of one product of bin e at ladder level l, in units of 2^e: the distance
// between x~ y~, the exact product of the factors as the level rounds them (0 where it
// perforates), and x y. (Computing x~ y~ in double then rounds it once, as any double dot
// product rounds x y: that rounding is the input precision's, not the level's.)
// Write x = mx 2^ex, y = my 2^ey (mx, my in [1, 2), e = ex + ey). Rounding to t bits moves
// a factor by at most half an ulp, 2^(ex - t), and keeps |x~| <= 2^(ex + 1), so
//   |x~ y~ - x y| = |x~ (y~ - y) + y (x~ - x)| <= 2^(e - t) (|x~| 2^-ex + my) < 4 u 2^e,
// u = 2^-t; perforating costs |x y| < 4 2^e. Seed 002's Theorem 3.2 charges a relative
// (2u + u^2) |x y|, which is up to 8 u 2^e (|x y| < 2^(e+2), see qdot.hpp): the absolute
// form halves it. `model` scales both (QdotErrorModel: the default is this product's 4 u
// and 4; a stored vector's bins hold x_i alone, whose rounding errs by at most u 2^e and
// whose perforation by |x_i| < 2 2^e).
long double a_priori_error(const QdotLevel& level, int index, const QdotErrorModel& model) {
  if (level.perforate) return model.perforate;
  if (index == 0) return 0;  // the input precision: nothing rounded
  return model.format * std::ldexp(1.0L, -level.format.t);
}

// Certified budget: sum over approximated bins of M_e 2^e a_priori_error <= tol * L, with
// L = sum_e M_e 2^e <= |x|^T|y|; all in units of 2^e_max to stay in range.
//
// The budget is spent on the steps down the ladder (bin e from level l-1 to l) that save
// the most bits per unit of error: a step saves (t_{l-1} - t_l) M_e bits (t = 0 for
// perforate) and costs d_l M_e 2^e, d_l the growth of a_priori_error. Within a bin the
// ratio falls from one step to the next (each costs about 2^(t_{l-1} - t_l) times the one
// before), so taking the steps in order of falling ratio takes every bin's steps in ladder
// order; a step that no longer fits is skipped, and so are the later steps of its bin.
void select_budget(QdotPlan& plan, const QdotErrorModel& model) {
  auto unit = [&](std::size_t j) { return std::ldexp(1.0L, static_cast<int>(j) + plan.e_min - plan.e_max); };
  long double L = 0;
  for (std::size_t j = 0; j < plan.count.size(); ++j) L += plan.count[j] * unit(j);
  long double remaining = plan.tolerance * L * (1 - 0x1p-50L);  // rounded down
  const long double total = remaining;
  const int levels = static_cast<int>(plan.ladder.size());
  // The ratio of step l at bin e is bits_l / (d_l 2^e): the bin's size cancels, so for
  // each l the steps fall in ratio as e grows, and the order of all steps is a merge of
  // one list per l by the key log2(bits_l / d_l) - e (no sort needed).
  std::vector<long double> key0(static_cast<std::size_t>(levels), 0), d(static_cast<std::size_t>(levels), 0);
  for (int l = 1; l < levels; ++l) {
    const QdotLevel &from = plan.ladder[l - 1], &to = plan.ladder[l];
    d[l] = (a_priori_error(to, l, model) - a_priori_error(from, l - 1, model)) * (1 + 0x1p-50L);  // rounded up
    key0[l] = std::log2(static_cast<long double>(from.bits() - to.bits()) / d[l]);
  }
  const std::size_t bins = plan.count.size();
  std::vector<std::size_t> next(static_cast<std::size_t>(levels), 0);  // next bin of each list
  for (;;) {
    int best = 0;
    long double best_key = 0;
    for (int l = 1; l < levels; ++l) {
      while (next[l] < bins && plan.count[next[l]] == 0) ++next[l];
      if (next[l] >= bins) continue;
      const long double k = key0[l] - static_cast<long double>(next[l]);  // e - e_min drops out
      if (best == 0 || k > best_key) {  // ties: the earlier step of the ladder first
        best = l;
        best_key = k;
      }
    }
    if (best == 0) break;
    const std::size_t j = next[best]++;
    const long double cost = d[best] * plan.count[j] * unit(j);
    if (plan.level[j] != best - 1 || cost > remaining) continue;  // out of ladder order, or too dear
    plan.level[j] = static_cast<std::uint8_t>(best);
    remaining -= cost;
  }
  plan.budget_used = total > 0 ? static_cast<double>((total - remaining) / L) : 0.0;
}

}  // namespace

std::vector<QdotLevel> resolve_ladder(const QdotOptions& options, int input_t, const char* function) {
  const double tol = options.tolerance;
  if (!(tol > 0) || std::isinf(tol))
    throw_invalid(function, "tolerance = " + str(tol) + " must be positive and finite");
  if (options.plan_margin < QdotOptions::automatic_margin || options.plan_margin > 64)
    throw_invalid(function, "plan_margin = " + std::to_string(options.plan_margin) +
                                " must lie in [0, 64] (or be QdotOptions::automatic_margin, -1)");
  std::vector<QdotLevel> ladder = options.ladder;
  if (ladder.empty()) {
    if (input_t == 53) ladder.push_back(QdotLevel::of(formats::binary64()));
    ladder.push_back(QdotLevel::of(formats::binary32()));
    ladder.push_back(QdotLevel::of(formats::binary16()));
    ladder.push_back(QdotLevel::skip());
  }
  if (ladder.size() > static_cast<std::size_t>(qdot_max_levels))
    throw_invalid(function, "the ladder has " + std::to_string(ladder.size()) + " levels; at most " +
                                std::to_string(qdot_max_levels));
  if (ladder[0].perforate)
    throw_invalid(function, "the ladder must start with the input precision, not perforate");
  if (ladder[0].format.t != input_t)
    throw_invalid(function, "the ladder starts with " + format_name(ladder[0].format) + " (t = " +
                                std::to_string(ladder[0].format.t) + ") but the input has t = " +
                                std::to_string(input_t));
  for (std::size_t l = 0; l < ladder.size(); ++l) {
    if (ladder[l].perforate && l + 1 != ladder.size())
      throw_invalid(function, "perforate must be the last level of the ladder " + to_string(ladder));
    if (!ladder[l].perforate) validate(ladder[l].format, function);
    if (l > 0 && !ladder[l].perforate && ladder[l].format.t >= ladder[l - 1].format.t)
      throw_invalid(function, "the ladder " + to_string(ladder) +
                                  " is not ordered from the most to the least precise format");
  }
  return ladder;
}

// QdotOptions::perforate_all = false: a plan that perforates every filled bin computes its
// top bin (the largest products) at the least precise level that is not perforate. A bin
// moved up the ladder only loses error, so the policy's contract holds.
void keep_top_bin(QdotPlan& plan) {
  if (plan.count.empty() || !plan.ladder.back().perforate || plan.ladder.size() < 2) return;
  const std::uint8_t perforate = static_cast<std::uint8_t>(plan.ladder.size() - 1);
  for (std::size_t j = 0; j < plan.count.size(); ++j)
    if (plan.count[j] != 0 && plan.level[j] != perforate) return;
  plan.level.back() = static_cast<std::uint8_t>(perforate - 1);  // the top bin is filled
  plan.kept_top_bin = true;
}

QdotPlan plan_from_histogram(const std::int64_t* h, std::size_t n, int input_t, const QdotOptions& options,
                             const QdotErrorModel& model) {
  QdotPlan plan;
  plan.n = n;
  plan.input_t = input_t;
  plan.policy = options.policy;
  plan.tolerance = options.tolerance;
  plan.ladder = resolve_ladder(options, input_t, "ebla::qdot_select");
  plan.nonfinite = h[qdot_slot_nonfinite] > 0;
  int lo = qdot_bins, hi = -1;
  for (int j = 0; j < qdot_bins; ++j) {  // branch-free min/max of the nonempty bins
    const bool nonempty = h[j] > 0;
    lo = std::min(lo, nonempty ? j : qdot_bins);
    hi = std::max(hi, nonempty ? j : -1);
  }
  if (hi < 0) return plan;  // no nonzero product: empty plan
  plan.e_min = lo - qdot_offset;
  plan.e_max = hi - qdot_offset;
  plan.count.assign(h + lo, h + hi + 1);
  plan.level.assign(plan.count.size(), 0);
  for (auto c : plan.count) plan.nonzero += static_cast<std::size_t>(c);
  if (plan.policy == QdotPolicy::paper)
    select_paper(plan);
  else
    select_budget(plan, model);
  if (!options.perforate_all) keep_top_bin(plan);
  return plan;
}

QdotKernelLevels kernel_levels(const QdotPlan& plan) {
  QdotKernelLevels L;
  L.count = static_cast<int>(plan.ladder.size());
  L.e_min = plan.e_min;
  L.e_max = plan.e_max;
  for (int l = 0; l < L.count; ++l) {
    const QdotLevel& level = plan.ladder[l];
    if (level.perforate) {
      L.perforate = l;
      L.shift[l] = 0;
      L.c[l] = round_up(1 / (1 - u_double));  // |xy| <= fl(|x||y|)/(1-u)
      continue;
    }
    const int t = level.format.t;
    L.shift[l] = l == 0 ? 0 : 53 - t;
    if (l == 0) {
      // input precision: fl(x y) for double (u/(1-u) |fl(xy)|); exact for float
      L.c[l] = plan.input_t == 53 ? round_up(u_double / (1 - u_double)) : 0.0;
      continue;
    }
    const long double u = std::ldexp(1.0L, -t);
    const long double g = (1 + u) * (1 + u) * (1 + u_double) - 1;
    L.c[l] = round_up(g / ((1 - u) * (1 - u) * (1 - u_double)));
  }
  return L;
}

void check_plan(const QdotPlan& plan, std::size_t n, int input_t, const char* function) {
  if (plan.n != n)
    throw_invalid(function, "the plan was selected for vectors of length " + std::to_string(plan.n) +
                                ", not " + std::to_string(n));
  if (plan.input_t != input_t)
    throw_invalid(function, std::string("the plan was selected for ") +
                                (plan.input_t == 53 ? "double" : "float") + " input, not " +
                                (input_t == 53 ? "double" : "float"));
  if (plan.ladder.empty() || plan.level.size() != plan.count.size())
    throw_invalid(function, "the plan is malformed (ladder or bins missing)");
  for (auto l : plan.level)
    if (l >= plan.ladder.size()) throw_invalid(function, "the plan names a level beyond its ladder");
}

QdotResult finish_result(const QdotPlan& plan, const QdotAccum& acc, std::size_t n) {
  QdotResult r;
  // an overflowed running sum makes the compensation NaN (inf - inf): keep the sum itself
  r.value = std::isfinite(acc.s) ? acc.s + acc.c : acc.s;
  r.abs_sum = acc.q;
  QdotStats& st = r.stats;
  st.bins = plan.bins();
  st.e_min = plan.e_min;
  st.e_max = plan.e_max;
  st.count_per_level.assign(plan.ladder.size(), 0);
  for (std::size_t l = 0; l < plan.ladder.size(); ++l) st.count_per_level[l] = static_cast<std::size_t>(acc.count[l]);
  st.zeros = static_cast<std::size_t>(acc.zeros);
  st.outside_plan = static_cast<std::size_t>(acc.outside);
  st.nonfinite = acc.nonfinite > 0;
  st.early_termination = plan.early_termination;
  st.kept_top_bin = plan.kept_top_bin;
  st.select_seconds = plan.select_seconds;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (st.nonfinite || !std::isfinite(r.value) || !std::isfinite(acc.b) || !std::isfinite(acc.q)) {
    r.bound = r.quantization_bound = r.accumulation_bound = inf;
    return r;
  }
  const long double nn = static_cast<long double>(n);
  // sums of nonnegative terms, rounded at most n + 1 times each: true <= computed / (1 - gamma)
  const long double upward = 1 / (1 - gamma_d(nn + 1));
  // underflow: each nonzero product may lose up to 2^-1075 (double input only)
  long double products = 0;
  for (std::size_t l = 0; l < plan.ladder.size(); ++l) products += static_cast<long double>(acc.count[l]);
  const long double underflow = plan.input_t == 53 ? products * 0x1p-1074L : 0;
  const long double quant = acc.b * upward + underflow;
  const long double N = 2 * nn + 2;
  const long double accum = u_double / (1 - u_double) * std::fabs(static_cast<long double>(r.value)) +
                            gamma_d(N) * N * u_double * (1 + gamma_d(N)) * acc.q * upward;
  r.quantization_bound = round_up(quant);
  r.accumulation_bound = round_up(accum);
  r.bound = round_up(quant + accum);
  return r;
}

}  // namespace detail

// ---- raw pointers: host arrays -----------------------------------------------------

namespace {

template <class T>
using HostArray = Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class T>
void check_pointers(const T* x, const T* y, std::size_t n, const char* function) {
  // no array holds more bytes than PTRDIFF_MAX (such an n is a negative length cast to size_t)
  if (n > static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T))
    throw_invalid(function, "n = " + std::to_string(n) + " is more elements than any array holds (PTRDIFF_MAX / " +
                                std::to_string(sizeof(T)) + " = " +
                                std::to_string(static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T)) + ")");
  if (n > 0 && (x == nullptr || y == nullptr))
    throw_invalid(function, std::string(x == nullptr ? "x" : "y") + " is null but n = " + std::to_string(n));
  // nor does one run past the end of the address space (a length that overflows its pointer)
  const std::pair<const char*, const T*> arrays[] = {{"x", x}, {"y", y}};  // (nvcc deduces no braced list)
  for (const auto& [name, p] : arrays)
    if (reinterpret_cast<std::uintptr_t>(p) > UINTPTR_MAX - n * sizeof(T))
      throw_invalid(function, std::string(name) + " + n runs past the end of the address space (n = " +
                                  std::to_string(n) + ")");
}

template <class T>
QdotPlan select_pointers(const T* x, const T* y, std::size_t n, const QdotOptions& options) {
  check_pointers(x, y, n, "ebla::qdot_select");
  detail::resolve_ladder(options, std::is_same<T, double>::value ? 53 : 24, "ebla::qdot_select");  // before any work
  return detail::qdot_select_host(x, y, n, options);
}

template <class T>
QdotResult compute_pointers(const T* x, const T* y, std::size_t n, const QdotPlan& plan) {
  check_pointers(x, y, n, "ebla::qdot_compute");
  detail::check_plan(plan, n, std::is_same<T, double>::value ? 53 : 24, "ebla::qdot_compute");
  return detail::qdot_compute_host(x, y, n, plan);
}

// The plans of the last calls of this thread on given arrays: qdot tries the one of its
// arrays and options first (see QdotOptions::reuse_plan). A hint is only a guess: a stale
// one costs a second pass, never a different result.
struct PlanHint {
  const void* x = nullptr;
  const void* y = nullptr;
  std::size_t n = 0;
  QdotPlan plan;
  // the margins the last two plans needed (detail::needed_margin against the plan before
  // each); -1 while unknown
  int need = -1, need_before = -1;
};
constexpr std::size_t hint_slots = 8;

struct PlanHints {
  std::array<PlanHint, hint_slots> slot;
  std::size_t next = 0;  // the slot replaced next (round robin)

  // the hint for these arrays and options (ladder: the options' ladder, resolved)
  PlanHint* find(const void* x, const void* y, std::size_t n, const QdotOptions& o, int input_t,
                 const std::string& ladder) {
    for (auto& h : slot)
      if (h.x == x && h.y == y && h.n == n && h.plan.input_t == input_t && h.plan.policy == o.policy &&
          h.plan.tolerance == o.tolerance && to_string(h.plan.ladder) == ladder)
        return &h;
    return nullptr;
  }
  PlanHint& place(const void* x, const void* y, std::size_t n) {
    PlanHint& h = slot[next];
    next = (next + 1) % hint_slots;
    h.x = x;
    h.y = y;
    h.n = n;
    return h;
  }
};

PlanHints& plan_hints() {
  thread_local PlanHints hints;
  return hints;
}

}  // namespace

const QdotPlan* detail::plan_hint(const void* x, const void* y, std::size_t n, const QdotOptions& options,
                                  int input_t, int* widen) {
  if (!options.reuse_plan || n == 0) return nullptr;
  const std::string ladder = to_string(detail::resolve_ladder(options, input_t, "ebla::qdot_select"));
  const PlanHint* h = plan_hints().find(x, y, n, options, input_t, ladder);
  if (!h) return nullptr;
  // the margin the last two plans needed, and a bin to spare, within the options' margin
  const int most = detail::margin_of(options);
  if (widen) {
    const bool known = h->need >= 0 && h->need_before >= 0;
    *widen = std::min(most, known ? std::max(h->need, h->need_before) + 1 : 1);
  }
  return &h->plan;
}

void detail::remember_plan(const void* x, const void* y, std::size_t n, const QdotPlan& plan, int margin) {
  if (n == 0) return;
  PlanHint* h = nullptr;
  for (auto& slot : plan_hints().slot)
    if (slot.x == x && slot.y == y && slot.n == n && slot.plan.input_t == plan.input_t &&
        slot.plan.policy == plan.policy && slot.plan.tolerance == plan.tolerance &&
        to_string(slot.plan.ladder) == to_string(plan.ladder))
      h = &slot;
  if (!h) {
    h = &plan_hints().place(x, y, n);
    h->need = h->need_before = -1;
  } else {
    h->need_before = h->need;
    // only a margin that will be used is worth finding (a qdot without one skips the search)
    h->need = margin > 0 ? detail::needed_margin(h->plan, plan, margin) : 0;
  }
  h->plan = plan;
}

void detail::forget_plans(const void* array) {
  for (auto& slot : plan_hints().slot)
    if (slot.x == array || slot.y == array) slot = PlanHint{};
}

namespace {

template <class T>
QdotResult qdot_pointers(const T* x, const T* y, std::size_t n, const QdotOptions& options) {
  constexpr int input_t = std::is_same<T, double>::value ? 53 : 24;
  check_pointers(x, y, n, "ebla::qdot_select");
  int widen = 0;
  const QdotPlan* hint = detail::plan_hint(x, y, n, options, input_t, &widen);
  if (hint) {  // one pass, where the last plan on these arrays still holds
    QdotPlan selected;
    QdotResult r = detail::qdot_one_pass_host(x, y, n, options, *hint, selected, detail::best_host_isa(), widen);
    detail::remember_plan(x, y, n, selected, detail::margin_of(options));
    return r;
  }
  const QdotPlan plan = select_pointers(x, y, n, options);
  // the same data as the selection: the plan's counts per level are this call's
  QdotResult r = detail::qdot_compute_host(x, y, n, plan, detail::best_host_isa(), false);
  r.stats.select_seconds = plan.select_seconds;
  r.stats.passes = 2;
  if (options.reuse_plan) detail::remember_plan(x, y, n, plan, detail::margin_of(options));
  return r;
}

}  // namespace

QdotPlan qdot_select(const double* x, const double* y, std::size_t n, const QdotOptions& o) {
  return select_pointers(x, y, n, o);
}
QdotPlan qdot_select(const float* x, const float* y, std::size_t n, const QdotOptions& o) {
  return select_pointers(x, y, n, o);
}
QdotResult qdot_compute(const double* x, const double* y, std::size_t n, const QdotPlan& p) {
  return compute_pointers(x, y, n, p);
}
QdotResult qdot_compute(const float* x, const float* y, std::size_t n, const QdotPlan& p) {
  return compute_pointers(x, y, n, p);
}
QdotResult qdot(const double* x, const double* y, std::size_t n, const QdotOptions& o) {
  return qdot_pointers(x, y, n, o);
}
QdotResult qdot(const float* x, const float* y, std::size_t n, const QdotOptions& o) {
  return qdot_pointers(x, y, n, o);
}

}  // namespace ebla
