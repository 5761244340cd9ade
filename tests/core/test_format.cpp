// Formats: the catalogue against seed 001 Table 2.1, derived constants, encodings,
// lookup by name and validation of bad parameters.
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/parse.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// One row of seed 001, Table 2.1, read from data/formats_table_2_1.csv.
struct TableRow {
  std::string name;
  int emin, emax, t;
  double fmax;
};

std::vector<TableRow> table_2_1() {
  std::ifstream in(EBLA_DATA_DIR "/formats_table_2_1.csv");
  EXPECT_TRUE(in.good()) << "cannot open " EBLA_DATA_DIR "/formats_table_2_1.csv";
  std::vector<TableRow> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) { header = false; continue; }
    std::stringstream ss(line);
    std::string name, emin, emax, t, fmax;
    std::getline(ss, name, ',');
    std::getline(ss, emin, ',');
    std::getline(ss, emax, ',');
    std::getline(ss, t, ',');
    std::getline(ss, fmax, ',');
    rows.push_back({name, std::stoi(emin), std::stoi(emax), std::stoi(t), std::strtod(fmax.c_str(), nullptr)});
  }
  return rows;
}

TEST(Format, CatalogueMatchesTable21OfSeed001) {
  const auto rows = table_2_1();
  ASSERT_EQ(rows.size(), 10u);
  ASSERT_EQ(ebla::format_catalogue().size(), rows.size());
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const ebla::Format f = ebla::format_by_name(row.name);
    EXPECT_EQ(f.t, row.t);
    EXPECT_EQ(f.emin, row.emin);
    EXPECT_EQ(f.emax, row.emax);
    EXPECT_EQ(f.u(), std::ldexp(1.0, -row.t));
    EXPECT_EQ(f.fmin(), std::ldexp(1.0, row.emin));
    EXPECT_EQ(f.fmax(), row.fmax);
    EXPECT_TRUE(f.subnormals);
    EXPECT_EQ(ebla::format_name(f), row.name);
  }
}

TEST(Format, TableRatiosAgreeWithPrintedDecimals) {
  // Table 2.1 prints fmax of the wide formats to four digits
  EXPECT_NEAR(ebla::formats::binary32().fmax(), 3.403e38, 0.001e38);
  EXPECT_NEAR(ebla::formats::tf32().fmax(), 3.401e38, 0.001e38);
  EXPECT_NEAR(ebla::formats::bfloat16().fmax(), 3.389e38, 0.001e38);
}

TEST(Format, GminFollowsEquation21) {
  ebla::Format f = ebla::formats::binary16();
  EXPECT_EQ(f.gmin(), f.u() * f.fmin());  // with subnormals: u fmin
  f.subnormals = false;
  EXPECT_EQ(f.gmin(), f.fmin() / 2);  // without: fmin / 2
  EXPECT_EQ(f.smallest_positive(), f.fmin());
  EXPECT_EQ(ebla::formats::binary16().smallest_positive(), std::ldexp(1.0, -24));
}

// binary64's u fmin = 2^-1075 is no double: gmin() is the next double above it (an upper
// bound, as every bound that uses it needs), never 0 or -0 (pow2 of -1075 underflowed)
TEST(Format, GminOfBinary64IsTheSmallestDoubleAboveUFmin) {
  const ebla::Format f = ebla::formats::binary64();
  EXPECT_EQ(f.gmin(), std::ldexp(1.0, -1074));
  EXPECT_FALSE(std::signbit(f.gmin()));
  EXPECT_GE(static_cast<long double>(f.gmin()), std::ldexp(1.0L, -1075));  // u fmin, exactly
  for (const ebla::Format& g : {ebla::formats::binary32(), ebla::formats::bfloat16(), ebla::formats::fp8_e4m3()})
    EXPECT_EQ(g.gmin(), g.u() * g.fmin());  // other formats: exactly u fmin
}

TEST(Format, SpecialValuesFollowTheOcpEncodings) {
  EXPECT_FALSE(ebla::formats::fp8_e4m3().has_infinity());
  EXPECT_TRUE(ebla::formats::fp8_e4m3().has_nan());
  EXPECT_EQ(ebla::formats::fp8_e4m3().overflow, ebla::Overflow::nan);
  EXPECT_TRUE(ebla::formats::fp8_e5m2().has_infinity());
  EXPECT_FALSE(ebla::formats::fp6_e2m3().has_nan());
  EXPECT_EQ(ebla::formats::fp4_e2m1().overflow, ebla::Overflow::saturate);
}

