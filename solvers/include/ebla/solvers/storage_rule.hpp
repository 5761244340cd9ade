// Which storage format CG keeps its Krylov vectors p, q = A p and r in (core/storage.hpp),
// the value of CgOptions::storage. x, b and D^-1 stay binary64. docs/solvers.md, "Stored
// Krylov vectors", derives the rule; in short:
//
//  - p: CG updates x and r with the same stored p and its product q = A p, so rounding p
//    to p~ only changes the search direction: x_k stays in x_0 + span(p~_0..p~_(k-1)) and
//    r_k tracks b - A x_k exactly as before (Greenbaum, SIMAX 18 (1997)). No gap opens; what
//    it costs is iterations, more the coarser the format.
//  - q and r: a rounded q~_k = A p~_k + e_k or r~_(k+1) = r_(k+1) + f_k opens a gap between
//    the recursive and the true residual, b - A x_k - r~_k = sum_j (alpha_j e_j - f_j) (up to
//    the binary64 rounding that exact CG has too). The kernels measure ||e_j|| and ||f_j||,
//    so CG carries a bound G_k >= ||sum_j alpha_j e_j - f_j||, stops only when
//    ||r~_k|| + G_k <= tau, and where G_k exceeds gap_ratio ||r~_k|| replaces the residual,
//    r~_k = fl_S(b - A x_k) computed in binary64 (van der Vorst and Ye, SISC 22 (2000)),
//    which starts G anew. Each iteration adds about u_S (||r_k|| + |alpha_k| ||q_k||) to G,
//    so a replacement follows each time ||r|| falls by about gap_ratio / u_S. A replacement
//    puts back, at the size of the gap, components CG had already removed, and on HPCCG
//    binary32 q and r cost 0-17% more iterations for it (24^3 to 128^3).
//  - The certificate (the double-double true residual at exit) stays as it is; where it
//    fails, CG falls back to binary64 storage, replaces r and goes on.
//  - automatic: p in binary32 (measured: HPCCG's iteration counts unchanged), q and r in
//    binary64 while the residual is large; q and r in binary32 from the iteration on which
//    the gap they would add until ||r|| reaches tau, predicted from the recent rate of
//    convergence, is below late_share tau (then no replacement is needed on the way, and the
//    stopping test ||r~|| + G <= tau costs at most the last fraction late_share of tau);
//    all in binary64 once the stall safeguard fires or the certificate fails.
//
// Where it runs: plain data, the host.
#pragma once

#include <ebla/core/storage.hpp>

#include <cstdint>
#include <string>

namespace ebla {

/// The formats of the stored vectors: p's, and that of q and r (which the gap bound covers).
struct StorageFormats {
  Storage p = Storage::binary64;
  Storage r = Storage::binary64;  ///< of q and r
  friend bool operator==(const StorageFormats& a, const StorageFormats& b) { return a.p == b.p && a.r == b.r; }
};

struct StoragePolicy {
  enum class Kind : std::uint8_t { fixed, automatic };
  Kind kind = Kind::fixed;
  StorageFormats fixed;  ///< Kind::fixed: the formats
  /// Replace the residual where the gap bound G_k exceeds gap_ratio ||r_k||; in (0, 1).
  double gap_ratio = 1.0 / 1024;
  /// automatic: q and r go to binary32 once their predicted gap to the end is below
  /// late_share tau, and are replaced only where G_k exceeds late_limit tau (or gap_ratio
  /// ||r_k||, whichever is larger) from then on; late_share = 0: q and r stay binary64.
  double late_share = 1.0 / 8;
  double late_limit = 1.0 / 2;
  /// Whether CG keeps anything in less than binary64 (binary64 itself runs the plain loop).
  bool narrow() const {
    return kind == Kind::automatic || fixed.p != Storage::binary64 || fixed.r != Storage::binary64;
  }
  /// A fixed policy: p, q and r in one format, or p in one and q, r in another.
  static StoragePolicy of(Storage all) { return of(all, all); }
  static StoragePolicy of(Storage p, Storage r) {
    StoragePolicy s;
    s.fixed = {p, r};
    return s;
  }
  static StoragePolicy automatic() {
    StoragePolicy s;
    s.kind = Kind::automatic;
    return s;
  }
};

/// "auto", a storage format's name (core/storage.hpp) for all three vectors, or
/// "p=FORMAT,r=FORMAT" (r: q and r); throws InvalidArgument naming `function` and the name.
StoragePolicy storage_policy_by_name(const std::string& name, const char* function = "ebla::storage_policy_by_name");
/// "auto", a format's name, or "p=FORMAT,r=FORMAT".
std::string to_string(const StoragePolicy& policy);
std::string to_string(const StorageFormats& formats);
/// The formats the automatic rule starts with.
StorageFormats automatic_storage();

}  // namespace ebla
