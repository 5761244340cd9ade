// ebla qdot: the quantized dot product on the synthetic data of seed 002, section 4.1.
//
// One run (the default) prints value, exact reference, error, bound, levels and times.
// --experiment runs the seed's experiments: tightness (Fig. 1), effectiveness (Fig. 2),
// speedup and efficiency (Fig. 3, Definition 2.1); --compare-policies runs both selection
// policies on the same data. Each prints tables and, with --output, writes an HDF5 file
// (apps/plot_qdot.py draws the figures from it).
//
// Errors are measured against the exact dot product (an integer superaccumulator), not
// against a double dot product as in the seed: the bound certifies the exact value, and at
// tolerance 1e-16 the error of a double dot product would dominate the comparison. The
// seed's measure (relative to the plain double dot product) is recorded too.
#include "commands.hpp"

#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/hdf5.hpp>
#include <ebla/core/memory.hpp>
#include <ebla/kernels/qdot.hpp>

#include <KokkosBlas1_dot.hpp>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ebla::cli {

namespace {

// ---- small helpers ------------------------------------------------------------------

std::string join(const std::vector<std::string>& items, const char* sep = ",") {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::string number_text(double v) { return strf("%g", v); }

std::vector<std::string> numbers_text(const std::vector<double>& v) {
  std::vector<std::string> s;
  for (double x : v) s.push_back(number_text(x));
  return s;
}

// JSON has no inf or nan: those become null.
std::string json_number(double v) { return std::isfinite(v) ? strf("%.17g", v) : "null"; }

std::string percent(double fraction) { return strf("%.1f", 100 * fraction); }

// ---- statistics over samples --------------------------------------------------------

struct Stats {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  double min() const { return values.empty() ? NAN : *std::min_element(values.begin(), values.end()); }
  double max() const { return values.empty() ? NAN : *std::max_element(values.begin(), values.end()); }
  double mean() const {
    double s = 0;
    for (double v : values) s += v;
    return values.empty() ? NAN : s / static_cast<double>(values.size());
  }
  double median() const {
    if (values.empty()) return NAN;
    std::vector<double> v = values;
    const std::size_t h = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
    if (v.size() % 2) return v[h];
    return (v[h] + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h))) / 2;
  }
};

// ---- tables: aligned text, or Markdown for the docs ----------------------------------

class Table {
public:
  /// `groups` (optional) label consecutive columns: (label, number of columns), "" for none.
  using Groups = std::vector<std::pair<std::string, std::size_t>>;
  explicit Table(std::vector<std::string> header, Groups groups = {})
      : header_(std::move(header)), groups_(std::move(groups)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void print(const std::string& title, bool markdown) const {
    std::printf(title.empty() ? "\n" : "\n%s\n", title.c_str());
    if (markdown) return print_markdown();
    std::vector<std::size_t> w(header_.size(), 0);
    for (std::size_t c = 0; c < header_.size(); ++c) {
      w[c] = header_[c].size();
      for (const auto& r : rows_) w[c] = std::max(w[c], r[c].size());
    }
    if (!groups_.empty()) print_groups(w);
    print_row(header_, w);
    for (const auto& r : rows_) print_row(r, w);
  }

private:
  // First column left-aligned (labels), the others right-aligned (numbers).
  static void print_row(const std::vector<std::string>& r, const std::vector<std::size_t>& w) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(w[c] - r[c].size(), ' ');
      line += c == 0 ? r[c] + pad : "  " + pad + r[c];
    }
    std::printf("%s\n", line.c_str());
  }
  // A group label centred in dashes over the columns it spans.
  void print_groups(const std::vector<std::size_t>& w) const {
    std::string line;
    std::size_t c = 0;
    for (const auto& [label, span] : groups_) {
      std::size_t width = 0;
      for (std::size_t k = c; k < c + span && k < w.size(); ++k) width += w[k] + (k == 0 ? 0 : 2);
      const std::size_t lead = c == 0 ? 0 : 2;  // the separator before the group's first column
      std::string text = label.empty() ? "" : " " + label + " ";
      const char fill = label.empty() ? ' ' : '-';
      if (text.size() > width - lead) text = text.substr(0, width - lead);
      const std::size_t left = (width - lead - text.size()) / 2;
      line += std::string(lead, ' ') + std::string(left, fill) + text +
              std::string(width - lead - text.size() - left, fill);
      c += span;
    }
    std::printf("%s\n", line.c_str());
  }
  // Markdown has no spanning cells: a group's label prefixes its columns' headers.
  std::vector<std::string> flat_header() const {
    std::vector<std::string> h = header_;
    std::size_t c = 0;
    for (const auto& [label, span] : groups_) {
      for (std::size_t k = c; k < c + span && k < h.size(); ++k)
        if (!label.empty()) h[k] = label + " " + h[k];
      c += span;
    }
    return h;
  }
  void print_markdown() const {
    std::printf("\n| %s |\n|", join(flat_header(), " | ").c_str());
    for (std::size_t c = 0; c < header_.size(); ++c) std::printf(c == 0 ? ":---|" : "---:|");
    std::printf("\n");
    for (const auto& r : rows_) std::printf("| %s |\n", join(r, " | ").c_str());
  }
  std::vector<std::string> header_;
  Groups groups_;
  std::vector<std::vector<std::string>> rows_;
};

// ---- the exact dot product ---------------------------------------------------------------

__extension__ typedef unsigned __int128 u128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet

