#include <ebla/experiments/gemm_study.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

namespace ebla::experiments {

namespace {

// Uniform over the multiples of 2^-53 in [0, 1).
double uniform01(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1p-53; }

// seed 001, section 5.1: +-10^phi with phi ~ U[-l, l] and the sign + or - with probability 1/2.
double logscale_entry(std::mt19937_64& gen, double l) {
  const double phi = l * (2 * uniform01(gen) - 1);
  const double sign = (gen() >> 63) != 0 ? -1.0 : 1.0;
  return sign * std::pow(10.0, phi);
}

// U(-1, 1): 2 x - 1, exact in binary64.
double uniform_entry(std::mt19937_64& gen) { return 2 * uniform01(gen) - 1; }

// v as %g writes it (6 significant digits, the shorter of fixed and scientific).
std::string general(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Runs job(0) .. job(count - 1) on `threads` threads, each job on one of them; rethrows the
// first exception a job threw. The jobs write to their own slots: the results do not depend on
// the number of threads. (ebla::gemm of the emulated engine runs Kokkos::Serial range kernels,
// which keep no shared state, and no BLAS call when componentwise bounds are off.)
template <class Job>
void on_threads(int threads, std::size_t count, const Job& job) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        job(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

NarrowPoint narrow_point(const NarrowCase& nc, const HostMatrix& A, const HostMatrix& B, const HostMatrix& E) {
  const Stopwatch watch;
  const GemmResult r = gemm(A, B, nc.config());
  NarrowPoint p;
  p.seconds = watch.seconds();
  const double scale = r.norm_a * r.norm_b;  // ||A||_inf ||B||_inf
  p.abs_error = normwise_error(r.C, E);
  p.bound = r.normwise_bound;
  p.theta = r.theta;
  // both divided by the same number, rounded once: error <= bound gives error <= certified
  p.error = p.abs_error / scale;
  p.certified = p.bound / scale;
  p.paper = r.paper.normwise / scale;
  p.violation = std::isfinite(p.bound) && !(p.abs_error <= p.bound);  // inf states nothing
  return p;
}

}  // namespace

// ---- the matrices -----------------------------------------------------------------------

std::string distribution_text(GemmDistribution d, double l) {
  if (d == GemmDistribution::uniform) return "U(-1, 1)";
  const std::string bound = general(l);
  return "+-10^phi, phi ~ U[-" + bound + ", " + bound + "]";
}

std::string data_text(const GemmData& data) {
  std::string s = distribution_text(data.distribution, data.range);
  if (data.given != formats::binary64()) s += " given in " + format_name(data.given);
  return s;
}

HostMatrix draw_matrix(std::mt19937_64& gen, const char* name, std::int64_t rows, std::int64_t cols,
                       GemmDistribution d, double l) {
  HostMatrix X(std::string(name), rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      X(i, j) = d == GemmDistribution::uniform ? uniform_entry(gen) : logscale_entry(gen, l);
  return X;
}

std::pair<HostMatrix, HostMatrix> draw_operands(const GemmData& data) {
  std::mt19937_64 gen(data.seed);
  HostMatrix A = draw_matrix(gen, "A", data.m, data.k, data.distribution, data.range);
  HostMatrix B = draw_matrix(gen, "B", data.k, data.n, data.distribution, data.range);
  if (data.given == formats::binary64()) return {A, B};
  const RoundingConstants rc = rounding_constants(data.given);
  for (const HostMatrix& X : {A, B})
    for (std::size_t l = 0; l < X.size(); ++l) {
      const double x = X.data()[l];
      X.data()[l] = round_to<Rounding::nearest_even>(x, rc);
      if (!std::isfinite(X.data()[l]))
        throw InvalidArgument("'" + format_name(data.given) + "' cannot represent the entry " + general(x) +
                              " of " + (X.data() == A.data() ? "A" : "B"));
    }
  return {A, B};
}

double normwise_error(const HostMatrix& C, const HostMatrix& E) {
  double norm = 0;
  for (std::size_t i = 0; i < C.extent(0); ++i) {
    double row = 0;
    for (std::size_t j = 0; j < C.extent(1); ++j) row += std::fabs(C(i, j) - E(i, j));
    if (std::isnan(row)) return row;  // a NaN in C: no error to speak of, and no bound met
    norm = std::max(norm, row);
  }
  return norm;
}

std::string gemm_config_text(const GemmConfig& g, const std::string& unit_name) {
  if (g.engine != GemmEngine::emulated) return describe(g);
  std::string s = format_name(g.input) + " x" + std::to_string(g.words) + " on emulated(" + unit_name + ")";
  if (!g.scaling) s += ", unscaled";
  if (!g.subnormals) s += ", no subnormals";
  return s;
}

// ---- seed 001, section 5: narrow range against unbounded range ---------------------------

std::string NarrowCase::key() const {
  return format_name(input) + (subnormals ? "_subnormals_on" : "_subnormals_off") + "_p" + std::to_string(words) +
         (unbounded ? "_unbounded" : "_narrow");
}

std::string NarrowCase::label() const { return format_name(input) + " -> " + format_name(accumulation); }

GemmConfig NarrowCase::config() const {
  GemmConfig g;
  g.input = unbounded ? unbounded_range(input) : input;
  g.words = words;
  g.subnormals = subnormals;
  g.engine = GemmEngine::emulated;
  g.unit = units::fma_in(unbounded ? unbounded_range(accumulation) : accumulation);
  g.componentwise = false;  // normwise only: (5.1) is normwise
  return g;
}

std::vector<NarrowCase> narrow_cases(const std::string& figure) {
  const Format acc = figure == "5.1" ? formats::binary16() : formats::binary32();
  std::vector<Format> inputs = {formats::fp8_e5m2(), formats::fp8_e4m3()};
  if (figure == "5.2") inputs.insert(inputs.begin(), formats::binary16());
  std::vector<NarrowCase> cases;
  for (const Format& in : inputs)
    for (bool sub : {false, true})
      for (int p = 1; p <= 3; ++p)
        for (bool unbounded : {false, true}) cases.push_back({figure, in, acc, sub, p, unbounded});
  return cases;
}

std::int64_t NarrowRangeResult::runs() const {
  std::int64_t n = 0;
  for (const NarrowFigure& f : figures)
    for (const auto& line : f.points) n += static_cast<std::int64_t>(line.size());
  return n;
}

std::int64_t NarrowRangeResult::violations() const {
  std::int64_t n = 0;
  for (const NarrowFigure& f : figures)
    for (const auto& line : f.points)
      n += std::count_if(line.begin(), line.end(), [](const NarrowPoint& p) { return p.violation; });
  return n;
}

NarrowRangeResult narrow_range_study(const NarrowRangeSpec& spec) {
  NarrowRangeResult result;
  std::size_t total = 0;
  for (const std::string& fig : spec.figures) {
    NarrowFigure f;
    f.figure = fig;
    f.cases = narrow_cases(fig);
    f.points.assign(f.cases.size(), std::vector<NarrowPoint>(spec.k_list.size()));
    total += f.cases.size() * spec.k_list.size();
    result.figures.push_back(f);
  }
  std::size_t done = 0;
  std::mutex progress_mutex;
  for (std::size_t ik = 0; ik < spec.k_list.size(); ++ik) {
    const std::int64_t k = spec.k_list[ik];
    // the data of each k from (seed, k) alone: a k gets the same matrices in every list
    Stopwatch watch;
    std::seed_seq seq{static_cast<std::uint32_t>(spec.seed), static_cast<std::uint32_t>(spec.seed >> 32),
                      static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
    std::mt19937_64 gen(seq);
    const HostMatrix A = draw_matrix(gen, "A", spec.m, k, GemmDistribution::logscale, spec.range);
    const HostMatrix B = draw_matrix(gen, "B", k, spec.n, GemmDistribution::logscale, spec.range);
    const HostMatrix E = exact_gemm(A, B);
    result.data_seconds += watch.seconds();
    // the threads share A, B and E through unmanaged aliases: copies of a managed View count
    // references, and a Kokkos built without thread support does not count them atomically
    const HostMatrix As(A.data(), A.extent(0), A.extent(1)), Bs(B.data(), B.extent(0), B.extent(1)),
        Es(E.data(), E.extent(0), E.extent(1));
    for (NarrowFigure& f : result.figures) {
      watch.restart();
      const std::string step = "Fig. " + f.figure + ", k = " + std::to_string(k);
      on_threads(spec.threads, f.cases.size(), [&](std::size_t i) {
        f.points[i][ik] = narrow_point(f.cases[i], As, Bs, Es);
        const std::lock_guard<std::mutex> lock(progress_mutex);
        report(spec.progress, ++done, total, step);
      });
      f.seconds += watch.seconds();
    }
  }
  return result;
}

// ---- seed 000, section 4.2: the tensor-core GEMM -----------------------------------------

TensorCoreResult tensor_core_study(const TensorCoreSpec& spec) {
  constexpr std::size_t steps = 4;
  TensorCoreResult t;
  report(spec.progress, 0, steps, "drawing A and B");
  Stopwatch watch;
  const auto [A, B] = draw_operands(spec.data);
  t.data_seconds = watch.seconds();
  report(spec.progress, 1, steps, "ebla::gemm");
  watch.restart();
  t.gemm = gemm(A, B, spec.gemm);
  t.gemm_seconds = watch.seconds();
  report(spec.progress, 2, steps, "exact AB");
  watch.restart();
  t.exact = exact_gemm(A, B);
  t.exact_seconds = watch.seconds();
  report(spec.progress, 3, steps, "errors and bounds per entry");

  const GemmResult& r = t.gemm;
  const std::size_t n = r.C.extent(1);
  t.entries = static_cast<std::int64_t>(r.C.size());
  for (std::size_t l = 0; l < r.C.size(); ++l) {
    const double e = t.exact.data()[l], err = std::fabs(r.C.data()[l] - e);
    const double bound = r.bound.data()[l];
    if (std::isfinite(bound) && !(err <= bound)) {
      ++t.violations;
      if (t.first_violations.size() < 10) t.first_violations.push_back({l / n, l % n, err, bound});
    }
    t.above_probable += err > r.probable_bound.data()[l] ? 1 : 0;
    t.above_dbea += err > r.paper.dbea.data()[l] ? 1 : 0;
    t.above_vibea += err > r.paper.vibea.data()[l] ? 1 : 0;
    t.above_vibea_matrix += err > r.paper.vibea_matrix.data()[l] ? 1 : 0;
    if (e == 0) {  // no relative error: counted, left out of the distributions
      ++t.zero;
      continue;
    }
    const double d = std::fabs(e);
    t.error.add(err / d);
    t.certified.add(bound / d);
    t.probable.add(r.probable_bound.data()[l] / d);
    t.dbea.add(r.paper.dbea.data()[l] / d);
    t.vibea.add(r.paper.vibea.data()[l] / d);
    t.vibea_matrix.add(r.paper.vibea_matrix.data()[l] / d);
    t.certified_over_dbea.add(bound / r.paper.dbea.data()[l]);
    t.dbea_over_vibea.add(r.paper.dbea.data()[l] / r.paper.vibea.data()[l]);
    t.dbea_over_vibea_matrix.add(r.paper.dbea.data()[l] / r.paper.vibea_matrix.data()[l]);
  }
  report(spec.progress, steps, steps, "done");
  return t;
}

}  // namespace ebla::experiments
