// The stored passes' host forms (AVX2 with F16C, AVX-512: solvers/src/stored_simd.hpp)
// against their generic form, bit for bit: every word, block exponent and scale they store,
// every binary64 value they write (x) and every sum they return, for every storage format
// and every pass, on random vectors and on values at the formats' edges (subnormals of each
// format, midpoints between neighbours, overflow, values below an unscaled format's range,
// infinities and NaN). A form this CPU cannot run is skipped, saying so.
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/preconditioner.hpp>
#include <ebla/solvers/problems.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../solvers/src/cg_steps.hpp"
#include "util.hpp"

namespace {

using ebla::Storage;
using ebla::StoredVector;
using ebla::detail::HostIsa;

// The grid: lines of 23 (not a multiple of 8), 4807 rows (the last tile ends 7 past a
// multiple of 8, the last block holds 7 values).
constexpr int nx = 23, ny = 19, nz = 11;
constexpr std::size_t n = static_cast<std::size_t>(nx) * ny * nz;

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

const std::vector<Storage>& formats() { return ebla::storage_formats(); }

template <class T>
std::vector<unsigned char> bytes_of(const Kokkos::View<T*>& v) {
  if (v.extent(0) == 0) return {};
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<unsigned char> b(h.extent(0) * sizeof(T));
  std::memcpy(b.data(), h.data(), b.size());
  return b;
}

std::vector<unsigned char> bytes_of(const StoredVector& v) {
  std::vector<unsigned char> all;
  for (const auto& part : {bytes_of(v.f64), bytes_of(v.f32), bytes_of(v.u16), bytes_of(v.i16), bytes_of(v.i8),
                           bytes_of(v.exponent)})
    all.insert(all.end(), part.begin(), part.end());
  const int s = v.scale_exponent;
  all.insert(all.end(), reinterpret_cast<const unsigned char*>(&s), reinterpret_cast<const unsigned char*>(&s) + sizeof s);
  return all;
}

template <class T>
void copy_into(const Kokkos::View<T*>& from, const Kokkos::View<T*>& to) {
  if (from.extent(0)) Kokkos::deep_copy(to, from);
}

StoredVector clone(const StoredVector& v) {
  StoredVector c = ebla::make_stored_vector(v.format, v.n, "clone");
  copy_into(v.f64, c.f64);
  copy_into(v.f32, c.f32);
  copy_into(v.u16, c.u16);
  copy_into(v.i16, c.i16);
  copy_into(v.i8, c.i8);
  copy_into(v.exponent, c.exponent);
  c.scale_exponent = v.scale_exponent;
  return c;
}

ebla::Vector clone(ebla::ConstVector v) {
  ebla::Vector c("clone", v.extent(0));
  Kokkos::deep_copy(c, v);
  return c;
}

ebla::Vector from_host(const std::vector<double>& h) {
  ebla::Vector v("v", h.size());
  auto m = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < h.size(); ++i) m(i) = h[i];
  Kokkos::deep_copy(v, m);
  return v;
}

// Random values over `binades` binades around 1, with random signs, some exact zeros.
std::vector<double> random_values(std::size_t count, int binades, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(count);
  for (auto& x : v) {
    const std::uint64_t r = gen();
    if (r % 97 == 0) {
      x = 0;
      continue;
    }
    x = (r & 1 ? -1.0 : 1.0) * std::ldexp(1.0 + static_cast<double>(gen() >> 11) * 0x1p-53,
                                          static_cast<int>(gen() % static_cast<std::uint64_t>(binades)) - binades / 2);
  }
  return v;
}

// A vector stored in `format` from values v (the store chooses the scale).
StoredVector stored(Storage format, const std::vector<double>& v) {
  StoredVector p = ebla::make_stored_vector(format, v.size(), "p");
  ebla::store(p, from_host(v));
  return p;
}

struct Case {
  std::string name;
  ebla::RowsOf rows;
};