// Exact sum of products of doubles in a fixed-point integer accumulator wide enough for
// any product of two doubles (2^-2148 .. 2^2048): limb k holds 32 bits of weight
// 2^(32k - 2148) in an int64, so 2^30 additions fit before carries must be propagated.
class ExactSum {
public:
  void add_product(double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b)) {
      nonfinite_ = true;
      return;
    }
    if (a == 0 || b == 0) return;
    const Parts pa = parts(a), pb = parts(b);
    const u128 m = static_cast<u128>(pa.mantissa) * pb.mantissa;  // < 2^106
    const int bit = pa.exponent + pb.exponent + offset;                                    // >= 0
    const int k = bit / 32, s = bit % 32;
    const u128 low = m << s;                                        // bits 0..127
    const std::uint64_t high = s ? static_cast<std::uint64_t>(m >> (128 - s)) : 0;  // bits 128..
    const std::int64_t sign = pa.negative != pb.negative ? -1 : 1;
    for (int j = 0; j < 4; ++j) limb_[k + j] += sign * static_cast<std::int64_t>((low >> (32 * j)) & mask);
    limb_[k + 4] += sign * static_cast<std::int64_t>(high);
    if (++pending_ == (std::int64_t{1} << 30)) carry(limb_);
  }
  void add(double v) { add_product(v, 1.0); }

  /// The sum rounded to the nearest double (a second rounding only for subnormal sums).
  double to_double() const {
    if (nonfinite_) return NAN;
    Limbs l = limb_;
    carry(l);
    const bool negative = l[limbs - 1] < 0;  // after carry() only the top limb has a sign
    if (negative) {
      for (auto& v : l) v = -v;
      carry(l);
    }
    int h = limbs - 1;
    while (h >= 0 && l[h] == 0) --h;
    if (h < 0) return 0.0;
    auto at = [&](int i) { return i >= 0 ? static_cast<u128>(l[i]) : 0; };
    u128 m = (at(h) << 64) | (at(h - 1) << 32) | at(h - 2);  // >= 65 significant bits
    for (int i = 0; i < h - 2; ++i)
      if (l[i] != 0) m |= 1;  // sticky bit, far below the rounding position
    const double r = std::ldexp(static_cast<double>(m), 32 * (h - 2) - offset);
    return negative ? -r : r;
  }

private:
  static constexpr int offset = 2148;  // -(lowest exponent of a product of subnormals)
  static constexpr int limbs = 136;    // 4196 bits of products, carries of 2^40 terms, spare
  static constexpr u128 mask = 0xffffffffu;
  using Limbs = std::array<std::int64_t, limbs>;
  struct Parts {
    std::uint64_t mantissa;
    int exponent;
    bool negative;
  };
  static Parts parts(double v) {  // v = +-mantissa 2^exponent, mantissa an integer
    const std::uint64_t bits = bit_cast<std::uint64_t>(v);
    const int field = static_cast<int>((bits >> 52) & 0x7ff);
    const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
    if (field == 0) return {fraction, -1074, (bits >> 63) != 0};
    return {fraction | (std::uint64_t{1} << 52), field - 1075, (bits >> 63) != 0};
  }
  static void carry(Limbs& l) {  // every limb but the top one into [0, 2^32)
    for (int i = 0; i + 1 < limbs; ++i) {
      const std::int64_t c = l[i] >> 32;  // floor division (arithmetic shift)
      l[i] -= c * (std::int64_t{1} << 32);
      l[i + 1] += c;
    }
  }
  Limbs limb_{};
  std::int64_t pending_ = 0;
  bool nonfinite_ = false;
};

// ---- synthetic data (seed 002, section 4.1) ----------------------------------------------

enum class Dist { A, B };

const char* dist_name(Dist d) { return d == Dist::A ? "A" : "B"; }

constexpr const char* dist_definition =
    "components s 2^p with s ~ U[0.5, 1); A: p uniform on the integers in [-t/2, t/2]; "
    "B: p = round(N(0, sd = t/2)). x and y independent.";

std::uint64_t splitmix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A seed per (seed, distribution, t, n, sample): the data of a sample do not depend on
// which other parameters are swept, so every experiment and a single run with the same
// (dist, t, n) see the same vectors (sample 0 is the single run's).
std::uint64_t data_seed(std::int64_t seed, Dist d, double t, std::int64_t n, int sample) {
  std::uint64_t h = splitmix(static_cast<std::uint64_t>(seed));
  h = splitmix(h ^ static_cast<std::uint64_t>(d));
  h = splitmix(h ^ bit_cast<std::uint64_t>(t));
  h = splitmix(h ^ static_cast<std::uint64_t>(n));
  return splitmix(h ^ static_cast<std::uint64_t>(sample));
}

// The seed writes p ~ U[-t/2, t/2] and p ~ N(0, t/2) for the exponent of s 2^p; an
// exponent is an integer, so p is drawn from the integers (A) or rounded (B), and the
// second parameter of N is taken as the standard deviation.
template <class T>
void fill(std::vector<T>& v, Dist d, double t, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> significand(0.5, 1.0);
  std::uniform_int_distribution<int> uniform_p(static_cast<int>(std::ceil(-t / 2)),
                                               static_cast<int>(std::floor(t / 2)));
  std::normal_distribution<double> normal_p(0.0, t / 2);
  for (auto& e : v) {
    const double s = significand(gen);
    const int p = d == Dist::A ? uniform_p(gen) : static_cast<int>(std::lround(normal_p(gen)));
    e = static_cast<T>(std::ldexp(s, p));
  }
}

template <class T>
struct Data {
  std::vector<T> x, y;
  std::size_t n() const { return x.size(); }
};

template <class T>
Data<T> generate(Dist d, double t, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Data<T> data{std::vector<T>(static_cast<std::size_t>(n)), std::vector<T>(static_cast<std::size_t>(n))};
  fill(data.x, d, t, gen);
  fill(data.y, d, t, gen);
  return data;
}

// ---- measurements --------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

// Best (least) wall time of `reps` calls: the least disturbed by the machine.
template <class F>
double best_seconds(int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// Repetitions for timing: about 2e6 processed components per measurement, 3 .. 1000.
int auto_reps(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>(2000000 / std::max<std::int64_t>(n, 1), 3, 1000));
}

volatile double sink;  // keeps timed calls from being optimised away

