// ebla formats: the catalogue as a table (or JSON lines).
#include "commands.hpp"

#include <ebla/core/format.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

namespace ebla::cli {

namespace {

void print_table() {
  std::printf("%-10s %3s %6s %6s %10s %12s %12s %11s %-9s %-9s\n", "name", "t", "emin", "emax", "u",
              "fmin", "fmax", "subnormals", "specials", "overflow");
  for (const auto& [name, f] : format_catalogue())
    std::printf("%-10s %3d %6d %6d %10.3e %12.4e %12.6g %11s %-9s %-9s\n", name.c_str(), f.t, f.emin,
                f.emax, f.u(), f.fmin(), f.fmax(), f.subnormals ? "yes" : "no",
                to_string(f.specials), to_string(f.overflow));
}

void print_json() {
  for (const auto& [name, f] : format_catalogue()) {
    // the exact values as hex-float strings (JSON has no hex numbers)
    const nlohmann::ordered_json row = {{"name", name},
                                        {"t", f.t},
                                        {"emin", f.emin},
                                        {"emax", f.emax},
                                        {"u", fmt::format("{:a}", f.u())},
                                        {"fmin", fmt::format("{:a}", f.fmin())},
                                        {"fmax", fmt::format("{:a}", f.fmax())},
                                        {"gmin", fmt::format("{:a}", f.gmin())},
                                        {"subnormals", f.subnormals},
                                        {"specials", to_string(f.specials)},
                                        {"overflow", to_string(f.overflow)}};
    std::printf("%s\n", row.dump().c_str());
  }
}

}  // namespace

Command add_formats(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "One JSON object per format (exact values as hex-float strings)");
  app.footer(
      "Columns: precision t (with the implicit bit), exponent range [emin, emax], unit roundoff\n"
      "u = 2^-t, smallest normal fmin = 2^emin, largest finite fmax (Mary & Mikaitis, Table 2.1).");
  return [json] {
    *json ? print_json() : print_table();
    return 0;
  };
}

}  // namespace ebla::cli