// HPCCG's matrix with row i cut to its first i mod 10 entries: rows of 0 to 9 entries, so
// every count of entries left over past a multiple of four, and empty rows.
ebla::CsrMatrix cut_rows(const ebla::CsrMatrix& A, double ulp = 0x1p-20) {
  const ebla::test::HostCsr h = ebla::test::to_host(A);
  ebla::test::HostCsr cut{h.rows, h.cols, {0}, {}, {}};
  for (std::size_t i = 0; i < static_cast<std::size_t>(h.rows); ++i) {
    for (std::size_t k = h.ptr[i]; k < h.ptr[i] + std::min<std::size_t>(i % 10, h.length(i)); ++k) {
      cut.col.push_back(h.col[k]);
      cut.val.push_back(h.val[k] * (1 + ulp * static_cast<double>(k % 7)));
    }
    cut.ptr.push_back(cut.col.size());
  }
  return ebla::test::make_csr(cut);
}

// The stencil, CSR with binary64, binary32 and bfloat16 values (the narrow ones in slices of
// eight rows), and CSR with rows of 0 to 9 entries, in binary64 and in slices (bfloat16 and
// binary64 values).
std::vector<Case> operators() {
  const auto P = ebla::hpccg_problem(nx, ny, nz);
  std::vector<Case> c;
  c.push_back({"stencil", ebla::rows_of(ebla::StencilOperator(nx, ny, nz))});
  // values exact in binary32, not in bfloat16: 27 (1 + 2^-15), -(1 + 2^-15)
  ebla::CsrMatrix B = P.A;
  B.values = Kokkos::View<double*>("values", P.A.values.extent(0));
  Kokkos::deep_copy(B.values, P.A.values);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B.values);
  for (std::size_t k = 0; k < hv.extent(0); ++k) hv(k) *= 1 + 0x1p-15;
  Kokkos::deep_copy(B.values, hv);
  c.push_back({"csr binary64", ebla::rows_of(ebla::CsrOperator(P.A))});
  c.push_back({"csr binary32", ebla::detail::narrowed(ebla::rows_of(ebla::CsrOperator(B)))});
  c.push_back({"csr bfloat16", ebla::detail::narrowed(ebla::rows_of(ebla::CsrOperator(P.A)))});
  c.push_back({"csr cut rows", ebla::rows_of(ebla::CsrOperator(cut_rows(P.A)))});
  // rows of 0 to 9 entries, values exact in bfloat16, in slices of eight rows: the vector
  // form's masks and gathers
  c.push_back({"csr cut rows, slices", ebla::rows_of(ebla::CsrOperator::narrowest(cut_rows(P.A, 0)))});
  // the same rows with values exact in no narrower format: binary64 in slices
  // (padded to the longest of eight rows of 0 to 9 entries, the slices take more bytes than
  // the CSR arrays: narrowest makes them only when told that any growth will do)
  c.push_back({"csr cut rows, binary64 slices",
               ebla::rows_of(ebla::CsrOperator::narrowest(cut_rows(P.A, 0x1p-40), std::numeric_limits<double>::infinity()))});
  EXPECT_GT(c[2].rows.values32.extent(0), 0u);
  EXPECT_GT(c[3].rows.values16.extent(0), 0u);
  EXPECT_GT(c[6].rows.values64.extent(0), 0u);
  for (int k : {2, 3, 5, 6}) EXPECT_EQ(c[k].rows.slices.extent(0), (n + 7) / 8 + 1) << c[k].name;
  return c;
}