template <class T>
using HostArray = Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// The plain dot product: Kokkos Kernels' BLAS dot on the same arrays.
template <class T>
double plain_dot(const Data<T>& d) {
  return static_cast<double>(KokkosBlas::dot(HostArray<T>(d.x.data(), d.n()), HostArray<T>(d.y.data(), d.n())));
}

/// The exact dot product and the plain one of a sample.
struct Reference {
  ExactSum sum;
  double exact = 0;
  double dot_value = 0;
  double dot_seconds = 0;
};

template <class T>
Reference reference(const Data<T>& d, int reps) {
  Reference r;
  for (std::size_t i = 0; i < d.n(); ++i) r.sum.add_product(d.x[i], d.y[i]);  // products of floats are exact doubles
  r.exact = r.sum.to_double();
  r.dot_value = plain_dot(d);
  if (reps > 0) r.dot_seconds = best_seconds(reps, [&] { sink = plain_dot(d); });
  return r;
}

// |approx - exact| / |exact| from the exact sum: the difference is formed exactly and
// rounded once, so the relative error is itself accurate to a few units in the last place.
double relative_error(const Reference& ref, double approx) {
  if (!std::isfinite(approx)) return NAN;
  ExactSum diff = ref.sum;
  diff.add(-approx);
  const double err = std::fabs(diff.to_double());
  return err == 0 ? 0.0 : err / std::fabs(ref.exact);
}

/// One qdot on one sample.
struct Eval {
  QdotResult result;
  double relerr = 0, relerr_dot = 0, bound_rel = 0;
  double select_seconds = 0, compute_seconds = 0;  // best of reps (0 if not timed)
};

template <class T>
Eval evaluate(const Data<T>& d, const Reference& ref, const QdotOptions& options, int reps) {
  Eval e;
  const QdotPlan plan = qdot_select(d.x.data(), d.y.data(), d.n(), options);
  e.result = qdot_compute(d.x.data(), d.y.data(), d.n(), plan);
  e.result.stats.select_seconds = plan.select_seconds;
  const double value = e.result.value;
  e.relerr = relative_error(ref, value);
  e.relerr_dot = value == ref.dot_value ? 0.0 : std::fabs(value - ref.dot_value) / std::fabs(ref.dot_value);
  e.bound_rel = e.result.bound / std::fabs(ref.exact);
  if (reps > 0) {
    e.select_seconds = best_seconds(reps, [&] { sink = qdot_select(d.x.data(), d.y.data(), d.n(), options).tolerance; });
    e.compute_seconds = best_seconds(reps, [&] { sink = qdot_compute(d.x.data(), d.y.data(), d.n(), plan).value; });
  }
  return e;
}

// ---- configuration: the options, parsed and validated --------------------------------------

struct QdotCliOptions {
  std::string experiment;
  bool compare_policies = false;
  std::vector<std::string> dists, t_values, sizes, tolerances;
  std::string policy = "budget";
  std::string ladder;
  std::int64_t seed = 1;
  static constexpr int unset = std::numeric_limits<int>::min();
  int samples = unset;  // unset: the mode's default
  int reps = 0;
  bool use_float = false, json = false, markdown = false;
  std::string output;
};

enum class Mode { run, tightness, effectiveness, speedup, compare };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::run: return "run";
    case Mode::tightness: return "tightness";
    case Mode::effectiveness: return "effectiveness";
    case Mode::speedup: return "speedup";
    case Mode::compare: return "compare_policies";
  }
  return "?";
}

struct Config {
  Mode mode = Mode::run;
  std::vector<Dist> dists;
  std::vector<double> t_given;  // empty: the defaults of each distribution
  std::vector<std::int64_t> sizes;
  std::vector<double> tolerances;
  std::vector<QdotPolicy> policies;
  std::vector<QdotLevel> ladder;  // as given (empty: the seed's)
  std::vector<std::string> levels;  // names of the resolved ladder
  std::int64_t seed = 1;
  int samples = 1;
  int reps = 0;  // 0: auto_reps(n)
  bool use_float = false, json = false, markdown = false;
  std::string output;

  bool timed() const { return mode == Mode::run || mode == Mode::speedup; }
  int reps_for(std::int64_t n) const { return !timed() ? 0 : reps > 0 ? reps : auto_reps(n); }
  std::vector<double> t_for(Dist d) const;
  std::string input() const { return use_float ? "float" : "double"; }
};

std::vector<double> arithmetic(double first, double last, double step) {
  std::vector<double> v;
  for (double t = first; t <= last; t += step) v.push_back(t);
  return v;
}

std::vector<double> decades(int first, int last) {
  std::vector<double> v;
  for (int k = first; k <= last; ++k) v.push_back(std::pow(10.0, k));
  return v;
}

// Fig. 1 of the seed: A with t in {5i : 2 <= i <= 20}, B with t in {2i : 1 <= i <= 15};
// Figs. 2 and 3: t in {5, 9, 13}.
std::vector<double> Config::t_for(Dist d) const {
  if (!t_given.empty()) return t_given;
  if (mode == Mode::tightness) return d == Dist::A ? arithmetic(10, 100, 5) : arithmetic(2, 30, 2);
  if (mode == Mode::run) return {9};
  return {5, 9, 13};
}

Mode parse_mode(const QdotCliOptions& o) {
  if (o.experiment.empty()) return o.compare_policies ? Mode::compare : Mode::run;
  Mode m;
  if (o.experiment == "tightness") m = Mode::tightness;
  else if (o.experiment == "effectiveness") m = Mode::effectiveness;
  else if (o.experiment == "speedup") m = Mode::speedup;
  else if (o.experiment == "compare-policies") m = Mode::compare;
  else
    throw_invalid("ebla qdot --experiment", "unknown experiment '" + o.experiment +
                                                "' (known: tightness, effectiveness, speedup, compare-policies)");
  if (o.compare_policies && m != Mode::compare)
    throw_invalid("ebla qdot --compare-policies", "is an experiment of its own; it cannot run with --experiment " +
                                                      o.experiment);
  return m;
}

