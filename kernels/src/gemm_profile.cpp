// The profile of gemm_select's throughputs (gemm_profile.hpp): the machine, the noise rule of
// the measurement, the file's text and its checks, and gemm_costs, which ties them together.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/parse.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/gemm_profile.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#ifndef EBLA_VERSION
#error "EBLA_VERSION is defined by kernels/CMakeLists.txt"
#endif

namespace ebla {

using namespace gemm_detail;

namespace {

const char* const profile_magic = "ebla-gemm-profile 1";

// ---- the machine ----------------------------------------------------------------------------

/// The value of the first "key : value" line of /proc/cpuinfo ("" without one).
std::string cpuinfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name != key) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return {};
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// ---- numbers in the file ---------------------------------------------------------------------

std::int64_t parse_whole(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-'))
    throw_invalid("ebla::parse_gemm_profile", what + ": '" + text + "' is not a whole number");
  return v;
}

double parse_positive(const std::string& text, const std::string& what) {
  const double v = parse_double(text, what);
  if (!(v > 0 && v < inf)) throw_invalid("ebla::parse_gemm_profile", what + ": " + text + " is not positive and finite");
  return v;
}

std::vector<std::string> words_of(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.6e", v);
  return text;
}

// ---- the measurements -------------------------------------------------------------------------

/// One call of f, its seconds.
template <class F>
double timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return seconds_since(start);
}

/// OpenBLAS's and oneDNN's threads spin for a while after a call and slow the other library's
/// next one: a pause before an entry of another library lets them stop.
void let_spinning_threads_stop() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

GemmTiming measure_entry(const std::string& name, const GemmTimingRule& rule) {
  const std::int64_t s = 512;  // large enough for the engines' steady rates
  const double flops = static_cast<double>(s * s * s);  // multiply-adds
  if (name == "dgemm") {
    std::vector<double> a(static_cast<std::size_t>(s * s), 0.5), c(a.size());
    return measure_timing([&] { return timed([&] { host::dgemm_by_rows(s, s, s, a.data(), a.data(), c.data()); }); },
                          flops, rule);
  }
  if (name == "sgemm") {
    std::vector<float> a(static_cast<std::size_t>(s * s), 0.5f), c(a.size());
    return measure_timing([&] { return timed([&] { host::sgemm_by_rows(s, s, s, a.data(), a.data(), c.data()); }); },
                          flops, rule);
  }
  if (name == "onednn_bf16") {
    std::vector<std::uint16_t> a(static_cast<std::size_t>(s * s), 0x3f00);
    std::vector<float> c(a.size());
    return measure_timing([&] { return timed([&] { host::bf16_gemm(s, s, s, a.data(), a.data(), c.data()); }); },
                          flops, rule);
  }
  if (name == "emulated") {
    const std::int64_t e = 32;
    HostMatrix X("X", e, e), Y("Y", e, e), Z("Z", e, e);
    Kokkos::deep_copy(X, 0.75);
    Kokkos::deep_copy(Y, 1.25);
    return measure_timing([&] { return timed([&] { unit_gemm(units::fma_binary32(), X, Y, Z); }); },
                          static_cast<double>(e * e * e), rule);
  }
  if (name == "split") {
    // per element of A and B and per word: the words, the residuals, the norms and the
    // normwise bound's passes (the warm-up call pays the page faults of fresh memory)
    GemmConfig one;
    one.componentwise = false;
    const std::int64_t h = 512;
    HostMatrix big("big", h, h);
    Kokkos::deep_copy(big, 0.3);
    return measure_timing(
        [&] { return timed([&] { normwise(prepare(big, big, one, "ebla::GemmCostModel", Keep{})); }); },
        static_cast<double>(2 * h * h), rule);
  }
  throw_invalid("ebla::measure_gemm_timings", "unknown entry '" + name + "'");
}

bool known_entry(const std::string& name) {
  for (const char* e : {"dgemm", "sgemm", "onednn_bf16", "emulated", "split"})
    if (name == e) return true;
  return false;
}

}  // namespace

