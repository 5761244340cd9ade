#include <ebla/kernels/matrix_unit.hpp>

#include <ebla/core/parallel.hpp>

#include <sstream>

namespace ebla {

namespace {

void validate_formats(const MatrixUnit& u, const char* function) {
  validate(u.input, function);
  validate(u.accumulation, function);
  if (!u.exact_products) validate(u.product, function);
  if (!u.accumulation.subnormals)
    throw_invalid(function, "accumulation format " + format_name(u.accumulation) +
                                " has no subnormals; say output_subnormals = false instead");
  if (!u.exact_products && !u.product.subnormals)
    throw_invalid(function, "product format " + format_name(u.product) + " has no subnormals");
  // the model reads inputs as values of the accumulation format (seed 000, Table 2: u_low >=
  // u_high)
  const Format& in = u.input;
  const Format& acc = u.accumulation;
  if (in.t > acc.t || in.emin < acc.emin || in.emax > acc.emax)
    throw_invalid(function, "input format " + format_name(in) +
                                " is wider than the accumulation format " + format_name(acc));
}

void validate_adder(const MatrixUnit& u, const char* function) {
  if (u.rounding != Rounding::nearest_even && u.rounding != Rounding::toward_zero)
    throw_invalid(function, std::string("rounding = ") + to_string(u.rounding) +
                                " is not nearest_even or toward_zero");
  if (u.extra_bits < 0 && u.extra_bits != MatrixUnit::unbounded)
    throw_invalid(function, "extra_bits = " + std::to_string(u.extra_bits) +
                                " must be >= 0 or MatrixUnit::unbounded (-1)");
  if (u.sum_precision != 0 && (u.sum_precision < 2 || u.sum_precision > u.accumulation.t))
    throw_invalid(function, "sum_precision = " + std::to_string(u.sum_precision) +
                                " is not 0 (the accumulation's) or in 2..t = " +
                                std::to_string(u.accumulation.t));
  if (u.chains < 1 || u.chains > u.block)
    throw_invalid(function, "chains = " + std::to_string(u.chains) +
                                " is outside 1..block = " + std::to_string(u.block));
  if (u.chains > 1 && u.normalisation == Normalisation::at_end)
    throw_invalid(function,
                  "chains = " + std::to_string(u.chains) + " needs normalisation = each_addition");
  if (u.pairwise) {
    if (u.normalisation != Normalisation::each_addition)
      throw_invalid(function, "pairwise = true needs normalisation = each_addition, not " +
                                  std::string(to_string(u.normalisation)));
    if (u.chains != 1)
      throw_invalid(function,
                    "pairwise = true needs chains = 1, not chains = " + std::to_string(u.chains));
    if (u.addend != AddendJoin::after_products)
      throw_invalid(function, "pairwise = true needs addend = after_products (d = c + the tree's "
                              "sum), not " + std::string(to_string(u.addend)));
    if ((u.block & (u.block - 1)) != 0)
      throw_invalid(function, "pairwise = true needs a block that is a power of two, not block = " +
                                  std::to_string(u.block));
  }
}

}  // namespace

void validate(const MatrixUnit& u, const char* function) {
  if (u.block < 1 || u.block > detail::max_unit_block)
    throw_invalid(function, "block = " + std::to_string(u.block) + " is outside 1.." +
                                std::to_string(detail::max_unit_block));
  validate_formats(u, function);
  validate_adder(u, function);
}

double unit_dot(const MatrixUnit& unit, const double* a, const double* b, std::size_t k, double c) {
  validate(unit, "ebla::unit_dot");
  if (k > 0 && (a == nullptr || b == nullptr))
    throw_invalid("ebla::unit_dot",
                  std::string(a == nullptr ? "a" : "b") + " is null with k = " + std::to_string(k));
  return detail::unit_dot_prepared(detail::prepare(unit), detail::ArrayElements{a},
                                   detail::ArrayElements{b}, k, c);
}

double unit_dot(const MatrixUnit& unit, const std::vector<double>& a, const std::vector<double>& b,
                double c) {
  if (a.size() != b.size())
    throw_invalid("ebla::unit_dot", "a has " + std::to_string(a.size()) + " elements, b has " +
                                        std::to_string(b.size()));
  return unit_dot(unit, a.data(), b.data(), a.size(), c);
}

void unit_dot_rows(const MatrixUnit& unit, const double* A, const double* B, const double* C,
                   double* D, std::size_t rows, std::size_t k) {
  const char* function = "ebla::unit_dot_rows";
  validate(unit, function);
  if (rows == 0) return;
  const bool operands = k == 0 || (A != nullptr && B != nullptr);
  if (!operands || C == nullptr || D == nullptr)
    throw_invalid(function, std::string(C == nullptr ? "C" : D == nullptr ? "D" : A == nullptr ? "A" : "B") +
                                " is null with " + std::to_string(rows) + " rows");
  const detail::PreparedUnit p = detail::prepare(unit);
  const auto row = [=](const std::size_t r) {
    D[r] = detail::unit_dot_prepared(p, detail::ArrayElements{A + r * k},
                                     detail::ArrayElements{B + r * k}, k, C[r]);
  };
  if (detail::host_threads() == 1) {  // (also where Kokkos is not initialised)
    for (std::size_t r = 0; r < rows; ++r) row(r);
    return;
  }
  using exec = Kokkos::DefaultHostExecutionSpace;
  Kokkos::parallel_for("ebla::unit_dot_rows", Kokkos::RangePolicy<exec>(0, rows), row);
  exec().fence();
}

namespace detail {

void check_unit_gemm(const MatrixUnit& unit, std::size_t am, std::size_t ak, std::size_t bk,
                     std::size_t bn, std::size_t cm, std::size_t cn) {
  validate(unit, "ebla::unit_gemm");
  auto shape = [](std::size_t r, std::size_t c) {
    return std::to_string(r) + " x " + std::to_string(c);
  };
  if (ak != bk || am != cm || bn != cn)
    throw_invalid("ebla::unit_gemm", "A is " + shape(am, ak) + ", B is " + shape(bk, bn) +
                                         ", C is " + shape(cm, cn) +
                                         "; need m x k, k x n and m x n");
}

}  // namespace detail

namespace units {

namespace {

/// A tensor-core-like unit: exact products, one multi-operand addition with truncated
/// alignment, round toward zero, normalisation at the end (seed 003), subnormals kept.
MatrixUnit tensor_core(int block, const Format& input, int extra_bits) {
  MatrixUnit u;
  u.block = block;
  u.input = input;
  u.accumulation = formats::binary32();
  u.rounding = Rounding::toward_zero;
  u.extra_bits = extra_bits;
  u.normalisation = Normalisation::at_end;
  u.addend = AddendJoin::with_products;
  return u;
}

/// An NVIDIA tensor core as measured by Khattak & Mikaitis (2025): tensor_core's adder with
/// the products unnormalised and aligned on their exponent sums, E at least `floor`.
MatrixUnit nvidia(int block, const Format& input, int extra_bits, int floor) {
  MatrixUnit u = tensor_core(block, input, extra_bits);
  u.alignment = Alignment::exponent_sum;
  u.alignment_floor = floor;
  return u;
}

/// The generations: products per unit operation for 16-bit, tf32 and fp8 inputs, extra bits,
/// the precision of the sums for fp8 inputs (0: binary32's 24 bits) and the floor of the
/// alignment exponent.
struct Generation {
  int block16, block_tf32, block_fp8;
  int extra, extra_fp8, precision_fp8;
  Rounding rounding_fp8;
  int floor;
};
constexpr Rounding rz = Rounding::toward_zero;
constexpr Rounding rn = Rounding::nearest_even;
// A100, A2, Ada, L40S (fp8: Ada, L40S)
constexpr Generation ampere{8, 4, 16, 1, 0, 14, rz, -132};
constexpr Generation hopper{16, 8, 32, 2, 0, 14, rz, -133};     // H100, H200
constexpr Generation blackwell{16, 8, 32, 2, 7, 0, rn, -133};  // B200

MatrixUnit sixteen(const Generation& g, const Format& input) {
  return nvidia(g.block16, input, g.extra, g.floor);
}
MatrixUnit tf32_unit(const Generation& g) {
  return nvidia(g.block_tf32, formats::tf32(), g.extra, g.floor);
}
MatrixUnit fp8(const Generation& g, const Format& input) {
  MatrixUnit u = nvidia(g.block_fp8, input, g.extra_fp8, g.floor);
  u.sum_precision = g.precision_fp8;
  u.rounding = g.rounding_fp8;
  return u;
}

/// The same tensor core with binary16 results (PTX's .f16 accumulators): the adder aligns to
/// the width it has for binary32 results, 24 + K bits, and rounds the sum to nearest binary16
/// once; c is a binary16 value. Khattak & Mikaitis's data (fp16 inputs) fix the rounding; the
/// width only loosely (docs/matrix-units.md); their models give the alignment floors.
MatrixUnit half_results(MatrixUnit u, int floor) {
  u.extra_bits += formats::binary32().t - formats::binary16().t;
  u.accumulation = formats::binary16();
  u.rounding = Rounding::nearest_even;
  u.alignment_floor = floor;
  return u;
}

/// AMD CDNA 1 (MI100) matrix cores as Khattak & Mikaitis model them: b products and c summed
/// exactly, then rounded once to nearest binary32, subnormals kept.
MatrixUnit cdna1(int block, const Format& input) {
  MatrixUnit u = tensor_core(block, input, MatrixUnit::unbounded);
  u.rounding = Rounding::nearest_even;
  return u;
}

/// AMD CDNA 2 (MI210, MI250) matrix cores as Khattak & Mikaitis model them (models/MI210MC.m,
/// pair_wise_sum = 1, fma = 4 for both input formats; tools/Generic_BFMA_TC.m, pws_main and
/// pws_fma): subnormal inputs read as zero, each product formed in binary32 (rounded to nearest:
/// exact for 16-bit inputs unless it overflows or underflows) and flushed below 2^-126, the four
/// products added as (p1 + p2) + (p3 + p4), every addition a binary32 addition to nearest with
/// its result flushed below 2^-126, then d = c + that sum, likewise.
MatrixUnit cdna2(const Format& input) {
  MatrixUnit u;
  u.block = 4;
  u.input = input;
  u.input_subnormals = false;
  u.exact_products = false;
  u.product = formats::binary32();
  u.accumulation = formats::binary32();
  u.rounding = Rounding::nearest_even;
  u.normalisation = Normalisation::each_addition;
  u.addend = AddendJoin::after_products;
  u.pairwise = true;
  u.output_subnormals = false;
  return u;
}

/// An IEEE fused multiply-add chain in one format.
MatrixUnit fma_chain(const Format& f) {
  MatrixUnit u;
  u.input = f;
  u.accumulation = f;
  return u;
}

/// x86 BF16 dot-product instructions: FP32 FMAs with DAZ and FTZ, round to nearest even.
MatrixUnit x86_bf16(int block) {
  MatrixUnit u;
  u.block = block;
  u.input = formats::bfloat16();
  u.input_subnormals = false;
  u.accumulation = formats::binary32();
  u.output_subnormals = false;
  u.normalisation = Normalisation::each_addition;
  return u;
}

}  // namespace

MatrixUnit fma_binary64() { return fma_chain(formats::binary64()); }
MatrixUnit fma_binary32() { return fma_chain(formats::binary32()); }
MatrixUnit fma_in(const Format& format) { return fma_chain(format); }
MatrixUnit v100_fp16() { return nvidia(4, formats::binary16(), 0, MatrixUnit::no_floor); }
MatrixUnit a100_fp16() { return sixteen(ampere, formats::binary16()); }
MatrixUnit a100_bf16() { return sixteen(ampere, formats::bfloat16()); }
MatrixUnit a100_tf32() { return tf32_unit(ampere); }
MatrixUnit h100_fp16() { return sixteen(hopper, formats::binary16()); }
MatrixUnit h100_bf16() { return sixteen(hopper, formats::bfloat16()); }
MatrixUnit h100_tf32() { return tf32_unit(hopper); }
MatrixUnit h100_fp8_e4m3() { return fp8(hopper, formats::fp8_e4m3()); }
MatrixUnit h100_fp8_e5m2() { return fp8(hopper, formats::fp8_e5m2()); }
MatrixUnit ada_fp16() { return sixteen(ampere, formats::binary16()); }
MatrixUnit ada_bf16() { return sixteen(ampere, formats::bfloat16()); }
MatrixUnit ada_tf32() { return tf32_unit(ampere); }
MatrixUnit ada_fp8_e4m3() { return fp8(ampere, formats::fp8_e4m3()); }
MatrixUnit ada_fp8_e5m2() { return fp8(ampere, formats::fp8_e5m2()); }
MatrixUnit b200_fp16() { return sixteen(blackwell, formats::binary16()); }
MatrixUnit b200_bf16() { return sixteen(blackwell, formats::bfloat16()); }
MatrixUnit b200_tf32() { return tf32_unit(blackwell); }
MatrixUnit b200_fp8_e4m3() { return fp8(blackwell, formats::fp8_e4m3()); }
MatrixUnit b200_fp8_e5m2() { return fp8(blackwell, formats::fp8_e5m2()); }
MatrixUnit mi100_fp16() { return cdna1(4, formats::binary16()); }
MatrixUnit mi100_bf16() { return cdna1(2, formats::bfloat16()); }
MatrixUnit mi210_fp16() { return cdna2(formats::binary16()); }
MatrixUnit mi210_bf16() { return cdna2(formats::bfloat16()); }
MatrixUnit v100_fp16_out16() { return half_results(v100_fp16(), -19); }
MatrixUnit a100_fp16_out16() { return half_results(a100_fp16(), -20); }
MatrixUnit ada_fp16_out16() { return half_results(ada_fp16(), -20); }
MatrixUnit h100_fp16_out16() { return half_results(h100_fp16(), -21); }
MatrixUnit b200_fp16_out16() { return half_results(b200_fp16(), -21); }

MatrixUnit avx512_bf16_dot() {
  // VDPBF16PS, lane i: srcdest += a[2i+1] b[2i+1]; srcdest += a[2i] b[2i] (the odd element
  // first), each an FP32 FMA. The SDM and this CPU's instruction agree (test_matrix_unit),
  // also where the SDM is terse: a denormal srcdest reads as zero, and FTZ flushes a result
  // that is below 2^-126 after rounding with an unbounded exponent (x86's tininess rule).
  MatrixUnit u = x86_bf16(2);
  u.order = ProductOrder::backward;
  u.addend = AddendJoin::with_products;
  return u;
}

MatrixUnit amx_bf16() {
  // TDPBF16PS (Intel SDM): per output element, the even and the odd elements of the 16 pairs
  // of a 64-byte tile row accumulate in two FP32 FMA chains from 0; then even + odd, then
  // c + that. Not verified on hardware.
  MatrixUnit u = x86_bf16(32);
  u.order = ProductOrder::forward;
  u.chains = 2;
  u.addend = AddendJoin::after_products;
  return u;
}

}  // namespace units

const std::vector<NamedMatrixUnit>& matrix_unit_catalogue() {
#define KM "Khattak & Mikaitis 2025, MATLAB tensor & matrix core models (BSD-2-Clause): "
  static const std::vector<NamedMatrixUnit> catalogue = {
      {"fma_binary64", units::fma_binary64(), "IEEE 754 fusedMultiplyAdd in binary64"},
      {"fma_binary32", units::fma_binary32(), "IEEE 754 fusedMultiplyAdd in binary32"},
      {"v100_fp16", units::v100_fp16(),
       KM "V100 fp16 outputs (data/tensor-cores/v100_fp16_fp32.txt); b = 4, 0 extra bits, "
          "exponent-sum alignment, RZ"},
      {"a100_fp16", units::a100_fp16(),
       KM "A100 and A2 fp16 outputs; b = 8, 1 extra bit, exponent-sum alignment, E >= -132, RZ"},
      {"a100_bf16", units::a100_bf16(), KM "A100 and A2 bf16 outputs; as a100_fp16"},
      {"a100_tf32", units::a100_tf32(), KM "A100 and A2 tf32 outputs; as a100_fp16 with b = 4"},
      {"h100_fp16", units::h100_fp16(),
       KM "H100 and H200 fp16 outputs; b = 16, 2 extra bits, exponent-sum alignment, E >= -133, "
          "RZ"},
      {"h100_bf16", units::h100_bf16(), KM "H100 and H200 bf16 outputs; as h100_fp16"},
      {"h100_tf32", units::h100_tf32(), KM "H100 and H200 tf32 outputs; as h100_fp16 with b = 8"},
      {"h100_fp8_e4m3", units::h100_fp8_e4m3(),
       KM "H100 and H200 fp8-E4M3 outputs; b = 32, sums and d truncated to 14 bits, 0 extra bits"},
      {"h100_fp8_e5m2", units::h100_fp8_e5m2(),
       KM "H100 and H200 fp8-E5M2 outputs; as h100_fp8_e4m3"},
      {"ada_fp16", units::ada_fp16(), KM "Ada and L40S fp16 outputs; as a100_fp16"},
      {"ada_bf16", units::ada_bf16(), KM "Ada and L40S bf16 outputs; as a100_fp16"},
      {"ada_tf32", units::ada_tf32(), KM "Ada and L40S tf32 outputs; as a100_tf32"},
      {"ada_fp8_e4m3", units::ada_fp8_e4m3(),
       KM "Ada and L40S fp8-E4M3 outputs; b = 16, sums and d truncated to 14 bits, 0 extra bits, "
          "E >= -132"},
      {"ada_fp8_e5m2", units::ada_fp8_e5m2(), KM "Ada and L40S fp8-E5M2 outputs; as ada_fp8_e4m3"},
      {"b200_fp16", units::b200_fp16(), KM "B200 fp16 outputs; as h100_fp16"},
      {"b200_bf16", units::b200_bf16(), KM "B200 bf16 outputs; as h100_fp16"},
      {"b200_tf32", units::b200_tf32(), KM "B200 tf32 outputs; as h100_tf32"},
      {"b200_fp8_e4m3", units::b200_fp8_e4m3(),
       KM "B200 fp8-E4M3 outputs; b = 32, rounded to nearest, 7 extra bits (the fewest that "
          "match all 5000 published E4M3 cases; more, unbounded included, match too), E >= -133"},
      {"b200_fp8_e5m2", units::b200_fp8_e5m2(), KM "B200 fp8-E5M2 outputs; as b200_fp8_e4m3"},
      {"v100_fp16_out16", units::v100_fp16_out16(),
       KM "V100 fp16 inputs, binary16 outputs; v100_fp16's adder (24 bits aligned), the sum "
          "rounded to nearest binary16, E >= -19"},
      {"a100_fp16_out16", units::a100_fp16_out16(),
       KM "A100 and A2 fp16 inputs, binary16 outputs; a100_fp16's adder (25 bits), rounded to "
          "nearest binary16, E >= -20"},
      {"ada_fp16_out16", units::ada_fp16_out16(), KM "Ada and L40S binary16 outputs; as a100_fp16_out16"},
      {"h100_fp16_out16", units::h100_fp16_out16(),
       KM "H100 and H200 fp16 inputs, binary16 outputs; h100_fp16's adder (26 bits), rounded to "
          "nearest binary16, E >= -21"},
      {"b200_fp16_out16", units::b200_fp16_out16(), KM "B200 binary16 outputs; as h100_fp16_out16"},
      {"mi100_fp16", units::mi100_fp16(),
       "Khattak & Mikaitis 2025, models/MI100MC.m (their model of AMD CDNA 1; no hardware outputs "
       "published): b = 4, exact sum, one rounding to nearest binary32; not verified on hardware"},
      {"mi100_bf16", units::mi100_bf16(),
       "Khattak & Mikaitis 2025, models/MI100MC.m: bf16 as mi100_fp16 with b = 2; not verified on "
       "hardware"},
      {"mi210_fp16", units::mi210_fp16(),
       "Khattak & Mikaitis 2025, models/MI210MC.m (their model of AMD CDNA 2; no hardware outputs "
       "published) with tools/Generic_BFMA_TC.m (pws_main, pws_fma): b = 4, DAZ, products in "
       "binary32, pairwise (p1 + p2) + (p3 + p4) then c, each addition binary32 RN with FTZ; not "
       "verified on hardware"},
      {"mi210_bf16", units::mi210_bf16(),
       "Khattak & Mikaitis 2025, models/MI210MC.m: bf16 as mi210_fp16, b = 4 (the model's fma = 4 "
       "for both formats; 2 only for bf16 instructions without _1k, its comment says); not "
       "verified on hardware"},
      // the same parameters measured on other GPUs of a generation
      {"a2_fp16", units::a100_fp16(), KM "A2 fp16 outputs; as a100_fp16"},
      {"a2_bf16", units::a100_bf16(), KM "A2 bf16 outputs; as a100_bf16"},
      {"a2_tf32", units::a100_tf32(), KM "A2 tf32 outputs; as a100_tf32"},
      {"l40s_fp16", units::ada_fp16(), KM "L40S fp16 outputs; as ada_fp16"},
      {"l40s_bf16", units::ada_bf16(), KM "L40S bf16 outputs; as ada_bf16"},
      {"l40s_tf32", units::ada_tf32(), KM "L40S tf32 outputs; as ada_tf32"},
      {"l40s_fp8_e4m3", units::ada_fp8_e4m3(), KM "L40S fp8-E4M3 outputs; as ada_fp8_e4m3"},
      {"l40s_fp8_e5m2", units::ada_fp8_e5m2(), KM "L40S fp8-E5M2 outputs; as ada_fp8_e5m2"},
      {"h200_fp16", units::h100_fp16(), KM "H200 fp16 outputs; as h100_fp16"},
      {"h200_bf16", units::h100_bf16(), KM "H200 bf16 outputs; as h100_bf16"},
      {"h200_tf32", units::h100_tf32(), KM "H200 tf32 outputs; as h100_tf32"},
      {"h200_fp8_e4m3", units::h100_fp8_e4m3(), KM "H200 fp8-E4M3 outputs; as h100_fp8_e4m3"},
      {"h200_fp8_e5m2", units::h100_fp8_e5m2(), KM "H200 fp8-E5M2 outputs; as h100_fp8_e5m2"},
      {"a2_fp16_out16", units::a100_fp16_out16(), KM "A2 binary16 outputs; as a100_fp16_out16"},
      // A30: the authors' model is A100's (models/A30TC.m); no A30 outputs are published
      {"a30_fp16", units::a100_fp16(), "Khattak & Mikaitis 2025, models/A30TC.m: as a100_fp16 (no A30 outputs published)"},
      {"a30_bf16", units::a100_bf16(), "Khattak & Mikaitis 2025, models/A30TC.m: as a100_bf16 (no A30 outputs published)"},
      {"a30_tf32", units::a100_tf32(), "Khattak & Mikaitis 2025, models/A30TC.m: as a100_tf32 (no A30 outputs published)"},
      {"a30_fp16_out16", units::a100_fp16_out16(),
       "Khattak & Mikaitis 2025, models/A30TC.m: as a100_fp16_out16 (no A30 outputs published)"},
      {"l40s_fp16_out16", units::ada_fp16_out16(), KM "L40S binary16 outputs; as ada_fp16_out16"},
      {"h200_fp16_out16", units::h100_fp16_out16(), KM "H200 binary16 outputs; as h100_fp16_out16"},
      // MI250: models/MI250MC.m calls MI210MC (the same CDNA 2 matrix cores)
      {"mi250_fp16", units::mi210_fp16(),
       "Khattak & Mikaitis 2025, models/MI250MC.m (calls MI210MC.m): as mi210_fp16; not verified "
       "on hardware"},
      {"mi250_bf16", units::mi210_bf16(),
       "Khattak & Mikaitis 2025, models/MI250MC.m (calls MI210MC.m): as mi210_bf16; not verified "
       "on hardware"},
      {"avx512_bf16_dot", units::avx512_bf16_dot(),
       "Intel SDM, VDPBF16PS; matches this CPU's instruction bit for bit"},
      {"amx_bf16", units::amx_bf16(), "Intel SDM, TDPBF16PS pseudocode; not verified on hardware"},
  };
#undef KM
  return catalogue;
}

MatrixUnit matrix_unit_by_name(const std::string& name) {
  for (const auto& entry : matrix_unit_catalogue())
    if (entry.name == name) return entry.unit;
  throw_invalid("ebla::matrix_unit_by_name", "unknown matrix unit '" + name + "'");
}

const char* to_string(Normalisation n) {
  return n == Normalisation::at_end ? "at_end" : "each_addition";
}
const char* to_string(AddendJoin a) {
  return a == AddendJoin::with_products ? "with_products" : "after_products";
}
const char* to_string(ProductOrder o) {
  return o == ProductOrder::forward ? "forward" : "backward";
}
const char* to_string(Alignment a) {
  return a == Alignment::leading_bit ? "leading_bit" : "exponent_sum";
}

std::string to_string(const MatrixUnit& u) {
  std::ostringstream s;
  s << "block " << u.block << ", input " << format_name(u.input)
    << (u.input_subnormals ? "" : " (subnormals read as zero)") << ", products "
    << (u.exact_products ? std::string("exact") : "rounded to " + format_name(u.product))
    << ", accumulation " << format_name(u.accumulation) << " " << to_string(u.rounding)
    << (u.output_subnormals ? "" : " (subnormals flushed)")
    << (u.sum_precision != 0 ? ", sums of " + std::to_string(u.sum_precision) + " bits" : "")
    << ", extra bits "
    << (u.extra_bits == MatrixUnit::unbounded ? std::string("unbounded")
                                              : std::to_string(u.extra_bits))
    << ", normalisation " << to_string(u.normalisation) << ", addend " << to_string(u.addend);
  if (u.normalisation == Normalisation::at_end && u.alignment != Alignment::leading_bit)
    s << ", alignment " << to_string(u.alignment);
  if (u.normalisation == Normalisation::at_end && u.alignment_floor != MatrixUnit::no_floor)
    s << ", alignment exponent >= " << u.alignment_floor;
  if (u.normalisation == Normalisation::each_addition && u.pairwise)
    s << ", pairwise tree";  // (order and chains do not apply)
  else if (u.normalisation == Normalisation::each_addition)
    s << ", order " << to_string(u.order) << ", chains " << u.chains;
  return s.str();
}

}  // namespace ebla