std::vector<Dist> parse_dists(const std::vector<std::string>& names, Mode m) {
  if (names.empty()) return m == Mode::run || m == Mode::compare ? std::vector<Dist>{Dist::B}
                                                                 : std::vector<Dist>{Dist::A, Dist::B};
  std::vector<Dist> d;
  for (const auto& s : names) {
    if (s == "A" || s == "a") d.push_back(Dist::A);
    else if (s == "B" || s == "b") d.push_back(Dist::B);
    else throw_invalid("ebla qdot --dist", "unknown distribution '" + s + "' (known: A, B)");
  }
  return d;
}

std::vector<double> parse_t(const std::vector<std::string>& texts) {
  std::vector<double> t;
  for (const auto& s : texts) {
    const double v = parse_double(s, "ebla qdot --t");
    if (!(v > 0 && v <= 2000))
      throw_invalid("ebla qdot --t", "t = '" + s + "' is outside (0, 2000] (exponents must stay in range)");
    t.push_back(v);
  }
  return t;
}

std::vector<std::int64_t> parse_sizes(const std::vector<std::string>& texts, Mode m) {
  std::vector<double> values;
  for (const auto& s : texts) values.push_back(parse_double(s, "ebla qdot --n"));
  if (texts.empty()) values = m == Mode::run ? std::vector<double>{1e6}
                              : m == Mode::speedup ? decades(4, 6)
                              : m == Mode::tightness ? decades(2, 5)
                              : m == Mode::compare ? std::vector<double>{1e5}
                                                   : decades(3, 5);
  std::vector<std::int64_t> n;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    const std::string text = texts.empty() ? number_text(v) : texts[i];
    if (v < 0) throw_invalid("ebla qdot --n", "n = " + text + " is negative");
    if (!(v == std::floor(v))) throw_invalid("ebla qdot --n", "n = " + text + " is not a whole number");
    if (v > 1e9) throw_invalid("ebla qdot --n", "n = " + text + " exceeds 1e9");
    if (v == 0 && m != Mode::run)
      throw_invalid("ebla qdot --n", "n = 0 in an experiment (relative errors need x^T y != 0)");
    n.push_back(static_cast<std::int64_t>(v));
  }
  return n;
}

std::vector<double> parse_tolerances(const std::vector<std::string>& texts, Mode m) {
  if (texts.empty()) {
    if (m == Mode::run) return {1e-8};
    if (m == Mode::tightness) return {1e-16};
    return decades(-15, -1);
  }
  std::vector<double> tol;
  for (const auto& s : texts) {
    const double v = parse_double(s, "ebla qdot --tol");
    if (!(v > 0) || !std::isfinite(v))
      throw_invalid("ebla qdot --tol", "tolerance " + s + " is not a positive finite number");
    tol.push_back(v);
  }
  return tol;
}

// A single run takes one value of each parameter; sweeps are experiments.
void require_single(const Config& c) {
  auto one = [](std::size_t count, const char* option) {
    if (count != 1)
      throw_invalid(std::string("ebla qdot ") + option,
                    "a single run takes one value (got " + std::to_string(count) + "); use --experiment to sweep");
  };
  one(c.dists.size(), "--dist");
  one(c.t_for(Dist::B).size(), "--t");
  one(c.sizes.size(), "--n");
  one(c.tolerances.size(), "--tol");
}

Config make_config(const QdotCliOptions& o) {
  Config c;
  c.mode = parse_mode(o);
  c.dists = parse_dists(o.dists, c.mode);
  c.t_given = parse_t(o.t_values);
  c.sizes = parse_sizes(o.sizes, c.mode);
  c.tolerances = parse_tolerances(o.tolerances, c.mode);
  c.policies = c.mode == Mode::compare ? std::vector<QdotPolicy>{QdotPolicy::budget, QdotPolicy::paper}
                                       : std::vector<QdotPolicy>{qdot_policy_by_name(o.policy)};
  if (!o.ladder.empty()) c.ladder = qdot_ladder_by_names(o.ladder);
  c.seed = o.seed;
  const int default_samples = c.mode == Mode::run ? 1 : c.mode == Mode::speedup ? 3 : 5;
  c.samples = o.samples != QdotCliOptions::unset ? o.samples : default_samples;
  if (c.samples < 1 || (c.mode == Mode::run && c.samples != 1))
    throw_invalid("ebla qdot --samples", std::to_string(o.samples) +
                                              (c.mode == Mode::run ? ": a single run has one sample"
                                                                   : " is not a positive number of samples"));
  if (o.reps < 0 || o.reps > 100000)  // the automatic choice takes 3..1000
    throw_invalid("ebla qdot --reps", std::to_string(o.reps) + " is not in 0..100000 (0: automatic)");
  c.reps = o.reps;
  c.use_float = o.use_float;
  c.json = o.json;
  c.markdown = o.markdown;
  c.output = o.output;
  if (c.json && c.mode != Mode::run)
    throw_invalid("ebla qdot --json", "prints a single run; experiments print tables and write --output");
  if (c.mode == Mode::run) require_single(c);
  // x and y of the largest n, in the input's type, before anything is drawn
  const std::int64_t n = *std::max_element(c.sizes.begin(), c.sizes.end());
  detail::check_memory("ebla qdot --n", "n = " + std::to_string(n) + " (x and y)",
                       2.0 * (c.use_float ? sizeof(float) : sizeof(double)) * static_cast<double>(n));
  return c;
}

QdotOptions qdot_options(const Config& c, double tolerance, QdotPolicy policy) {
  QdotOptions o;
  o.tolerance = tolerance;
  o.policy = policy;
  o.ladder = c.ladder;
  return o;
}

