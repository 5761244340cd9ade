#include <ebla/kernels/matrix_unit.hpp>

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
  if (u.chains < 1 || u.chains > u.block)
    throw_invalid(function, "chains = " + std::to_string(u.chains) +
                                " is outside 1..block = " + std::to_string(u.block));
  if (u.chains > 1 && u.normalisation == Normalisation::at_end)
    throw_invalid(function,
                  "chains = " + std::to_string(u.chains) + " needs normalisation = each_addition");
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
MatrixUnit v100_fp16() { return tensor_core(4, formats::binary16(), 0); }
MatrixUnit a100_fp16() { return tensor_core(8, formats::binary16(), 3); }
MatrixUnit a100_bf16() { return tensor_core(8, formats::bfloat16(), 3); }
MatrixUnit a100_tf32() { return tensor_core(4, formats::tf32(), 3); }
MatrixUnit h100_fp16() { return tensor_core(16, formats::binary16(), 3); }
MatrixUnit h100_bf16() { return tensor_core(16, formats::bfloat16(), 3); }

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
  static const std::vector<NamedMatrixUnit> catalogue = {
      {"fma_binary64", units::fma_binary64(), "IEEE 754 fusedMultiplyAdd in binary64"},
      {"fma_binary32", units::fma_binary32(), "IEEE 754 fusedMultiplyAdd in binary32"},
      {"v100_fp16", units::v100_fp16(),
       "seed 003 (Fasi, Higham, Mikaitis, Pranesh): exact products, RZ, no extra bits, "
       "normalisation at the end; b = 4"},
      {"a100_fp16", units::a100_fp16(),
       "Fasi et al., PeerJ CS 7:e330 (the paper of seed 003): V100's adder with 3 extra bits; b = "
       "8"},
      {"a100_bf16", units::a100_bf16(), "as a100_fp16, bf16 inputs; b = 8"},
      {"a100_tf32", units::a100_tf32(), "as a100_fp16, tf32 inputs; b = 4"},
      {"h100_fp16", units::h100_fp16(), "assumed: A100's adder with b = 16 (not from the seeds)"},
      {"h100_bf16", units::h100_bf16(), "assumed: A100's adder with b = 16, bf16 inputs"},
      {"avx512_bf16_dot", units::avx512_bf16_dot(),
       "Intel SDM, VDPBF16PS; matches this CPU's instruction bit for bit"},
      {"amx_bf16", units::amx_bf16(), "Intel SDM, TDPBF16PS pseudocode; not verified on hardware"},
  };
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

std::string to_string(const MatrixUnit& u) {
  std::ostringstream s;
  s << "block " << u.block << ", input " << format_name(u.input)
    << (u.input_subnormals ? "" : " (subnormals read as zero)") << ", products "
    << (u.exact_products ? std::string("exact") : "rounded to " + format_name(u.product))
    << ", accumulation " << format_name(u.accumulation) << " " << to_string(u.rounding)
    << (u.output_subnormals ? "" : " (subnormals flushed)") << ", extra bits "
    << (u.extra_bits == MatrixUnit::unbounded ? std::string("unbounded")
                                              : std::to_string(u.extra_bits))
    << ", normalisation " << to_string(u.normalisation) << ", addend " << to_string(u.addend);
  if (u.normalisation == Normalisation::each_addition)
    s << ", order " << to_string(u.order) << ", chains " << u.chains;
  return s.str();
}

}  // namespace ebla