GemmMachine GemmMachine::here() {
  GemmMachine m;
  m.version = EBLA_VERSION;
  m.cpu = cpuinfo("model name");
  if (m.cpu.empty()) m.cpu = "unknown";
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  m.threads = host::blas_threads();
  m.kokkos_threads = Kokkos::is_initialized() ? Kokkos::DefaultHostExecutionSpace().concurrency() : 0;
  const std::vector<std::string> flags = words_of(cpuinfo("flags"));
  for (const char* f : {"avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
                        "amx_tile", "amx_bf16"})
    if (std::find(flags.begin(), flags.end(), f) != flags.end()) m.isa += (m.isa.empty() ? "" : " ") + std::string(f);
  if (m.isa.empty()) m.isa = "-";
  const host::GemmEngines& e = host::gemm_engines();
  m.onednn = e.onednn_isa.empty() ? "none" : e.onednn_isa;
  m.onednn_bf16 = e.onednn_bf16;
  m.blas = e.blas.empty() ? "none" : e.blas;
  m.host_passes = to_string(detail::gemm_host_isa());
  return m;
}

std::string machine_mismatch(const GemmMachine& here, const GemmMachine& profile) {
  std::string out;
  const auto field = [&](const char* name, const std::string& a, const std::string& b) {
    if (a == b) return;
    out += (out.empty() ? "" : "; ") + std::string(name) + ": " + quoted(a) + " here, " + quoted(b) + " in the profile";
  };
  field("cpu", here.cpu, profile.cpu);
  field("cores", std::to_string(here.cores), std::to_string(profile.cores));
  field("threads", std::to_string(here.threads), std::to_string(profile.threads));
  field("kokkos_threads", std::to_string(here.kokkos_threads), std::to_string(profile.kokkos_threads));
  field("isa", here.isa, profile.isa);
  field("onednn", here.onednn, profile.onednn);
  field("onednn_bf16", here.onednn_bf16 ? "yes" : "no", profile.onednn_bf16 ? "yes" : "no");
  field("blas", here.blas, profile.blas);
  field("host_passes", here.host_passes, profile.host_passes);
  return out;
}

GemmTiming measure_timing(const std::function<double()>& run, double work, const GemmTimingRule& rule) {
  const char* function = "ebla::measure_timing";
  if (rule.repetitions < 1 || rule.attempts < 1)
    throw_invalid(function, "a rule of " + std::to_string(rule.repetitions) + " repetitions and " +
                                std::to_string(rule.attempts) + " attempts measures nothing");
  if (!(rule.spread >= 1)) throw_invalid(function, "spread = " + std::to_string(rule.spread) + " is below 1");
  if (!(work > 0)) throw_invalid(function, "work = " + std::to_string(work) + " is not positive");
  run();  // warm-up: caches, page faults, the libraries' threads and primitives
  GemmTiming t;
  for (int attempt = 1; attempt <= rule.attempts; ++attempt) {
    std::vector<double> times;
    for (int r = 0; r < rule.repetitions; ++r) times.push_back(run());
    std::sort(times.begin(), times.end());
    const std::size_t n = times.size();
    t.fastest = times.front();
    t.median = n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    t.repetitions = rule.repetitions;
    t.attempts = attempt;
    t.seconds = t.fastest / work;
    t.agrees = t.median <= rule.spread * t.fastest;
    if (t.agrees) break;
  }
  return t;
}

std::vector<std::string> gemm_profile_entries() {
  std::vector<std::string> out = {"dgemm", "sgemm"};
  if (host::gemm_engines().onednn_bf16) out.push_back("onednn_bf16");
  out.push_back("emulated");
  out.push_back("split");
  return out;
}

std::map<std::string, GemmTiming> measure_gemm_timings(const std::vector<std::string>& names,
                                                       const GemmTimingRule& rule) {
  std::map<std::string, GemmTiming> out;
  bool previous = false;  // an engine measured before this one
  for (const std::string& name : names) {
    if (previous) let_spinning_threads_stop();
    out[name] = measure_entry(name, rule);
    previous = true;
  }
  return out;
}

GemmCostModel cost_model(const std::map<std::string, GemmTiming>& timings) {
  const auto of = [&](const char* name) {
    const auto it = timings.find(name);
    return it == timings.end() ? inf : it->second.seconds;
  };
  GemmCostModel c;
  c.dgemm = of("dgemm");
  c.sgemm = of("sgemm");
  c.onednn_bf16 = of("onednn_bf16");
  c.emulated = of("emulated");
  c.split = of("split");
  return c;
}