// Validates the qdot options (tolerances, ladder) before any work, and names the levels.
void resolve_ladder(Config& c) {
  const double one[1] = {1.0};
  const float onef[1] = {1.0f};
  for (QdotPolicy p : c.policies)
    for (double tol : c.tolerances) {
      const QdotPlan plan = c.use_float ? qdot_select(onef, onef, 1, qdot_options(c, tol, p))
                                        : qdot_select(one, one, 1, qdot_options(c, tol, p));
      c.levels.clear();
      for (const auto& l : plan.ladder) c.levels.push_back(l.perforate ? "perforate" : format_name(l.format));
    }
}

// ---- sweeps: every experiment is a loop over (dist, t, n) x samples x tolerances x policies --

struct Point {
  Dist dist;
  double t;
  std::int64_t n;
};

/// Statistics over the samples of one (point, tolerance, policy).
struct Row {
  Point point;
  double tolerance;
  QdotPolicy policy;
  Stats relerr, relerr_dot, bound_rel, gap, bins;
  Stats select_s, compute_s, dot_s, speedup, efficiency;
  std::vector<Stats> fraction;  // per ladder level
};

Row make_row(const Point& p, double tolerance, QdotPolicy policy) {
  Row r;
  r.point = p;
  r.tolerance = tolerance;
  r.policy = policy;
  return r;
}

void record(Row& row, const Eval& e, const Reference& ref, std::int64_t n, bool timed) {
  row.relerr.add(e.relerr);
  row.relerr_dot.add(e.relerr_dot);
  row.bound_rel.add(e.bound_rel);
  row.gap.add(e.bound_rel - e.relerr);
  row.bins.add(e.result.stats.bins);
  const auto& counts = e.result.stats.count_per_level;
  row.fraction.resize(counts.size());
  for (std::size_t l = 0; l < counts.size(); ++l)
    row.fraction[l].add(static_cast<double>(counts[l]) / static_cast<double>(std::max<std::int64_t>(n, 1)));
  if (!timed) return;
  row.select_s.add(e.select_seconds);
  row.compute_s.add(e.compute_seconds);
  row.dot_s.add(ref.dot_seconds);
  row.speedup.add(ref.dot_seconds / e.compute_seconds);                      // (2.6)
  row.efficiency.add(ref.dot_seconds / (e.select_seconds + ref.dot_seconds));  // (2.5)
}

template <class T>
void sweep_point(const Config& c, const Point& p, std::vector<Row>& rows) {
  const std::size_t first = rows.size();
  for (double tol : c.tolerances)
    for (QdotPolicy policy : c.policies) rows.push_back(make_row(p, tol, policy));
  const int reps = c.reps_for(p.n);
  for (int s = 0; s < c.samples; ++s) {
    const Data<T> data = generate<T>(p.dist, p.t, p.n, data_seed(c.seed, p.dist, p.t, p.n, s));
    const Reference ref = reference(data, reps);
    for (std::size_t r = first; r < rows.size(); ++r) {
      const Eval e = evaluate(data, ref, qdot_options(c, rows[r].tolerance, rows[r].policy), reps);
      record(rows[r], e, ref, p.n, c.timed());
    }
  }
}

std::vector<Row> sweep(const Config& c) {
  std::vector<Row> rows;
  for (Dist d : c.dists)
    for (double t : c.t_for(d))
      for (std::int64_t n : c.sizes) {
        const Point p{d, t, n};
        if (c.use_float) sweep_point<float>(c, p, rows);
        else sweep_point<double>(c, p, rows);
      }
  return rows;
}

// ---- tables ---------------------------------------------------------------------------------

std::vector<std::string> short_levels(const Config& c) {  // binary64 -> b64%, perforate -> perf%
  std::vector<std::string> s;
  for (const auto& l : c.levels)
    s.push_back((l == "perforate" ? std::string("perf") : l.rfind("binary", 0) == 0 ? "b" + l.substr(6) : l) + "%");
  return s;
}

void add_fractions(std::vector<std::string>& cells, const Row& r) {
  for (const auto& f : r.fraction) cells.push_back(percent(f.mean()));
}

std::string point_title(const Config& c, const Point& p) {
  return strf("%s, t = %g, n = %lld: %d sample%s, %s input", dist_name(p.dist), p.t,
              static_cast<long long>(p.n), c.samples, c.samples == 1 ? "" : "s", c.input().c_str());
}

// Rows of the same (dist, t, n) are consecutive: calls f(point, first, last) per block.
template <class F>
void for_each_point(const std::vector<Row>& rows, F&& f) {
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j < rows.size() && rows[j].point.dist == rows[i].point.dist && rows[j].point.t == rows[i].point.t &&
           rows[j].point.n == rows[i].point.n)
      ++j;
    f(rows[i].point, i, j);
    i = j;
  }
}

// Fig. 1: the gap bound/|x^T y| - relerr, over all t of a distribution, per n.
void print_tightness(const Config& c, const std::vector<Row>& rows) {
  for (Dist d : c.dists)
    for (double tol : c.tolerances) {
      Table table({"n", "samples", "gap min", "gap median", "gap max", "relerr max", "bound/|xy| median", "violations"});
      for (std::int64_t n : c.sizes) {
        Stats gap, relerr, bound;
        for (const Row& r : rows)
          if (r.point.dist == d && r.point.n == n && r.tolerance == tol) {
            for (double v : r.gap.values) gap.add(v);
            for (double v : r.relerr.values) relerr.add(v);
            for (double v : r.bound_rel.values) bound.add(v);
          }
        const auto violations = std::count_if(gap.values.begin(), gap.values.end(), [](double g) { return g < 0; });
        table.add({std::to_string(n), std::to_string(gap.values.size()), strf("%.3e", gap.min()),
                   strf("%.3e", gap.median()), strf("%.3e", gap.max()), strf("%.3e", relerr.max()),
                   strf("%.3e", bound.median()), std::to_string(violations)});
      }
      table.print(strf("tightness (Fig. 1), distribution %s, t in {%s}, tolerance %g, policy %s: gap = "
                       "bound/|x^T y| - relerr",
                       dist_name(d), join(numbers_text(c.t_for(d))).c_str(), tol, to_string(c.policies[0])),
                  c.markdown);
    }
}