TEST(Format, EncodingWidthsAreTheStandardOnes) {
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::binary64()), 64);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::binary32()), 32);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::tf32()), 19);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::bfloat16()), 16);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::binary16()), 16);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::fp8_e4m3()), 8);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::fp8_e5m2()), 8);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::fp6_e2m3()), 6);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::fp6_e3m2()), 6);
  EXPECT_EQ(ebla::encoding_bits(ebla::formats::fp4_e2m1()), 4);
  EXPECT_EQ(ebla::encoding_bits(ebla::make_format(5, -3, 7)), 0);  // 11 exponent fields
}

TEST(Format, DecodesHandCheckedEncodings) {
  const auto e4m3 = ebla::formats::fp8_e4m3();
  EXPECT_EQ(ebla::decode(0x7e, e4m3), 448.0);  // S.1111.110
  EXPECT_TRUE(std::isnan(ebla::decode(0x7f, e4m3)));
  EXPECT_EQ(ebla::decode(0x01, e4m3), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(ebla::decode(0x38, e4m3), 1.0);
  const auto e5m2 = ebla::formats::fp8_e5m2();
  EXPECT_TRUE(std::isinf(ebla::decode(0x7c, e5m2)));
  EXPECT_EQ(ebla::decode(0x7b, e5m2), 57344.0);
  EXPECT_EQ(ebla::decode(0xfb, e5m2), -57344.0);
  EXPECT_EQ(ebla::decode(0x1f, ebla::formats::fp6_e2m3()), 7.5);
  EXPECT_EQ(ebla::decode(0x1f, ebla::formats::fp6_e3m2()), 28.0);
  EXPECT_EQ(ebla::decode(0x7, ebla::formats::fp4_e2m1()), 6.0);
  EXPECT_EQ(ebla::decode(0x1, ebla::formats::fp4_e2m1()), 0.5);
  EXPECT_EQ(ebla::decode(0x3c00, ebla::formats::binary16()), 1.0);
  EXPECT_EQ(ebla::decode(0x7bff, ebla::formats::binary16()), 65504.0);
  EXPECT_EQ(ebla::decode(0x3f80, ebla::formats::bfloat16()), 1.0);
  EXPECT_THROW(ebla::decode(0, ebla::formats::binary32()), ebla::InvalidArgument);
}

TEST(Format, LooksUpAliasesAndCustomSpecs) {
  EXPECT_EQ(ebla::format_by_name("half"), ebla::formats::binary16());
  EXPECT_EQ(ebla::format_by_name("fp8-e4m3"), ebla::formats::fp8_e4m3());
  EXPECT_EQ(ebla::format_by_name("BF16"), ebla::formats::bfloat16());
  EXPECT_EQ(ebla::format_by_name("double"), ebla::formats::binary64());
  const ebla::Format c = ebla::format_by_name("custom:t=5,emin=-3,emax=4,subnormals=0");
  EXPECT_EQ(c.t, 5);
  EXPECT_EQ(c.emin, -3);
  EXPECT_EQ(c.emax, 4);
  EXPECT_FALSE(c.subnormals);
  EXPECT_EQ(ebla::format_by_name(ebla::format_name(c)), c);
  const ebla::Format n = ebla::format_by_name("custom:t=4,emin=-6,emax=8,specials=nan_only");
  EXPECT_EQ(n, ebla::formats::fp8_e4m3());  // the OCP default overflow follows the encoding
}

std::string message_of(const std::string& name) {
  try {
    ebla::format_by_name(name);
  } catch (const ebla::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Format, RejectsBadNamesAndParametersWithAMessageNamingTheValue) {
  EXPECT_NE(message_of("binary17").find("'binary17'"), std::string::npos);
  EXPECT_NE(message_of("binary17").find("ebla::format_by_name"), std::string::npos);
  EXPECT_NE(message_of("custom:t=1,emin=-3,emax=4").find("t = 1"), std::string::npos);
  EXPECT_NE(message_of("custom:t=5,emin=4,emax=3").find("emin = 4"), std::string::npos);
  EXPECT_NE(message_of("custom:t=5,emin=-3").find("needs t, emin and emax"), std::string::npos);
  EXPECT_NE(message_of("custom:t=x,emin=-3,emax=4").find("'x'"), std::string::npos);
  EXPECT_NE(message_of("custom:t=5,emin=-3,emax=4,bogus=1").find("'bogus'"), std::string::npos);
  EXPECT_THROW(ebla::make_format(1, -3, 4), ebla::InvalidArgument);
  EXPECT_THROW(ebla::make_format(54, -3, 4), ebla::InvalidArgument);
  EXPECT_THROW(ebla::make_format(5, 4, 3), ebla::InvalidArgument);
  EXPECT_THROW(ebla::make_format(5, -1023, 3), ebla::InvalidArgument);
  EXPECT_THROW(ebla::make_format(5, -3, 1024), ebla::InvalidArgument);
  EXPECT_THROW(ebla::make_format(5, -3, 4, true, ebla::Specials::none, ebla::Overflow::infinity),
               ebla::InvalidArgument);
  EXPECT_THROW(ebla::make_format(5, -3, 4, true, ebla::Specials::none, ebla::Overflow::nan),
               ebla::InvalidArgument);
  EXPECT_NO_THROW(ebla::make_format(2, 0, 0, false, ebla::Specials::none, ebla::Overflow::saturate));
}

}  // namespace

// encode is decode's inverse on every encoding of every catalogue format of at most 16 bits
// (NaN encodings: the all-ones one of the same sign), and refuses what is no value.
TEST(Encoding, EncodeInvertsDecodeOnEveryEncoding) {
  long checked = 0;
  for (const auto& nf : ebla::format_catalogue()) {
    const ebla::Format& f = nf.format;
    const int width = ebla::encoding_bits(f);
    if (width == 0 || width > 16) continue;
    for (std::uint32_t bits = 0; bits < (1u << width); ++bits) {
      const double v = ebla::decode(bits, f);
      const std::uint32_t back = ebla::encode(v, f);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(ebla::decode(back, f))) << nf.name << " " << bits;
        EXPECT_EQ(back >> (width - 1), bits >> (width - 1)) << nf.name << " " << bits;
      } else if (!f.subnormals && (bits & ((1u << (width - 1)) - 1)) != 0 && v == 0) {
        EXPECT_EQ(ebla::decode(back, f), v) << nf.name;  // a non-value read as zero
      } else {
        EXPECT_EQ(back, bits) << nf.name << " " << v;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 65536 + 2 * 65536 / 256);
  const ebla::Format h = ebla::formats::binary16();
  EXPECT_EQ(ebla::encode(1.0, h), 0x3c00u);
  EXPECT_EQ(ebla::encode(-0x1p-24, h), 0x8001u);
  EXPECT_EQ(ebla::encode(65504.0, h), 0x7bffu);
  EXPECT_THROW(ebla::encode(0.1, h), ebla::InvalidArgument);      // not a value
  EXPECT_THROW(ebla::encode(65520.0, h), ebla::InvalidArgument);  // beyond fmax
  EXPECT_THROW(ebla::encode(0x1p-25, h), ebla::InvalidArgument);  // below the subnormals
  EXPECT_THROW(ebla::encode(1.0, ebla::formats::binary32()), ebla::InvalidArgument);  // 32 bits
  EXPECT_THROW(ebla::encode(INFINITY, ebla::formats::fp8_e4m3()), ebla::InvalidArgument);
  EXPECT_THROW(ebla::encode(NAN, ebla::formats::fp4_e2m1()), ebla::InvalidArgument);
}

// The text helpers of specs and command lines: numbers, and the distance of mistyped words.
TEST(Parse, NumbersAndWordDistances) {
  EXPECT_EQ(ebla::parse_double("0x1.8p-3", "x"), 0.1875);
  EXPECT_EQ(ebla::parse_double("1e-8", "x"), 1e-8);
  EXPECT_THROW(ebla::parse_double("1e-8x", "x"), ebla::InvalidArgument);
  EXPECT_THROW(ebla::parse_double("", "x"), ebla::InvalidArgument);
  EXPECT_EQ(ebla::edit_distance("", ""), 0u);
  EXPECT_EQ(ebla::edit_distance("v100", "v100_fp16"), 5u);       // five insertions
  EXPECT_EQ(ebla::edit_distance("weakfrom", "weakform"), 2u);    // two substitutions
  EXPECT_EQ(ebla::edit_distance("mma", "mac"), 2u);
  EXPECT_EQ(ebla::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(ebla::edit_distance("abc", ""), 3u);
}