::testing::AssertionResult same_sums(const ebla::detail::StepSums& a, const ebla::detail::StepSums& b) {
  if (same(a.dot, b.dot) && same(a.abs_dot, b.abs_dot) && same(a.err2, b.err2) && same(a.amax, b.amax) &&
      same(a.zmax, b.zmax) && a.bad == b.bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "sums differ: dot " << a.dot << " / " << b.dot << ", abs_dot " << a.abs_dot
                                       << " / " << b.abs_dot << ", err2 " << a.err2 << " / " << b.err2 << ", amax "
                                       << a.amax << " / " << b.amax << ", zmax " << a.zmax << " / " << b.zmax;
}

bool runs(HostIsa isa) {
  try {
    ebla::detail::set_stored_isa(isa);
    ebla::detail::reset_stored_isa();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// f() under the generic form and under `isa`, returning what each gave.
template <class F>
auto both(HostIsa isa, const F& f) {
  ebla::detail::set_stored_isa(HostIsa::baseline);
  auto generic = f();
  ebla::detail::set_stored_isa(isa);
  auto host = f();
  ebla::detail::reset_stored_isa();
  return std::make_pair(generic, host);
}

class StoredSimd : public ::testing::TestWithParam<HostIsa> {
 protected:
  void SetUp() override {
    if (!runs(GetParam()))
      GTEST_SKIP() << "this CPU cannot run the " << ebla::detail::to_string(GetParam())
                   << " form (AVX2 needs F16C too)";
  }
};

// The store alone, with the scale fixed so that values land where they are meant to.
TEST_P(StoredSimd, StoreMatchesTheGenericFormAtTheFormatsEdges) {
  std::vector<double> edge;
  const auto add = [&](double x) {
    edge.push_back(x);
    edge.push_back(-x);
  };
  // every format's subnormals, its least normal, midpoints between neighbours (ties both
  // ways) around them and around 1, fmax and past it, values below the least subnormal
  for (const auto& f : {ebla::formats::binary16(), ebla::formats::bfloat16(), ebla::formats::binary32()}) {
    const double tiny = std::ldexp(1.0, f.emin - f.t + 1), fmin = std::ldexp(1.0, f.emin);
    for (int k = 0; k < 40; ++k) {
      const double m = static_cast<double>(k);
      add(m * tiny);
      add((m + 0.5) * tiny);                        // midpoints of the subnormals
      add(std::nextafter((m + 0.5) * tiny, 0.0));   // just below
      add(std::nextafter((m + 0.5) * tiny, 1.0));   // just above
      add(fmin + m * tiny);
      add(fmin + (m + 0.5) * tiny);
      add(fmin - (m + 0.5) * tiny);
      add(1 + (m + 0.5) * std::ldexp(1.0, 1 - f.t));  // ties at 1
      add(3 + (m + 0.5) * std::ldexp(1.0, 2 - f.t));
    }
    const double fmax = std::ldexp(2 - std::ldexp(1.0, 1 - f.t), f.emax);
    const double half_ulp = std::ldexp(1.0, f.emax - f.t);
    add(fmax);
    add(fmax + half_ulp);                      // overflows (ties to even: away)
    add(std::nextafter(fmax + half_ulp, 0.0));  // rounds down to fmax
    add(std::ldexp(1.0, f.emax + 1));
    add(0.25 * tiny);
    add(0.5 * tiny);
    add(std::ldexp(1.0, -1074));
    add(std::ldexp(1.0, -1060));
    add(1e300);
  }
  for (int k = 0; k < 64; ++k) add(std::ldexp(1.0 + k * 0x1p-7, -1022 + k));  // binary64 normals near its edge
  const std::vector<double> random = random_values(3000, 300, 11);
  for (Storage s : formats())
    for (int variant = 0; variant < 4; ++variant) {
      std::vector<double> v = variant < 2 ? edge : random;
      if (variant == 1 || variant == 3) {  // infinities and NaN mixed in
        v[5] = HUGE_VAL;
        v[41] = -HUGE_VAL;
        v[77] = std::nan("");
      }
      v.resize(n - 3 * 512 - 5 + (variant % 2) * 512, 0.75);  // tiles, blocks and lanes left short
      const ebla::Vector values = from_host(v);
      for (int scale : {0, -20, 30}) {
        StoredVector p = ebla::make_stored_vector(s, v.size(), "p");
        p.scale_exponent = s == Storage::binary64 || ebla::is_block(s) ? 0 : scale;
        const auto r = both(GetParam(), [&] {
          StoredVector q = clone(p);
          const ebla::StoreSums sums = ebla::detail::store_stored(q, values);
          return std::make_pair(bytes_of(q), std::vector<double>{sums.err2, sums.amax, sums.bad ? 1.0 : 0.0});
        });
        EXPECT_EQ(r.first.first, r.second.first) << ebla::to_string(s) << " variant " << variant << " scale " << scale;
        ASSERT_EQ(r.first.second.size(), r.second.second.size());
        for (std::size_t j = 0; j < r.first.second.size(); ++j)
          EXPECT_TRUE(same(r.first.second[j], r.second.second[j]) ||
                      (std::isnan(r.first.second[j]) && std::isnan(r.second.second[j])))
              << ebla::to_string(s) << " variant " << variant << " scale " << scale << " sum " << j << ": "
              << r.first.second[j] << " / " << r.second.second[j];
      }
    }
}

// p of each format from values spanning `binades` binades, and (binary16, bfloat16) every
// finite word pattern that fits, subnormals included.
StoredVector pattern_vector(Storage s, int binades, std::uint64_t seed) {
  StoredVector p = stored(s, random_values(n, binades, seed));
  if (s == Storage::binary16 || s == Storage::bfloat16) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.u16);
    std::mt19937_64 gen(seed);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t w = static_cast<std::uint16_t>(gen());
      const bool special = s == Storage::binary16 ? (w & 0x7c00u) == 0x7c00u : (w & 0x7f80u) == 0x7f80u;
      if (special) w &= s == Storage::binary16 ? 0x83ffu : 0x807fu;  // a subnormal instead
      h(i) = w;
    }
    Kokkos::deep_copy(p.u16, h);
  }
  return p;
}