std::string to_text(const GemmProfile& p) {
  const GemmMachine& m = p.machine;
  std::ostringstream out;
  out << profile_magic << "\n";
  out << "# the throughputs of ebla's GEMM selection on this machine (written by ebla tune or ebla gemm)\n";
  out << "version " << m.version << "\n";
  const std::time_t written = static_cast<std::time_t>(p.written);
  std::tm utc{};
  char date[40] = "?";
  if (gmtime_r(&written, &utc) != nullptr) std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &utc);
  out << "# written " << date << "\n";
  out << "written " << p.written << "\n";
  out << "cpu " << m.cpu << "\n";
  out << "cores " << m.cores << "\n";
  out << "threads " << m.threads << "\n";
  out << "kokkos_threads " << m.kokkos_threads << "\n";
  out << "isa " << m.isa << "\n";
  out << "onednn " << m.onednn << "\n";
  out << "onednn_bf16 " << (m.onednn_bf16 ? "yes" : "no") << "\n";
  out << "blas " << m.blas << "\n";
  out << "host_passes " << m.host_passes << "\n";
  out << "# timing <entry> <seconds per multiply-add (split: per element and word)> and how it was measured\n";
  for (const auto& [name, t] : p.timings)
    out << "timing " << name << " " << number(t.seconds) << " repetitions " << t.repetitions << " fastest "
        << number(t.fastest) << " median " << number(t.median) << " attempts " << t.attempts << "\n";
  out << "end\n";
  return out.str();
}

GemmProfile parse_gemm_profile(const std::string& text) {
  const char* function = "ebla::parse_gemm_profile";
  GemmProfile p;
  GemmMachine& m = p.machine;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool magic = false, end = false;
  std::set<std::string> seen;
  const std::vector<std::string> required = {"version", "written", "cpu", "cores", "threads", "kokkos_threads",
                                             "isa", "onednn", "onednn_bf16", "blas", "host_passes"};
  while (std::getline(in, line)) {
    ++number;
    const std::string at = "line " + std::to_string(number);
    if (line.empty() || line[0] == '#') continue;
    if (end) throw_invalid(function, at + ": text after 'end'");
    if (!magic) {
      if (line != profile_magic) throw_invalid(function, at + ": not an ebla GEMM profile (no '" + profile_magic + "')");
      magic = true;
      continue;
    }
    if (line == "end") {
      end = true;
      continue;
    }
    const auto space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? std::string() : line.substr(space + 1);
    if (value.empty()) throw_invalid(function, at + ": '" + key + "' without a value");
    const std::string what = at + ": " + key;
    if (key == "timing") {
      const std::vector<std::string> w = words_of(value);
      if (w.size() != 10 || w[2] != "repetitions" || w[4] != "fastest" || w[6] != "median" || w[8] != "attempts")
        throw_invalid(function, what + ": not 'timing <entry> <seconds> repetitions <n> fastest <s> median <s> attempts <n>'");
      if (!known_entry(w[0])) throw_invalid(function, what + ": unknown entry '" + w[0] + "'");
      if (p.timings.count(w[0]) != 0) throw_invalid(function, what + ": entry '" + w[0] + "' repeated");
      GemmTiming t;
      t.seconds = parse_positive(w[1], what + " " + w[0]);
      t.repetitions = static_cast<int>(parse_whole(w[3], what + " repetitions"));
      t.fastest = parse_positive(w[5], what + " fastest");
      t.median = parse_positive(w[7], what + " median");
      t.attempts = static_cast<int>(parse_whole(w[9], what + " attempts"));
      if (t.repetitions < 1 || t.attempts < 1 || t.median < t.fastest)
        throw_invalid(function, what + " " + w[0] + ": repetitions and attempts must be positive, median >= fastest");
      t.agrees = true;  // only agreeing entries are stored
      p.timings[w[0]] = t;
      continue;
    }
    if (std::find(required.begin(), required.end(), key) == required.end())
      throw_invalid(function, at + ": unknown key '" + key + "'");
    if (!seen.insert(key).second) throw_invalid(function, at + ": '" + key + "' repeated");
    const auto count = [&](const std::string& v) {
      const std::int64_t n = parse_whole(v, what);
      if (n < 0 || n > 1 << 20) throw_invalid(function, what + ": " + v + " is not a count");
      return static_cast<int>(n);
    };
    if (key == "version") m.version = value;
    else if (key == "written") p.written = parse_whole(value, what);
    else if (key == "cpu") m.cpu = value;
    else if (key == "cores") m.cores = count(value);
    else if (key == "threads") m.threads = count(value);
    else if (key == "kokkos_threads") m.kokkos_threads = count(value);
    else if (key == "isa") m.isa = value;
    else if (key == "onednn") m.onednn = value;
    else if (key == "onednn_bf16") {
      if (value != "yes" && value != "no") throw_invalid(function, what + ": '" + value + "' is not yes or no");
      m.onednn_bf16 = value == "yes";
    } else if (key == "blas") m.blas = value;
    else if (key == "host_passes") m.host_passes = value;
  }
  if (!magic) throw_invalid(function, "empty: not an ebla GEMM profile");
  if (!end) throw_invalid(function, "truncated: no 'end' line");
  for (const std::string& key : required)
    if (seen.count(key) == 0) throw_invalid(function, "no '" + key + "' line");
  return p;
}