// Fig. 2: relerr against the tolerance, and the levels used.
void print_effectiveness(const Config& c, const std::vector<Row>& rows) {
  std::vector<std::string> header = {"tolerance", "relerr min", "relerr mean", "relerr max", "max/tol", "bound/|xy|"};
  for (const auto& l : short_levels(c)) header.push_back(l);
  for_each_point(rows, [&](const Point& p, std::size_t i, std::size_t j) {
    Table table(header);
    for (std::size_t r = i; r < j; ++r) {
      const Row& row = rows[r];
      std::vector<std::string> cells = {strf("%.0e", row.tolerance), strf("%.2e", row.relerr.min()),
                                        strf("%.2e", row.relerr.mean()), strf("%.2e", row.relerr.max()),
                                        strf("%.3f", row.relerr.max() / row.tolerance),
                                        strf("%.2e", row.bound_rel.mean())};
      add_fractions(cells, row);
      table.add(cells);
    }
    table.print("effectiveness (Fig. 2), " + point_title(c, p) + ", policy " + to_string(c.policies[0]), c.markdown);
  });
}

// Fig. 3 and Definition 2.1: speedup and efficiency.
void print_speedup(const Config& c, const std::vector<Row>& rows) {
  std::vector<std::string> header = {"tolerance", "select ms", "compute ms", "dot ms", "speedup", "min",
                                     "max",       "efficiency"};
  for (const auto& l : short_levels(c)) header.push_back(l);
  for_each_point(rows, [&](const Point& p, std::size_t i, std::size_t j) {
    Table table(header);
    for (std::size_t r = i; r < j; ++r) {
      const Row& row = rows[r];
      std::vector<std::string> cells = {strf("%.0e", row.tolerance),       strf("%.4f", 1e3 * row.select_s.mean()),
                                        strf("%.4f", 1e3 * row.compute_s.mean()), strf("%.4f", 1e3 * row.dot_s.mean()),
                                        strf("%.3f", row.speedup.mean()),   strf("%.3f", row.speedup.min()),
                                        strf("%.3f", row.speedup.max()),    strf("%.3f", row.efficiency.mean())};
      add_fractions(cells, row);
      table.add(cells);
    }
    table.print("speedup (Fig. 3) = t_dot / t_compute, efficiency = t_dot / (t_select + t_dot); " + point_title(c, p) +
                    ", policy " + to_string(c.policies[0]) + ", best of " + std::to_string(c.reps_for(p.n)) + " calls",
                c.markdown);
  });
}

// Both policies side by side on the same data: levels used and certified bound.
void print_compare(const Config& c, const std::vector<Row>& rows) {
  std::vector<std::string> header = {"tolerance"};
  Table::Groups groups = {{"", 1}};
  for (QdotPolicy p : c.policies) {
    for (const auto& l : short_levels(c)) header.push_back(l);
    header.push_back("bound");
    header.push_back("relerr");
    groups.emplace_back(to_string(p), c.levels.size() + 2);
  }
  for_each_point(rows, [&](const Point& p, std::size_t i, std::size_t j) {
    Table table(header, groups);
    for (std::size_t r = i; r < j; r += c.policies.size()) {
      std::vector<std::string> cells = {strf("%.0e", rows[r].tolerance)};
      for (std::size_t q = 0; q < c.policies.size(); ++q) {
        const Row& row = rows[r + q];
        add_fractions(cells, row);
        cells.push_back(strf("%.2e", row.bound_rel.mean()));
        cells.push_back(strf("%.2e", row.relerr.mean()));
      }
      table.add(cells);
    }
    table.print("policies compared, " + point_title(c, p) +
                    "\n(levels in % of components; bound and relerr relative to |x^T y|, means over samples)",
                c.markdown);
  });
}

// ---- HDF5 output -----------------------------------------------------------------------------

void write_parameters(const Hdf5Object& g, const Config& c) {
  std::vector<std::string> dists, policies;
  for (Dist d : c.dists) dists.push_back(dist_name(d));
  for (QdotPolicy p : c.policies) policies.push_back(to_string(p));
  g.attribute("experiment", mode_name(c.mode));
  g.attribute("distributions", join(dists));
  g.attribute("distribution_definition", dist_definition);
  for (Dist d : c.dists) g.attribute(std::string("t_values_") + dist_name(d), c.t_for(d));
  g.attribute("sizes", c.sizes);
  g.attribute("tolerances", c.tolerances);
  g.attribute("samples", c.samples);
  g.attribute("seed", c.seed);
  g.attribute("policy", join(policies));
  g.attribute("ladder", join(c.levels));
  g.attribute("input", c.input());
  g.attribute("ebla_version", EBLA_VERSION);
  g.attribute("reference", "exact dot product (integer superaccumulator, rounded once); relerr_double_dot is "
                           "relative to the plain double dot product (KokkosBlas::dot), as in the seed");
  if (c.timed())
    g.attribute("timing", c.reps > 0 ? "best of " + std::to_string(c.reps) + " calls"
                                     : std::string("best of max(3, min(1000, 2e6/n)) calls"));
}

using StatsOf = const Stats& (*)(const Row&);

// mean/min/max per row, and every sample as a rows x samples matrix.
void write_stats(const Hdf5Group& g, const std::string& name, const std::vector<const Row*>& rows, StatsOf of,
                 int samples) {
  std::vector<double> mean, min, max, all;
  for (const Row* r : rows) {
    const Stats& s = of(*r);
    mean.push_back(s.mean());
    min.push_back(s.min());
    max.push_back(s.max());
    all.insert(all.end(), s.values.begin(), s.values.end());
  }
  g.dataset(name + "_mean", mean);
  g.dataset(name + "_min", min);
  g.dataset(name + "_max", max);
  g.dataset(name + "_samples", all, rows.size(), static_cast<std::size_t>(samples));
}

