// Custom matrix units from a small text file (docs/matrix-units.md, "Custom units").
//
// A spec is one `key = value` per line; `#` starts a comment, blank lines are skipped:
//
//   # a V100 with one extra alignment bit
//   base = v100_fp16      # optional, and first if given: start from a catalogue preset
//   extra_bits = 1
//
// Keys, one per field of MatrixUnit: block, input, input_subnormals, exact_products, product,
// accumulation, rounding, extra_bits (an integer >= 0 or `unbounded`), sum_precision,
// normalisation (at_end, each_addition), alignment (leading_bit, exponent_sum),
// alignment_floor (an integer or `none`), addend (with_products, after_products),
// order (forward, backward), chains, output_subnormals, pairwise. Formats are names or custom
// specs as format_by_name reads them, roundings as rounding_by_name, booleans `true` or `false`.
// Without `base`, `input` and `accumulation` are required; the other fields keep their
// defaults (one rounding per operation as a binary64 FMA has, exact products, b = 1).
//
// Where it runs: on the host (text in and out); the unit it gives is plain data that kernels on
// any backend take (matrix_unit.hpp).
#pragma once

#include <ebla/kernels/matrix_unit.hpp>

#include <istream>
#include <string>

namespace ebla {

/// Reads a spec; `source` names it in messages ("file.unit"). Throws InvalidArgument naming
/// source:line and the key or value for a line without '=', an unknown or repeated key, a
/// value that does not parse, `base` after another key, a missing input or accumulation,
/// and (through validate) a unit that is not valid.
MatrixUnit read_unit_spec(std::istream& in, const std::string& source);

/// read_unit_spec on a file; throws InvalidArgument naming the path if it cannot be read.
MatrixUnit read_unit_spec_file(const std::string& path);

/// The spec of a unit, every key on a line of its own: read_unit_spec gives the unit back.
std::string unit_spec(const MatrixUnit& unit);

}  // namespace ebla