GemmProfile read_gemm_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid("ebla::read_gemm_profile", path + ": cannot be read (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_gemm_profile(text.str());
}

void write_gemm_profile(const GemmProfile& profile, const std::string& path) {
  const char* function = "ebla::write_gemm_profile";
  namespace fs = std::filesystem;
  const fs::path file(path);
  std::error_code ec;
  if (file.has_parent_path()) {
    fs::create_directories(file.parent_path(), ec);
    if (ec) throw_invalid(function, file.parent_path().string() + ": cannot be created (" + ec.message() + ")");
  }
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << to_text(profile);
    out.flush();
    if (!out) {
      const std::string reason = std::strerror(errno);
      out.close();
      fs::remove(temporary, ec);
      throw_invalid(function, temporary + ": cannot be written (" + reason + ")");
    }
  }
  fs::rename(temporary, file, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw_invalid(function, path + ": cannot be replaced (" + ec.message() + ")");
  }
}

std::string default_gemm_profile_path() {
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  if (const std::string p = env("EBLA_GEMM_PROFILE"); !p.empty()) return p;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty() && x[0] == '/') return x + "/ebla/gemm-profile";
  if (const std::string h = env("HOME"); !h.empty()) return h + "/.cache/ebla/gemm-profile";
  return {};
}

std::string gemm_profile_problem(const GemmProfile& profile, const GemmMachine& here, std::int64_t now,
                                 std::int64_t max_age) {
  if (profile.machine.version != here.version)
    return "written by ebla " + profile.machine.version + ", this is ebla " + here.version;
  if (const std::string mismatch = machine_mismatch(here, profile.machine); !mismatch.empty())
    return "another machine (" + mismatch + ")";
  if (profile.written > now + 60) return "written in the future (" + std::to_string(profile.written - now) + " s ahead)";
  if (now - profile.written > max_age)
    return "stale: written " + std::to_string((now - profile.written) / 86400) + " days ago, more than " +
           std::to_string(max_age / 86400) + " days";
  return {};
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

GemmCosts gemm_costs(const std::string& path, bool remeasure, const GemmTimingRule& rule) {
  GemmCosts out;
  out.path = path;
  const GemmMachine here = GemmMachine::here();
  const std::int64_t now = unix_now();
  GemmProfile profile;
  if (!path.empty() && !remeasure && std::filesystem::exists(path)) {
    try {
      profile = read_gemm_profile(path);
      const std::string problem = gemm_profile_problem(profile, here, now);
      if (problem.empty()) {
        out.read = true;
        out.age = std::max<std::int64_t>(0, now - profile.written);
      } else {
        out.warnings.push_back("profile " + path + " not used: " + problem + "; measured again");
      }
    } catch (const InvalidArgument& e) {
      out.warnings.push_back("profile " + path + " not used: corrupt (" + e.what() + "); measured again");
    }
  }
  if (!out.read) profile = GemmProfile{};
  std::vector<std::string> missing;
  for (const std::string& name : gemm_profile_entries())
    if (profile.timings.count(name) == 0) missing.push_back(name);
  // an entry the profile holds that this machine does not run (it would not have passed the
  // machine check) is dropped with the rest
  std::map<std::string, GemmTiming> kept;
  for (const std::string& name : gemm_profile_entries())
    if (profile.timings.count(name) != 0) kept[name] = profile.timings.at(name);
  profile.timings = kept;
  out.timings = kept;
  if (!missing.empty()) {
    const std::map<std::string, GemmTiming> timings = measure_gemm_timings(missing, rule);
    for (const std::string& name : missing) {
      const GemmTiming& t = timings.at(name);
      out.timings[name] = t;
      if (t.agrees) {
        profile.timings[name] = t;
        out.measured.push_back(name);
      } else {
        out.noisy.push_back(name);
      }
    }
  }
  out.model = cost_model(out.timings);
  if (path.empty() || out.measured.empty()) return out;
  profile.machine = here;
  if (!out.read) profile.written = now;  // a profile completed keeps the age of its oldest entries
  try {
    write_gemm_profile(profile, path);
    out.stored = true;
  } catch (const InvalidArgument& e) {
    out.warnings.push_back(std::string(e.what()) + "; the measurement is not stored");
  }
  return out;
}

}  // namespace ebla