TEST_P(StoredSimd, EveryPassMatchesTheGenericForm) {
  const auto ops = operators();
  const ebla::Vector b = from_host(random_values(n, 6, 3));
  const ebla::Vector x0 = from_host(random_values(n, 6, 4));
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = 1.0 / (27.0 + static_cast<double>(i % 5));
  const ebla::Vector dinv = from_host(d);
  const ebla::Vector none;
  int compared = 0;
  for (Storage sp : formats())
    for (Storage sq : formats())
      for (int binades : {4, 40}) {
        const std::string what = std::string(ebla::to_string(sp)) + "/" + ebla::to_string(sq) + " binades " +
                                 std::to_string(binades);
        const StoredVector p = pattern_vector(sp, binades, 5 + static_cast<std::uint64_t>(binades));
        const StoredVector q0 = pattern_vector(sq, binades, 7);
        const StoredVector r0 = pattern_vector(sq, binades, 9);
        for (const auto& op : ops) {
          const double a_norm = ebla::detail::infinity_norm_bound(op.rows);
          for (bool q_max : {true, false}) {
            const auto r = both(GetParam(), [&] {
              StoredVector q = clone(q0);
              const auto s = ebla::detail::apply_stored(op.rows, a_norm, p, q, 3.0, q_max);
              return std::make_pair(bytes_of(q), s);
            });
            EXPECT_EQ(r.first.first, r.second.first) << "apply " << what << " " << op.name;
            EXPECT_TRUE(same_sums(r.first.second, r.second.second)) << "apply " << what << " " << op.name;
            ++compared;
          }
          const auto pw = both(GetParam(), [&] {
            StoredVector w = clone(q0);
            const auto s = ebla::detail::power_stored(op.rows, a_norm, p, w, 3.0, 2);
            return std::make_pair(bytes_of(w), std::vector<double>{s.vw, s.vv, s.ww, s.abs_vw, s.err2, s.amax,
                                                                   s.bad ? 1.0 : 0.0});
          });
          EXPECT_EQ(pw.first.first, pw.second.first) << "power " << what << " " << op.name;
          for (std::size_t j = 0; j < pw.first.second.size(); ++j)
            EXPECT_TRUE(same(pw.first.second[j], pw.second.second[j])) << "power " << what << " " << op.name << " " << j;
          if (sp == formats().front()) {  // replace reads only r's format
            for (const auto& di : {none, dinv}) {
              const auto rp = both(GetParam(), [&] {
                StoredVector rr = clone(r0);
                const auto s = ebla::detail::replace_stored(op.rows, b, x0, rr, di);
                return std::make_pair(bytes_of(rr), s);
              });
              EXPECT_EQ(rp.first.first, rp.second.first) << "replace " << what << " " << op.name;
              EXPECT_TRUE(same_sums(rp.first.second, rp.second.second)) << "replace " << what << " " << op.name;
            }
          }
        }
        for (const auto& di : {none, dinv})
          for (double coefficient : {0.0, -0.3725, 1.5e-3}) {
            const auto up = both(GetParam(), [&] {
              StoredVector r = clone(r0);
              const auto s = ebla::detail::update_stored(coefficient == 0 ? 0.75 : coefficient, q0, r, di, 2.0, 2.0);
              return std::make_pair(bytes_of(r), s);
            });
            EXPECT_EQ(up.first.first, up.second.first) << "update " << what;
            EXPECT_TRUE(same_sums(up.first.second, up.second.second)) << "update " << what;
            // direction alone (p_0 = z_0, a restart) and with x += alpha p (CG's iterations)
            for (bool moves_x : {false, true}) {
              const auto dir = both(GetParam(), [&] {
                StoredVector pp = clone(p);
                ebla::Vector x = clone(x0);
                const auto s = moves_x ? ebla::detail::direction_stored(coefficient, r0, di, pp, 2.0, 3.0, -0.6875, x)
                                       : ebla::detail::direction_stored(coefficient, r0, di, pp, 2.0, 3.0);
                std::vector<unsigned char> out = bytes_of(pp);
                const auto hx = bytes_of(ebla::Vector(x));
                out.insert(out.end(), hx.begin(), hx.end());
                return std::make_pair(out, s);
              });
              EXPECT_EQ(dir.first.first, dir.second.first) << "direction " << what << " beta " << coefficient << " x " << moves_x;
              EXPECT_TRUE(same_sums(dir.first.second, dir.second.second))
                  << "direction " << what << " beta " << coefficient << " x " << moves_x;
            }
            compared += 3;
          }
      }
  EXPECT_GT(compared, 0);
}

