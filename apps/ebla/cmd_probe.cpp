// ebla probe: the tests of seed 003 (Fasi, Higham, Mikaitis, Pranesh) run on a matrix-multiply
// unit, one row per property, as the paper reports its findings.
//
//   ebla probe --unit v100_fp16        a preset of the catalogue, through the emulation; the
//                                      findings are compared with the preset's parameters
//   ebla probe --unit avx512_bf16_hw   this CPU's VDPBF16PS, compared with avx512_bf16_dot
//   ebla probe --unit amx_bf16_hw      AMX-BF16 (TDPBF16PS): reported, not probed
//   ebla probe --all                   every preset, then the hardware
//
// Exit code 0 when every probed device agrees with its model (hardware that is not there
// counts as agreeing), 1 when some finding contradicts it, 2 for bad input.
#include <cstdio>
#include <ebla/core/error.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/unit_spec.hpp>
#include <ebla/kernels/probe.hpp>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "study_progress.hpp"

namespace ebla::cli {

namespace {

constexpr const char* avx512_hw = "avx512_bf16_hw";
constexpr const char* amx_hw = "amx_bf16_hw";

struct ProbeCliOptions {
  std::string unit, unit_file;
  bool all = false;
  std::string progress;  // --progress, as study_progress.hpp reads it
  int length = 0;  // products per call of an emulated unit; 0: two of its operations
};

std::vector<std::string> known_names() {
  std::vector<std::string> names;
  for (const auto& entry : matrix_unit_catalogue()) names.push_back(entry.name);
  names.push_back(avx512_hw);
  names.push_back(amx_hw);
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void check_name(const std::string& name) {
  for (const auto& n : known_names())
    if (n == name) return;
  throw_invalid("ebla probe --unit",
                "unknown unit '" + name + "'; known: " + joined(known_names()));
}

void print_table(const ProbeFindings& f) {
  std::printf("%-22s %-34s %s\n", "property", "finding", "evidence");
  for (const ProbeRow& row : probe_table(f))
    std::printf("%-22s %-34s %s\n", row.property.c_str(), row.finding.c_str(),
                row.evidence.c_str());
}

/// Prints the comparison with the model; returns whether they agree.
bool print_comparison(const ProbeFindings& f, const std::string& model_name,
                      const MatrixUnit& model, const char* what = "the preset") {
  const std::vector<std::string> d = probe_differences(f, model);
  if (d.empty()) {
    std::printf("agrees with %s %s on every property\n", what, model_name.c_str());
    return true;
  }
  std::printf("differs from %s %s:\n", what, model_name.c_str());
  for (const auto& line : d) std::printf("  %s\n", line.c_str());
  return false;
}

void print_header(const DotDevice& d, const std::string& what) {
  std::printf("ebla probe: %s (%s), k = %d products per call, input %s, accumulation %s\n",
              d.name.c_str(), what.c_str(), d.length, format_name(d.input).c_str(),
              format_name(d.accumulation).c_str());
}

/// Probes a unit through the emulation and compares the findings with it; `what` names the
/// model ("the preset", "the spec"). Returns whether they agree.
bool run_emulated(const std::string& name, const MatrixUnit& unit, const char* what, int length) {
  const DotDevice d = unit_device(name, unit, length);
  print_header(d, "emulated");
  const ProbeFindings f = probe(d);
  print_table(f);
  return print_comparison(f, name, unit, what);
}

/// Probes one named device; returns whether it agrees with its model.
bool run_one(const std::string& name, int length) {
  if (name == amx_hw) {
    if (!amx_bf16_available()) {
      std::printf(
          "ebla probe: %s: AMX-BF16 (TDPBF16PS) is not available on this CPU; nothing probed\n",
          name.c_str());
    } else {
      std::printf(
          "ebla probe: %s: this CPU has AMX-BF16, but ebla has no AMX device; nothing probed "
          "(the preset amx_bf16 is the SDM's model)\n",
          name.c_str());
    }
    return true;
  }
  if (name == avx512_hw) {
    if (!avx512_bf16_available()) {
      std::printf(
          "ebla probe: %s: AVX512_BF16 (VDPBF16PS) is not available on this CPU; nothing probed\n",
          name.c_str());
      return true;
    }
    const DotDevice d = avx512_bf16_device();
    print_header(d, "this CPU's VDPBF16PS, lane 0");
    const ProbeFindings f = probe(d);
    print_table(f);
    return print_comparison(f, "avx512_bf16_dot", units::avx512_bf16_dot());
  }
  return run_emulated(name, matrix_unit_by_name(name), "the preset", length);
}

}  // namespace

Command add_probe(CLI::App& app) {
  auto o = std::make_shared<ProbeCliOptions>();
  auto* unit =
      app.add_option("--unit,-u", o->unit,
                     "A preset of the unit catalogue, avx512_bf16_hw (this CPU's VDPBF16PS) "
                     "or amx_bf16_hw (AMX-BF16)");
  auto* all = app.add_flag("--all", o->all, "Every preset, then the hardware");
  auto* file = app.add_option("--unit-file", o->unit_file,
                              "A custom unit: a spec file (docs/matrix-units.md, \"Custom units\"), "
                              "probed through the emulation and compared with its spec");
  app.add_option("--length,-k", o->length,
                 "Products per call of an emulated unit, 1..64 (default: two of its operations, "
                 "2 b, so that the probes can find b)")
      ->transform(whole_number());
  add_progress_option(app, o->progress);
  unit->excludes(all);
  file->excludes(unit);
  file->excludes(all);
  app.footer(
      "The tests of Fasi et al. generalised to the unit's precisions (docs/probes.md). Exit code 1 "
      "when a finding contradicts the unit's model.");
  return [o] {
    if (!o->unit_file.empty()) {  // a custom unit: probed as a preset is
      const MatrixUnit u = under_option("ebla probe --unit-file", [&] { return read_unit_spec_file(o->unit_file); });
      return run_emulated(o->unit_file, u, "the spec", o->length) ? 0 : 1;
    }
    if (!o->all && o->unit.empty())
      throw_invalid("ebla probe", "give --unit NAME or --all; known: " + joined(known_names()));
    std::vector<std::string> names = o->all ? known_names() : std::vector<std::string>{o->unit};
    if (!o->all) check_name(o->unit);
    if (o->length != 0 && (o->length < 1 || o->length > 64))
      throw_invalid("ebla probe --length", std::to_string(o->length) + " is outside 1..64");
    const experiments::Progress progress =
        progress_lines("ebla probe:", progress_interval(o->progress, "ebla probe --progress"));
    bool agree = true;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i > 0) std::printf("\n");
      std::fflush(stdout);  // the units done so far before a progress line on stderr
      agree = run_one(names[i], o->length) && agree;
      if (progress) progress(i + 1, names.size(), names[i]);
    }
    return agree ? 0 : 1;
  };
}

}  // namespace ebla::cli