void write_rows(const Hdf5Group& g, const Config& c, const std::vector<const Row*>& rows) {
  std::vector<double> t, tol, fraction;
  std::vector<std::int64_t> n;
  for (const Row* r : rows) {
    t.push_back(r->point.t);
    n.push_back(r->point.n);
    tol.push_back(r->tolerance);
    for (const auto& f : r->fraction) fraction.push_back(f.mean());
  }
  g.dataset("t", t);
  g.dataset("n", n);
  g.dataset("tolerance", tol);
  g.dataset("level_fraction_mean", fraction, rows.size(), c.levels.size()).attribute("levels", join(c.levels));
  const std::vector<std::pair<const char*, StatsOf>> series = {
      {"relerr", [](const Row& r) -> const Stats& { return r.relerr; }},
      {"relerr_double_dot", [](const Row& r) -> const Stats& { return r.relerr_dot; }},
      {"bound_relative", [](const Row& r) -> const Stats& { return r.bound_rel; }},
      {"gap", [](const Row& r) -> const Stats& { return r.gap; }},
      {"bins", [](const Row& r) -> const Stats& { return r.bins; }}};
  for (const auto& [name, of] : series) write_stats(g, name, rows, of, c.samples);
  if (!c.timed()) return;
  const std::vector<std::pair<const char*, StatsOf>> times = {
      {"select_seconds", [](const Row& r) -> const Stats& { return r.select_s; }},
      {"compute_seconds", [](const Row& r) -> const Stats& { return r.compute_s; }},
      {"dot_seconds", [](const Row& r) -> const Stats& { return r.dot_s; }},
      {"speedup", [](const Row& r) -> const Stats& { return r.speedup; }},
      {"efficiency", [](const Row& r) -> const Stats& { return r.efficiency; }}};
  for (const auto& [name, of] : times) write_stats(g, name, rows, of, c.samples);
}

// /<experiment>/<dist>[/<policy> when comparing]/<series>
void write_experiment(const Hdf5Writer& out, const Config& c, const std::vector<Row>& rows) {
  const Hdf5Group root = out.root();
  root.attribute("ebla_version", EBLA_VERSION).attribute("creator", "ebla qdot");
  const Hdf5Group g = root.group(mode_name(c.mode));
  write_parameters(g, c);
  for (Dist d : c.dists) {
    const Hdf5Group dg = g.group(dist_name(d));
    dg.attribute("t_values", c.t_for(d));
    for (QdotPolicy p : c.policies) {
      std::vector<const Row*> selected;
      for (const Row& r : rows)
        if (r.point.dist == d && r.policy == p) selected.push_back(&r);
      write_rows(c.mode == Mode::compare ? dg.group(to_string(p)) : dg, c, selected);
    }
  }
}

// ---- one run ---------------------------------------------------------------------------------

template <class T>
int run_single(const Config& c, const Hdf5Writer* out) {
  const Dist d = c.dists[0];
  const double t = c.t_for(d)[0];
  const std::int64_t n = c.sizes[0];
  const int reps = c.reps_for(n);
  const Data<T> data = generate<T>(d, t, n, data_seed(c.seed, d, t, n, 0));
  const Reference ref = reference(data, reps);
  const Eval e = evaluate(data, ref, qdot_options(c, c.tolerances[0], c.policies[0]), reps);
  const QdotResult& r = e.result;
  const double speedup = ref.dot_seconds / e.compute_seconds;
  const double efficiency = ref.dot_seconds / (e.select_seconds + ref.dot_seconds);
  const auto& counts = r.stats.count_per_level;
  auto fraction = [&](std::size_t l) { return n > 0 ? static_cast<double>(counts[l]) / static_cast<double>(n) : 0.0; };
  if (c.json) {
    std::string levels;
    for (std::size_t l = 0; l < counts.size(); ++l)
      levels += strf("%s{\"level\":\"%s\",\"count\":%zu,\"fraction\":%s}", l ? "," : "", c.levels[l].c_str(),
                     counts[l], json_number(fraction(l)).c_str());
    std::printf("{\"dist\":\"%s\",\"t\":%s,\"n\":%lld,\"seed\":%lld,\"input\":\"%s\",\"policy\":\"%s\","
                "\"tolerance\":%s,\"ladder\":\"%s\",\"value\":%s,\"exact\":%s,\"relative_error\":%s,"
                "\"bound\":%s,\"bound_relative\":%s,\"dot\":%s,\"dot_relative_error\":%s,\"bins\":%d,"
                "\"e_min\":%d,\"e_max\":%d,\"levels\":[%s],\"select_seconds\":%s,\"compute_seconds\":%s,"
                "\"dot_seconds\":%s,\"reps\":%d,\"speedup\":%s,\"efficiency\":%s}\n",
                dist_name(d), json_number(t).c_str(), static_cast<long long>(n), static_cast<long long>(c.seed),
                c.input().c_str(), to_string(c.policies[0]), json_number(c.tolerances[0]).c_str(),
                join(c.levels).c_str(), json_number(r.value).c_str(), json_number(ref.exact).c_str(),
                json_number(e.relerr).c_str(), json_number(r.bound).c_str(), json_number(e.bound_rel).c_str(),
                json_number(ref.dot_value).c_str(), json_number(relative_error(ref, ref.dot_value)).c_str(),
                r.stats.bins, r.stats.e_min, r.stats.e_max, levels.c_str(), json_number(e.select_seconds).c_str(),
                json_number(e.compute_seconds).c_str(), json_number(ref.dot_seconds).c_str(), reps,
                json_number(speedup).c_str(), json_number(efficiency).c_str());
  } else {
    std::printf("qdot of x, y ~ %s(t = %g), n = %lld, %s input, seed %lld\n", dist_name(d), t,
                static_cast<long long>(n), c.input().c_str(), static_cast<long long>(c.seed));
    std::printf("policy %s, tolerance %g, ladder %s\n", to_string(c.policies[0]), c.tolerances[0], join(c.levels).c_str());
    std::printf("  value            %.17g\n", r.value);
    std::printf("  exact x^T y      %.17g   (integer superaccumulator, rounded once)\n", ref.exact);
    std::printf("  relative error   %.3e\n", e.relerr);
    std::printf("  bound            %.3e   bound/|x^T y| = %.3e\n", r.bound, e.bound_rel);
    std::printf("  plain dot        %.17g   relative error %.3e (KokkosBlas::dot)\n", ref.dot_value,
                relative_error(ref, ref.dot_value));
    std::printf("  bins             %d, exponents %d .. %d\n", r.stats.bins, r.stats.e_min, r.stats.e_max);
    Table table({"  level", "components", "fraction %"});
    for (std::size_t l = 0; l < counts.size(); ++l)
      table.add({"  " + c.levels[l], std::to_string(counts[l]), percent(fraction(l))});
    table.print("", false);
    std::printf("\n  times (s, best of %d): select %.3e  compute %.3e  plain dot %.3e\n", reps, e.select_seconds,
                e.compute_seconds, ref.dot_seconds);
    std::printf("  speedup    t_dot / t_compute            = %.3f\n", speedup);
    std::printf("  efficiency t_dot / (t_select + t_dot)   = %.3f\n", efficiency);
  }
  if (out != nullptr) {
    Row row = make_row({d, t, n}, c.tolerances[0], c.policies[0]);
    record(row, e, ref, n, true);
    write_experiment(*out, c, {row});
  }
  return 0;
}