// Block-Jacobi's apply in the host form (groups of eight interleaved blocks in vectors, four
// groups at once) against the generic form, bit for bit: every block format, blocks of 32
// rows (interleaved groups, most of them four alike in a row), of 48 (alike, too large to
// interleave: solve_blocks) and of at most 5 (short blocks, groups not alike), a tail of
// blocks short of a group, r with values over twenty decades, and the solve in place.
TEST_P(StoredSimd, BlockJacobiApplyMatchesTheGenericForm) {
  const ebla::DiffusionProblem d = ebla::diffusion_problem(nx, ny, nz, 3);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0), e(-10.0, 10.0);
  std::vector<double> r(n);
  for (double& v : r) v = u(rng) * std::pow(10.0, e(rng));
  for (int most : {32, 48, 5})
    for (const char* storage : {"binary64", "binary32", "bfloat16", "auto"}) {
      const ebla::BlockJacobi M(d.A, most, "test", ebla::block_storage_by_name(storage, "test"));
      std::size_t alike = 0;  // groups of eight blocks from a multiple of eight, of one size
      const std::vector<std::size_t>& b = M.starts();
      for (std::size_t g = 0; 8 * g + 8 < b.size(); ++g) {
        bool one = b[8 * g + 1] - b[8 * g] > 1;
        for (std::size_t k = 8 * g; k < 8 * g + 8; ++k) one = one && b[k + 1] - b[k] == b[8 * g + 1] - b[8 * g];
        alike += one ? 1 : 0;
      }
      if (most != 5) {
        EXPECT_GE(alike, 8u) << "blocks of at most " << most << " rows";
      }
      const auto [generic, host] = both(GetParam(), [&] {
        ebla::Vector z("z", n);
        M.apply(ebla::test::vec(r), z);
        const ebla::Vector w = ebla::test::vec(r);
        M.apply(w, w);
        return std::make_pair(ebla::test::host(z), ebla::test::host(w));
      });
      std::size_t differ = 0;
      for (std::size_t i = 0; i < n; ++i)
        differ += same(generic.first[i], host.first[i]) && same(generic.first[i], host.second[i]) ? 0 : 1;
      EXPECT_EQ(differ, 0u) << "blocks of at most " << most << " rows, " << storage << " (" << M.formats() << ")";
      EXPECT_EQ(generic.first, generic.second);  // in place, the same bits
    }
}

// The switch: the generic form is chosen where asked, and a form the CPU lacks is refused.
TEST(StoredSimdSwitch, ForcesAndRefuses) {
  ebla::detail::set_stored_isa(HostIsa::baseline);
  EXPECT_EQ(ebla::detail::stored_isa(), HostIsa::baseline);
  ebla::detail::reset_stored_isa();
  for (HostIsa isa : {HostIsa::avx2, HostIsa::avx512}) {
    if (!runs(isa)) {
      EXPECT_THROW(ebla::detail::set_stored_isa(isa), std::exception);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Host, StoredSimd, ::testing::Values(HostIsa::avx2, HostIsa::avx512),
                         [](const ::testing::TestParamInfo<HostIsa>& i) { return ebla::detail::to_string(i.param); });

}  // namespace