int run_qdot(const QdotCliOptions& o) {
  Config c = make_config(o);  // every option checked before any work
  KokkosSession kokkos;
  resolve_ladder(c);
  // Created (and so checked) before the work, committed after it: a bad path fails at
  // once, and a failure half-way leaves no file.
  std::unique_ptr<Hdf5Writer> out;
  if (!c.output.empty()) out = std::make_unique<Hdf5Writer>(c.output);
  if (c.mode == Mode::run) {
    c.use_float ? run_single<float>(c, out.get()) : run_single<double>(c, out.get());
  } else {
    const std::vector<Row> rows = sweep(c);
    if (c.mode == Mode::tightness) print_tightness(c, rows);
    if (c.mode == Mode::effectiveness) print_effectiveness(c, rows);
    if (c.mode == Mode::speedup) print_speedup(c, rows);
    if (c.mode == Mode::compare) print_compare(c, rows);
    if (out) write_experiment(*out, c, rows);
  }
  if (out) {
    out->commit();
    if (!c.json) std::printf("\nwrote %s\n", c.output.c_str());
  }
  return 0;
}

}  // namespace

Command add_qdot(CLI::App& app) {
  auto o = std::make_shared<QdotCliOptions>();
  app.add_option("--experiment,-e", o->experiment,
                 "tightness (Fig. 1), effectiveness (Fig. 2), speedup (Fig. 3 and efficiency) or "
                 "compare-policies; without it, one run");
  app.add_flag("--compare-policies", o->compare_policies,
               "Run the budget and paper policies on the same data: levels and bound per tolerance");
  app.add_option("--dist,-d", o->dists, "Distributions A and/or B (seed 002, section 4.1)")->delimiter(',');
  app.add_option("--t", o->t_values, "Distribution parameters t (exponent spread)")->delimiter(',');
  app.add_option("--n,--sizes,-n", o->sizes, "Vector lengths, e.g. 1e2,1e3 (up to 1e9)")->delimiter(',');
  app.add_option("--tol", o->tolerances, "Tolerances eps > 0")->delimiter(',');
  app.add_option("--policy", o->policy, "Selection policy: budget or paper")->capture_default_str();
  app.add_option("--ladder", o->ladder, "Levels, most precise first, e.g. binary64,binary32,binary16,perforate");
  app.add_option("--samples", o->samples, "Vector pairs per (dist, t, n) in experiments");
  app.add_option("--seed", o->seed, "Seed of the data")->capture_default_str()->check(seed_range());
  app.add_option("--reps", o->reps, "Timed calls per measurement (best is kept), 0..100000; default (0) about 2e6/n, 3..1000");
  app.add_flag("--float", o->use_float, "Single-precision vectors (the values rounded to float)");
  app.add_flag("--json", o->json, "One run: one line of JSON instead of text");
  app.add_flag("--markdown", o->markdown, "Experiments: tables in Markdown");
  app.add_option("--output,-o", o->output, "Write parameters and results to this HDF5 file");
  app.footer(
      "Defaults. One run: --dist B --t 9 --n 1e6 --tol 1e-8.\n"
      "  tightness:        A t=10..100 step 5, B t=2..30 step 2, n=1e2..1e5, tol 1e-16, 5 samples\n"
      "  effectiveness:    A,B t=5,9,13, n=1e3..1e5, tol 1e-15..1e-1, 5 samples\n"
      "  speedup:          A,B t=5,9,13, n=1e4..1e6, tol 1e-15..1e-1, 3 samples\n"
      "  compare-policies: B t=5,9,13, n=1e5, tol 1e-15..1e-1, 5 samples\n"
      "Lists are comma-separated. Errors are relative to the exact x^T y; speedup = t_dot /\n"
      "t_compute and efficiency = t_dot / (t_select + t_dot) (seed 002, Definition 2.1), with\n"
      "t_dot the time of KokkosBlas::dot on the same vectors.");
  return [o] { return run_qdot(*o); };
}

}  // namespace ebla::cli
