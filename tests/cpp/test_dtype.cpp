// Tests of arrayport/dtype.hpp (layout, C++ type mapping, names), python/spellings.hpp (typestr
// and buffer formats) and half.hpp (the float16 / bfloat16 conversions, checked bit for bit
// against an independent oracle).
#include <gtest/gtest.h>

#include <arrayport/dtype.hpp>
#include <arrayport/python/spellings.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace arrayport {
// Readable gtest failure output for dtype comparisons (found by ADL).
inline void PrintTo(const dtype& dt, std::ostream* os) {
  *os << dt.name() << " (code=" << int(dt.code) << ", bits=" << int(dt.bits)
      << ", lanes=" << dt.lanes << ")";
}
}  // namespace arrayport

namespace {

using arrayport::bfloat16_t;
using arrayport::dtype;
using arrayport::dtype_of;
using arrayport::float16_t;
namespace dtypes = arrayport::dtypes;

// ---------------------------------------------------------------------------------------------
// Layout: proved at compile time, because dtype sits inside the frozen C view and goes to kernels
// by value.

static_assert(sizeof(dtype) == 4);
static_assert(sizeof(dtype) == sizeof(arrayport_dtype_t));
static_assert(alignof(dtype) == alignof(arrayport_dtype_t));
static_assert(std::is_standard_layout_v<dtype>);
static_assert(std::is_trivially_copyable_v<dtype>);
static_assert(std::is_trivially_destructible_v<dtype>);
static_assert(offsetof(dtype, code) == 0 && offsetof(dtype, bits) == 1 &&
              offsetof(dtype, lanes) == 2);
static_assert(sizeof(float16_t) == 2 && alignof(float16_t) == 2);
static_assert(sizeof(bfloat16_t) == 2 && alignof(bfloat16_t) == 2);
static_assert(std::is_standard_layout_v<float16_t> && std::is_trivially_copyable_v<float16_t>);
static_assert(std::is_standard_layout_v<bfloat16_t> && std::is_trivially_copyable_v<bfloat16_t>);
static_assert(std::is_trivially_default_constructible_v<float16_t>);
static_assert(std::is_trivially_default_constructible_v<bfloat16_t>);
// Conversions are explicit: no silent float <-> half in arithmetic.
static_assert(!std::is_convertible_v<float, float16_t> && !std::is_convertible_v<float16_t, float>);
static_assert(!std::is_convertible_v<float, bfloat16_t> &&
              !std::is_convertible_v<bfloat16_t, float>);
static_assert(std::is_constructible_v<float16_t, float> &&
              std::is_constructible_v<float, float16_t>);

// constexpr use.
static_assert(dtypes::float32.itemsize() == 4);
static_assert(dtypes::complex128.itemsize() == 16);
static_assert(dtypes::int8.name() == "int8");
static_assert(dtypes::float32 == dtype(ARRAYPORT_DTYPE_FLOAT, 32, 1));
static_assert(dtypes::float32 != dtypes::int32);
static_assert(arrayport::is_supported(dtypes::bfloat16));
static_assert(!arrayport::is_supported(dtype{}));
static_assert(float16_t::from_bits(0x3C00).bits == 0x3C00);
static_assert(bfloat16_t::from_bits(0x3F80).bits == 0x3F80);
static_assert(dtype::from_c(arrayport_dtype_t{2, 64, 1}) == dtypes::float64);
static_assert(dtypes::uint16.to_c().code == ARRAYPORT_DTYPE_UINT);

// dtype_of, cv-stripped, and has_dtype for SFINAE.
static_assert(dtype_of<float> == dtypes::float32);
static_assert(dtype_of<const float> == dtypes::float32);
static_assert(dtype_of<const volatile double> == dtypes::float64);
static_assert(arrayport::has_dtype<int> && arrayport::has_dtype<const std::complex<float>>);
static_assert(!arrayport::has_dtype<void*> && !arrayport::has_dtype<long double>);
static_assert(!arrayport::has_dtype<float&> && !arrayport::has_dtype<std::string>);

#if defined(__CUDACC__)
static_assert(dtype_of<__half> == dtypes::float16);
static_assert(dtype_of<const __half> == dtypes::float16);
static_assert(dtype_of<__nv_bfloat16> == dtypes::bfloat16);
#endif

// ---------------------------------------------------------------------------------------------
// Helpers

// Passes when f() throws exactly an E (or subclass) whose message contains every needle.
template <class E, class F>
::testing::AssertionResult throws_with(F f, std::vector<std::string> needles) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& needle : needles)
      if (what.find(needle) == std::string::npos)
        return ::testing::AssertionFailure()
               << "message \"" << what << "\" lacks \"" << needle << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw the wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float float_of(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

struct dtype_row {
  dtype dt;
  const char* name;
  std::size_t itemsize;
  const char* typestr;
  const char* buffer_format;  // nullptr: none
  bool floating, complex, integer, is_signed, boolean;
};

const dtype_row all_dtypes[] = {
    {dtypes::bool_, "bool", 1, "|b1", "?", false, false, false, false, true},
    {dtypes::int8, "int8", 1, "|i1", "b", false, false, true, true, false},
    {dtypes::int16, "int16", 2, "<i2", "h", false, false, true, true, false},
    {dtypes::int32, "int32", 4, "<i4", "i", false, false, true, true, false},
    {dtypes::int64, "int64", 8, "<i8", "q", false, false, true, true, false},
    {dtypes::uint8, "uint8", 1, "|u1", "B", false, false, true, false, false},
    {dtypes::uint16, "uint16", 2, "<u2", "H", false, false, true, false, false},
    {dtypes::uint32, "uint32", 4, "<u4", "I", false, false, true, false, false},
    {dtypes::uint64, "uint64", 8, "<u8", "Q", false, false, true, false, false},
    {dtypes::float16, "float16", 2, "<f2", "e", true, false, false, true, false},
    {dtypes::bfloat16, "bfloat16", 2, "<V2", nullptr, true, false, false, true, false},
    {dtypes::float32, "float32", 4, "<f4", "f", true, false, false, true, false},
    {dtypes::float64, "float64", 8, "<f8", "d", true, false, false, true, false},
    {dtypes::complex64, "complex64", 8, "<c8", "Zf", false, true, false, true, false},
    {dtypes::complex128, "complex128", 16, "<c16", "Zd", false, true, false, true, false},
};

const dtype unsupported_dtypes[] = {
    dtype{},                              // all zeros
    dtype(ARRAYPORT_DTYPE_INT, 8, 2),     // vector lanes
    dtype(ARRAYPORT_DTYPE_FLOAT, 32, 4),  // vector lanes
    dtype(ARRAYPORT_DTYPE_INT, 4),        // sub-byte
    dtype(ARRAYPORT_DTYPE_FLOAT, 8),      // fp8
    dtype(ARRAYPORT_DTYPE_FLOAT, 128),    // quad / long double
    dtype(ARRAYPORT_DTYPE_BOOL, 1),       // 1-bit bool
    dtype(ARRAYPORT_DTYPE_BFLOAT, 32),
    dtype(ARRAYPORT_DTYPE_COMPLEX, 32),  // complex of halves
    dtype(ARRAYPORT_DTYPE_OPAQUE_HANDLE, 64),
    dtype(7, 8),  // unknown code
};

// ---------------------------------------------------------------------------------------------
// dtype value type

TEST(DtypeLayout, RoundTripsThroughTheCStructBitForBit) {
  for (const dtype_row& row : all_dtypes) {
    const arrayport_dtype_t c = row.dt.to_c();
    EXPECT_EQ(c.code, row.dt.code);
    EXPECT_EQ(c.bits, row.dt.bits);
    EXPECT_EQ(c.lanes, row.dt.lanes);
    EXPECT_EQ(dtype::from_c(c), row.dt);
    EXPECT_EQ(std::memcmp(&c, &row.dt, sizeof c), 0) << row.name;
  }
}

TEST(Dtype, ConstantsUseDlpackCodesAndBits) {
  EXPECT_EQ(dtypes::bool_, dtype(ARRAYPORT_DTYPE_BOOL, 8, 1));  // DLPack: bool is 8 bits
  EXPECT_EQ(dtypes::int64, dtype(ARRAYPORT_DTYPE_INT, 64, 1));
  EXPECT_EQ(dtypes::uint8, dtype(ARRAYPORT_DTYPE_UINT, 8, 1));
  EXPECT_EQ(dtypes::float16, dtype(ARRAYPORT_DTYPE_FLOAT, 16, 1));
  EXPECT_EQ(dtypes::bfloat16, dtype(ARRAYPORT_DTYPE_BFLOAT, 16, 1));
  EXPECT_EQ(dtypes::complex64, dtype(ARRAYPORT_DTYPE_COMPLEX, 64, 1));  // bits count both parts
  EXPECT_EQ(dtypes::complex128, dtype(ARRAYPORT_DTYPE_COMPLEX, 128, 1));
}

TEST(Dtype, ValueInitialisedIsAllZeros) {
  const dtype dt{};
  EXPECT_EQ(dt.code, 0);
  EXPECT_EQ(dt.bits, 0);
  EXPECT_EQ(dt.lanes, 0);
}

TEST(Dtype, EqualityComparesCodeBitsAndLanes) {
  EXPECT_EQ(dtype(ARRAYPORT_DTYPE_FLOAT, 32), dtypes::float32);
  EXPECT_NE(dtype(ARRAYPORT_DTYPE_FLOAT, 32, 2), dtypes::float32);
  EXPECT_NE(dtype(ARRAYPORT_DTYPE_FLOAT, 64), dtypes::float32);
  EXPECT_NE(dtype(ARRAYPORT_DTYPE_INT, 32), dtypes::float32);
  EXPECT_NE(dtypes::float16, dtypes::bfloat16);
  EXPECT_NE(dtypes::uint8, dtypes::bool_);
  EXPECT_NE(dtypes::int64, dtypes::complex64);
}

TEST(Dtype, ItemsizeNameAndPredicatesMatchTableForEverySupportedDtype) {
  for (const dtype_row& row : all_dtypes) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.dt.itemsize(), row.itemsize);
    EXPECT_EQ(row.dt.name(), row.name);
    EXPECT_EQ(row.dt.is_floating(), row.floating);
    EXPECT_EQ(row.dt.is_complex(), row.complex);
    EXPECT_EQ(row.dt.is_integer(), row.integer);
    EXPECT_EQ(row.dt.is_signed(), row.is_signed);
    EXPECT_EQ(row.dt.is_bool(), row.boolean);
    EXPECT_TRUE(arrayport::is_supported(row.dt));
  }
}

TEST(Dtype, ItemsizeMultipliesLanesAndRoundsSubByteTypesUp) {
  EXPECT_EQ(dtype(ARRAYPORT_DTYPE_FLOAT, 32, 4).itemsize(), 16u);
  EXPECT_EQ(dtype(ARRAYPORT_DTYPE_INT, 4).itemsize(), 1u);
  EXPECT_EQ(dtype(ARRAYPORT_DTYPE_BOOL, 1).itemsize(), 1u);
  EXPECT_EQ(dtype(ARRAYPORT_DTYPE_INT, 1, 9).itemsize(), 2u);
  EXPECT_EQ(dtype(ARRAYPORT_DTYPE_UINT, 8, 65535).itemsize(), 65535u);
  EXPECT_EQ(dtype{}.itemsize(), 0u);
}

TEST(Dtype, UnsupportedCombinationsAreNamedUnknownAndNotSupported) {
  for (const dtype& dt : unsupported_dtypes) {
    SCOPED_TRACE(::testing::PrintToString(dt));
    EXPECT_EQ(dt.name(), "unknown");
    EXPECT_FALSE(arrayport::is_supported(dt));
  }
}

TEST(Dtype, PredicatesClassifyByCodeEvenForVectorAndOddWidths) {
  EXPECT_TRUE(dtype(ARRAYPORT_DTYPE_FLOAT, 8).is_floating());
  EXPECT_TRUE(dtype(ARRAYPORT_DTYPE_FLOAT, 32, 4).is_floating());
  EXPECT_TRUE(dtype(ARRAYPORT_DTYPE_INT, 4).is_integer());
  EXPECT_TRUE(dtype(ARRAYPORT_DTYPE_INT, 4).is_signed());
  EXPECT_FALSE(dtype(ARRAYPORT_DTYPE_OPAQUE_HANDLE, 64).is_integer());
  EXPECT_FALSE(dtype(ARRAYPORT_DTYPE_OPAQUE_HANDLE, 64).is_signed());
}

TEST(DtypeName, ParsesEveryNameBackToItsDtype) {
  for (const dtype_row& row : all_dtypes)
    EXPECT_EQ(arrayport::parse_dtype_name(row.name), row.dt) << row.name;
}

TEST(DtypeName, RejectsUnknownNamesWithTypeErrorQuotingInputAndListingAccepted) {
  for (const char* bad : {"", "float", "double", "half", "int", "Float32", "float32 ", " int8",
                          "bool_", "complex32", "float128", "bfloat16x2", "unknown"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(throws_with<arrayport::type_error>(
        [&] { arrayport::parse_dtype_name(bad); },
        {in_quotes(bad), "'float32'", "'bfloat16'", "'complex128'", "'bool'"}));
  }
}

// ---------------------------------------------------------------------------------------------
// dtype_of

TEST(DtypeOf, MapsFixedWidthIntegerAliases) {
  EXPECT_EQ(dtype_of<std::int8_t>, dtypes::int8);
  EXPECT_EQ(dtype_of<std::int16_t>, dtypes::int16);
  EXPECT_EQ(dtype_of<std::int32_t>, dtypes::int32);
  EXPECT_EQ(dtype_of<std::int64_t>, dtypes::int64);
  EXPECT_EQ(dtype_of<std::uint8_t>, dtypes::uint8);
  EXPECT_EQ(dtype_of<std::uint16_t>, dtypes::uint16);
  EXPECT_EQ(dtype_of<std::uint32_t>, dtypes::uint32);
  EXPECT_EQ(dtype_of<std::uint64_t>, dtypes::uint64);
}

TEST(DtypeOf, MapsBothLongAndLongLongBySizeAndSignedness) {
  EXPECT_EQ(dtype_of<long long>, dtypes::int64);
  EXPECT_EQ(dtype_of<unsigned long long>, dtypes::uint64);
  EXPECT_EQ(dtype_of<long>, sizeof(long) == 8 ? dtypes::int64 : dtypes::int32);
  EXPECT_EQ(dtype_of<unsigned long>, sizeof(long) == 8 ? dtypes::uint64 : dtypes::uint32);
  EXPECT_EQ(dtype_of<std::size_t>, dtypes::uint64);
  EXPECT_EQ(dtype_of<std::ptrdiff_t>, dtypes::int64);
  EXPECT_EQ(dtype_of<short>, dtypes::int16);
  EXPECT_EQ(dtype_of<unsigned short>, dtypes::uint16);
  EXPECT_EQ(dtype_of<int>, dtypes::int32);
  EXPECT_EQ(dtype_of<unsigned int>, dtypes::uint32);
}

TEST(DtypeOf, MapsCharBySignednessOfPlainChar) {
  EXPECT_EQ(dtype_of<signed char>, dtypes::int8);
  EXPECT_EQ(dtype_of<unsigned char>, dtypes::uint8);
  EXPECT_EQ(dtype_of<char>, std::is_signed_v<char> ? dtypes::int8 : dtypes::uint8);
}

TEST(DtypeOf, MapsBoolFloatingAndComplex) {
  EXPECT_EQ(dtype_of<bool>, dtypes::bool_);
  EXPECT_EQ(dtype_of<float>, dtypes::float32);
  EXPECT_EQ(dtype_of<double>, dtypes::float64);
  EXPECT_EQ(dtype_of<float16_t>, dtypes::float16);
  EXPECT_EQ(dtype_of<bfloat16_t>, dtypes::bfloat16);
  EXPECT_EQ(dtype_of<std::complex<float>>, dtypes::complex64);
  EXPECT_EQ(dtype_of<std::complex<double>>, dtypes::complex128);
}

TEST(DtypeOf, IgnoresConstAndVolatile) {
  EXPECT_EQ(dtype_of<const float>, dtypes::float32);
  EXPECT_EQ(dtype_of<volatile std::int16_t>, dtypes::int16);
  EXPECT_EQ(dtype_of<const volatile unsigned long long>, dtypes::uint64);
  EXPECT_EQ(dtype_of<const bool>, dtypes::bool_);
  EXPECT_EQ(dtype_of<const std::complex<double>>, dtypes::complex128);
  EXPECT_EQ(dtype_of<const bfloat16_t>, dtypes::bfloat16);
  EXPECT_EQ(dtype_of<const char>, dtype_of<char>);
}

TEST(DtypeOf, ItemsizeEqualsSizeofForEveryMappedType) {
  EXPECT_EQ(dtype_of<bool>.itemsize(), sizeof(bool));
  EXPECT_EQ(dtype_of<long>.itemsize(), sizeof(long));
  EXPECT_EQ(dtype_of<long long>.itemsize(), sizeof(long long));
  EXPECT_EQ(dtype_of<float16_t>.itemsize(), sizeof(float16_t));
  EXPECT_EQ(dtype_of<bfloat16_t>.itemsize(), sizeof(bfloat16_t));
  EXPECT_EQ(dtype_of<std::complex<float>>.itemsize(), sizeof(std::complex<float>));
  EXPECT_EQ(dtype_of<std::complex<double>>.itemsize(), sizeof(std::complex<double>));
}

// ---------------------------------------------------------------------------------------------
// NumPy typestr

TEST(Typestr, PrintsLittleEndianTypestrForEverySupportedDtype) {
  for (const dtype_row& row : all_dtypes) EXPECT_EQ(arrayport::to_typestr(row.dt), row.typestr);
}

TEST(Typestr, PrintsBfloat16AsOpaqueTwoBytesLikeMlDtypes) {
  EXPECT_EQ(arrayport::to_typestr(dtypes::bfloat16), "<V2");
}

TEST(Typestr, RoundTripsEverySupportedDtypeExceptBfloat16) {
  for (const dtype_row& row : all_dtypes) {
    if (row.dt == dtypes::bfloat16) continue;
    EXPECT_EQ(arrayport::parse_typestr(arrayport::to_typestr(row.dt)), row.dt) << row.typestr;
  }
}

TEST(Typestr, AcceptsNativeAndNotApplicableByteOrders) {
  for (const dtype_row& row : all_dtypes) {
    if (row.dt == dtypes::bfloat16) continue;
    const std::string kind_size = std::string(row.typestr).substr(1);
    for (const char* order : {"<", "=", "|"})
      EXPECT_EQ(arrayport::parse_typestr(order + kind_size), row.dt) << order << kind_size;
  }
}

TEST(Typestr, AcceptsBigEndianOnlyForSingleByteTypes) {
  EXPECT_EQ(arrayport::parse_typestr(">b1"), dtypes::bool_);
  EXPECT_EQ(arrayport::parse_typestr(">i1"), dtypes::int8);
  EXPECT_EQ(arrayport::parse_typestr(">u1"), dtypes::uint8);
}

TEST(Typestr, RejectsBigEndianMultiByteWithValueErrorQuotingInput) {
  for (const char* bad :
       {">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(throws_with<arrayport::value_error>([&] { arrayport::parse_typestr(bad); },
                                                    {in_quotes(bad), "big-endian", "'<'"}));
  }
}

TEST(Typestr, RejectsUnsupportedWithTypeErrorQuotingInputAndListingAccepted) {
  for (const char* bad : {"<V2",  "|V2",  "<V16", "<M8",  "<m8",  "<M8[ns]", "<f16", "<f1", "<c4",
                          "<c32", "<U4",  "|S4",  "O",    "|O",   "<O8",     "",     "<",   "<f",
                          "f4",   "<<f4", "<F4",  "<i3",  "<i16", "<u16",    "|b2",  "<b8", "<i04",
                          "<f4 ", " <f4", "<f4x", "<i+4", "*f4",  ">V2",     ">f16", "<?1"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(throws_with<arrayport::type_error>(
        [&] { arrayport::parse_typestr(bad); },
        {"unsupported typestr " + in_quotes(bad) + ": expected one of", "'<f4'", "'|b1'"}));
  }
}

TEST(Typestr, RejectsPrintingUnsupportedDtypesWithTypeErrorShowingFields) {
  for (const dtype& dt : unsupported_dtypes) {
    SCOPED_TRACE(::testing::PrintToString(dt));
    EXPECT_TRUE(throws_with<arrayport::type_error>(
        [&] { arrayport::to_typestr(dt); },
        {"code=" + std::to_string(dt.code), "bits=" + std::to_string(dt.bits),
         "lanes=" + std::to_string(dt.lanes), "no typestr"}));
  }
}

// ---------------------------------------------------------------------------------------------
// PEP 3118 buffer format

TEST(BufferFormat, PrintsFormatForEverySupportedDtypeExceptBfloat16) {
  for (const dtype_row& row : all_dtypes) {
    if (!row.buffer_format) continue;
    EXPECT_STREQ(arrayport::to_buffer_format(row.dt), row.buffer_format) << row.name;
  }
}

TEST(BufferFormat, PrintedFormatHasStaticStorage) {
  // Py_buffer.format must outlive the call: the same pointer comes back every time.
  EXPECT_EQ(arrayport::to_buffer_format(dtypes::float32),
            arrayport::to_buffer_format(dtypes::float32));
}

TEST(BufferFormat, RoundTripsEverySupportedDtypeExceptBfloat16WithAnyLittleEndianPrefix) {
  for (const dtype_row& row : all_dtypes) {
    if (!row.buffer_format) continue;
    for (const char* prefix : {"", "@", "=", "<"}) {
      const std::string format = prefix + std::string(row.buffer_format);
      EXPECT_EQ(arrayport::parse_buffer_format(format, row.itemsize), row.dt) << format;
    }
  }
}

TEST(BufferFormat, MapsEveryIntegerCodeByItemsizeWithSignednessFromCase) {
  const dtype signed_by_size[] = {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64};
  const dtype unsigned_by_size[] = {dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64};
  const std::size_t sizes[] = {1, 2, 4, 8};
  for (std::string_view code : {"h", "i", "l", "q", "n", "H", "I", "L", "Q", "N"}) {
    const bool is_signed = code[0] >= 'a';
    for (int k = 0; k < 4; ++k) {
      SCOPED_TRACE(std::string(code) + " itemsize " + std::to_string(sizes[k]));
      const dtype expected = is_signed ? signed_by_size[k] : unsigned_by_size[k];
      EXPECT_EQ(arrayport::parse_buffer_format(code, sizes[k]), expected);
      EXPECT_EQ(arrayport::parse_buffer_format("<" + std::string(code), sizes[k]), expected);
    }
  }
}

TEST(BufferFormat, MapsLongAsInt32OnWindowsSizesAndInt64OnLinuxSizes) {
  EXPECT_EQ(arrayport::parse_buffer_format("l", 4), dtypes::int32);
  EXPECT_EQ(arrayport::parse_buffer_format("l", 8), dtypes::int64);
  EXPECT_EQ(arrayport::parse_buffer_format("L", 4), dtypes::uint32);
  EXPECT_EQ(arrayport::parse_buffer_format("L", 8), dtypes::uint64);
  EXPECT_EQ(arrayport::parse_buffer_format("<l", 4), dtypes::int32);
  EXPECT_EQ(arrayport::parse_buffer_format("=q", 8), dtypes::int64);
}

TEST(BufferFormat, AcceptsStructAndNumpyComplexCodes) {
  EXPECT_EQ(arrayport::parse_buffer_format("Zf", 8), dtypes::complex64);
  EXPECT_EQ(arrayport::parse_buffer_format("Zd", 16), dtypes::complex128);
  EXPECT_EQ(arrayport::parse_buffer_format("F", 8), dtypes::complex64);
  EXPECT_EQ(arrayport::parse_buffer_format("D", 16), dtypes::complex128);
  EXPECT_EQ(arrayport::parse_buffer_format("<Zf", 8), dtypes::complex64);
  EXPECT_EQ(arrayport::parse_buffer_format("=D", 16), dtypes::complex128);
}

TEST(BufferFormat, AcceptsBoolBytesCharAndHalf) {
  EXPECT_EQ(arrayport::parse_buffer_format("?", 1), dtypes::bool_);
  EXPECT_EQ(arrayport::parse_buffer_format("b", 1), dtypes::int8);
  EXPECT_EQ(arrayport::parse_buffer_format("B", 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format("c", 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format("e", 2), dtypes::float16);
}

TEST(BufferFormat, TreatsEmptyOrNullFormatAsUnsignedBytes) {
  EXPECT_EQ(arrayport::parse_buffer_format(std::string_view(), 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format("", 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format(static_cast<const char*>(nullptr), 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format(nullptr, 1), dtypes::uint8);
  EXPECT_TRUE(throws_with<arrayport::type_error>(
      [] { arrayport::parse_buffer_format(static_cast<const char*>(nullptr), 4); },
      {"''", "itemsize 4", "'B'"}));
}

TEST(BufferFormat, AcceptsBigEndianPrefixOnlyForSingleByteTypes) {
  EXPECT_EQ(arrayport::parse_buffer_format(">B", 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format("!b", 1), dtypes::int8);
  EXPECT_EQ(arrayport::parse_buffer_format(">?", 1), dtypes::bool_);
  EXPECT_EQ(arrayport::parse_buffer_format("!c", 1), dtypes::uint8);
  EXPECT_EQ(arrayport::parse_buffer_format(">l", 1), dtypes::int8);
}

TEST(BufferFormat, RejectsBigEndianMultiByteWithValueErrorQuotingFormatAndItemsize) {
  const std::pair<const char*, std::size_t> cases[] = {
      {">f", 4}, {"!f", 4}, {">d", 8},  {">e", 2},   {">h", 2}, {"!i", 4},
      {">l", 8}, {"!Q", 8}, {">Zf", 8}, {">Zd", 16}, {"!D", 16}};
  for (const auto& test_case : cases) {
    // Named copies: lambdas may not capture structured bindings before C++20.
    const std::string format = test_case.first;
    const std::size_t itemsize = test_case.second;
    SCOPED_TRACE(format);
    EXPECT_TRUE(throws_with<arrayport::value_error>(
        [&] { arrayport::parse_buffer_format(format, itemsize); },
        {in_quotes(format), "itemsize " + std::to_string(itemsize), "big-endian"}));
  }
}

TEST(BufferFormat, RejectsUnsupportedCodesWithTypeErrorQuotingFormatAndItemsize) {
  const std::pair<const char*, std::size_t> cases[] = {
      {"g", 16},   {"Zg", 32},  {"<g", 16},  {"x", 1},       {"s", 1},  {"4s", 4},  {"p", 1},
      {"P", 8},    {"O", 8},    {"T{f}", 4}, {"T{d:x:}", 8}, {"2f", 8}, {"ff", 8},  {"f ", 4},
      {" f", 4},   {"f:x:", 4}, {"<", 1},    {"@", 1},       {"Z", 8},  {"Zq", 16}, {"Ze", 4},
      {"@@f", 4},  {"^f", 4},   {"<>f", 4},  {"u", 4},       {"w", 4},  {"V", 2},   {"&f", 8},
      {"(2)f", 8}, {"?", 2},    {"b", 2},    {"B", 4},       {"c", 2},  {"e", 4},   {"f", 8},
      {"f", 2},    {"d", 4},    {"Zf", 16},  {"Zd", 8},      {"F", 16}, {"D", 8},   {"", 4},
      {">g", 16},  {"!Zf", 16}};
  for (const auto& test_case : cases) {
    // Named copies: lambdas may not capture structured bindings before C++20.
    const std::string format = test_case.first;
    const std::size_t itemsize = test_case.second;
    SCOPED_TRACE(format);
    EXPECT_TRUE(throws_with<arrayport::type_error>(
        [&] { arrayport::parse_buffer_format(format, itemsize); },
        {in_quotes(format), "itemsize " + std::to_string(itemsize), "expected"}));
  }
}

TEST(BufferFormat, RejectsIntegerCodesWithItemsizeNotOneTwoFourOrEight) {
  for (const char* code : {"h", "i", "l", "q", "n", "H", "I", "L", "Q", "N", "<l", "=Q"}) {
    for (std::size_t itemsize : {0, 3, 5, 16}) {
      SCOPED_TRACE(std::string(code) + " itemsize " + std::to_string(itemsize));
      EXPECT_TRUE(throws_with<arrayport::type_error>(
          [&] { arrayport::parse_buffer_format(code, itemsize); },
          {in_quotes(code), "itemsize " + std::to_string(itemsize), "1, 2, 4 or 8"}));
    }
  }
}

TEST(BufferFormat, FixedSizeMismatchNamesTheExpectedItemsize) {
  EXPECT_TRUE(
      throws_with<arrayport::type_error>([] { arrayport::parse_buffer_format("f", 8); },
                                         {"'f'", "itemsize 8", "float32", "expected itemsize 4"}));
  EXPECT_TRUE(throws_with<arrayport::type_error>(
      [] { arrayport::parse_buffer_format("<Zd", 8); },
      {"'<Zd'", "itemsize 8", "complex128", "expected itemsize 16"}));
}

TEST(BufferFormat, RejectsPrintingBfloat16WithBufferError) {
  EXPECT_TRUE(
      throws_with<arrayport::buffer_error>([] { arrayport::to_buffer_format(dtypes::bfloat16); },
                                           {"bfloat16 has no buffer-protocol format"}));
}

TEST(BufferFormat, RejectsPrintingUnsupportedDtypesWithBufferErrorShowingFields) {
  for (const dtype& dt : unsupported_dtypes) {
    SCOPED_TRACE(::testing::PrintToString(dt));
    EXPECT_TRUE(throws_with<arrayport::buffer_error>(
        [&] { arrayport::to_buffer_format(dt); },
        {"code=" + std::to_string(dt.code), "bits=" + std::to_string(dt.bits),
         "no buffer-protocol format"}));
  }
}

TEST(Errors, AllParseErrorsAreArrayportErrors) {
  EXPECT_THROW(arrayport::parse_typestr("<V2"), arrayport::error);
  EXPECT_THROW(arrayport::parse_typestr(">f4"), arrayport::error);
  EXPECT_THROW(arrayport::parse_buffer_format("g", 16), arrayport::error);
  EXPECT_THROW(arrayport::to_buffer_format(dtypes::bfloat16), arrayport::error);
  EXPECT_THROW(arrayport::parse_dtype_name("half"), arrayport::error);
}

// ---------------------------------------------------------------------------------------------
// float16_t

// Oracle independent of the code under test: decode by the IEEE formula, round by searching the
// sorted positive encodings for the two neighbours and comparing distances in double (exact for
// these magnitudes), ties to the even encoding. Overflow rounds as if the exponent were unbounded,
// so the encoding after the largest finite value counts as its next power of two.
double half_value(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);  // for 0x1F: 2^16 beyond max
}

double bfloat16_value(std::uint16_t b) {
  const int exponent = (b >> 7) & 0xFF;
  const int mantissa = b & 0x7F;
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);  // for 0xFF: 2^128 beyond max
}

template <class Decode>
std::uint16_t round_to_nearest_even(float value, std::uint16_t positive_inf, Decode decode) {
  const double magnitude = std::fabs(double(value));
  const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (magnitude >= decode(positive_inf)) return sign | positive_inf;
  std::uint16_t lo = 0, hi = positive_inf;  // invariant: decode(lo) <= magnitude < decode(hi)
  while (hi - lo > 1) {
    const std::uint16_t mid = std::uint16_t((lo + hi) / 2);
    (decode(mid) <= magnitude ? lo : hi) = mid;
  }
  const double below = magnitude - decode(lo), above = decode(hi) - magnitude;
  const std::uint16_t nearest = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | nearest;
}

std::uint16_t reference_half(float value) {
  return round_to_nearest_even(value, 0x7C00, half_value);
}
std::uint16_t reference_bfloat16(float value) {
  return round_to_nearest_even(value, 0x7F80, bfloat16_value);
}

bool is_half_nan(std::uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }
bool is_bfloat16_nan(std::uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0; }

TEST(Float16, ConvertsExactValuesToKnownBitPatterns) {
  EXPECT_EQ(float16_t(1.0f).bits, 0x3C00);
  EXPECT_EQ(float16_t(-2.5f).bits, 0xC100);
  EXPECT_EQ(float16_t(0.5f).bits, 0x3800);
  EXPECT_EQ(float16_t(65504.0f).bits, 0x7BFF);  // largest finite
  EXPECT_EQ(float16_t(-65504.0f).bits, 0xFBFF);
  EXPECT_EQ(float16_t(0.0f).bits, 0x0000);
  EXPECT_EQ(float16_t(-0.0f).bits, 0x8000);
  EXPECT_EQ(float16_t(std::ldexp(1.0f, -14)).bits, 0x0400);     // smallest normal
  EXPECT_EQ(float16_t(std::ldexp(1.0f, -24)).bits, 0x0001);     // smallest subnormal
  EXPECT_EQ(float16_t(std::ldexp(1023.0f, -24)).bits, 0x03FF);  // largest subnormal
  EXPECT_EQ(float16_t(-std::ldexp(1.0f, -24)).bits, 0x8001);
}

TEST(Float16, ConvertsKnownBitPatternsToExactFloats) {
  EXPECT_EQ(float(float16_t::from_bits(0x3C00)), 1.0f);
  EXPECT_EQ(float(float16_t::from_bits(0xC100)), -2.5f);
  EXPECT_EQ(float(float16_t::from_bits(0x7BFF)), 65504.0f);
  EXPECT_EQ(float(float16_t::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(float(float16_t::from_bits(0x03FF)), std::ldexp(1023.0f, -24));
  EXPECT_EQ(float(float16_t::from_bits(0x0400)), std::ldexp(1.0f, -14));
  EXPECT_EQ(float(float16_t::from_bits(0x7C00)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(float(float16_t::from_bits(0xFC00)), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(float(float16_t::from_bits(0x7E00))));
  EXPECT_TRUE(std::isnan(float(float16_t::from_bits(0x7C01))));
  EXPECT_EQ(bits_of(float(float16_t::from_bits(0x7C01))), 0x7F802000u);  // NaN payload kept
  EXPECT_EQ(bits_of(float(float16_t::from_bits(0xFE00))), 0xFFC00000u);
  const float negative_zero = float(float16_t::from_bits(0x8000));
  EXPECT_EQ(negative_zero, 0.0f);
  EXPECT_TRUE(std::signbit(negative_zero));
}

TEST(Float16, OverflowsToInfinityAtHalfAnUlpAboveMax) {
  EXPECT_EQ(float16_t(65519.0f).bits, 0x7BFF);  // below the tie
  EXPECT_EQ(float16_t(65520.0f).bits, 0x7C00);  // tie: rounds to even, which is inf
  EXPECT_EQ(float16_t(1.0e6f).bits, 0x7C00);
  EXPECT_EQ(float16_t(-1.0e6f).bits, 0xFC00);
  EXPECT_EQ(float16_t(std::numeric_limits<float>::max()).bits, 0x7C00);
  EXPECT_EQ(float16_t(std::numeric_limits<float>::infinity()).bits, 0x7C00);
  EXPECT_EQ(float16_t(-std::numeric_limits<float>::infinity()).bits, 0xFC00);
}

TEST(Float16, UnderflowsToSignedZeroBelowHalfTheSmallestSubnormal) {
  EXPECT_EQ(float16_t(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie: rounds to even 0
  EXPECT_EQ(float16_t(-std::ldexp(1.0f, -25)).bits, 0x8000);
  EXPECT_EQ(float16_t(std::ldexp(1.5f, -25)).bits, 0x0001);  // above the tie
  EXPECT_EQ(float16_t(std::ldexp(1.0f, -30)).bits, 0x0000);
  EXPECT_EQ(float16_t(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(float16_t(-std::numeric_limits<float>::denorm_min()).bits, 0x8000);
}

TEST(Float16, RoundsHalfToEven) {
  EXPECT_EQ(float16_t(1.0f + std::ldexp(1.0f, -11)).bits, 0x3C00);      // tie -> even 1.0
  EXPECT_EQ(float16_t(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3C02);  // tie -> even up
  EXPECT_EQ(float16_t(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits, 0x3C01);
  EXPECT_EQ(float16_t(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23)).bits, 0x3C00);
  EXPECT_EQ(float16_t(std::ldexp(3.0f, -25)).bits, 0x0002);     // subnormal tie 1.5 -> 2
  EXPECT_EQ(float16_t(std::ldexp(5.0f, -25)).bits, 0x0002);     // subnormal tie 2.5 -> 2
  EXPECT_EQ(float16_t(std::ldexp(2047.0f, -25)).bits, 0x0400);  // largest subnormal tie -> normal
  EXPECT_EQ(float16_t(2049.0f).bits, 0x6800);                   // 2048 (even) not 2050
  EXPECT_EQ(float16_t(2051.0f).bits, 0x6802);                   // 2052 (even) not 2050
}

TEST(Float16, KeepsNanAsNanWithSign) {
  const float quiet = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(is_half_nan(float16_t(quiet).bits));
  EXPECT_TRUE(is_half_nan(float16_t(-quiet).bits));
  EXPECT_EQ(float16_t(-quiet).bits & 0x8000, 0x8000);
  EXPECT_TRUE(is_half_nan(float16_t(float_of(0x7F800001u)).bits));  // payload only in low bits
  EXPECT_TRUE(is_half_nan(float16_t(float_of(0xFF800001u)).bits));
  EXPECT_TRUE(std::isnan(float(float16_t(quiet))));
}

TEST(Float16, RoundTripsEveryNonNanEncodingExactly) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float16_t value = float16_t::from_bits(std::uint16_t(h));
    if (is_half_nan(value.bits)) {
      ASSERT_TRUE(std::isnan(float(value))) << h;
      ASSERT_TRUE(is_half_nan(float16_t(float(value)).bits)) << h;
      continue;
    }
    if ((value.bits & 0x7FFF) == 0x7C00)  // the oracle's decode gives 2^16 there, by design
      ASSERT_EQ(float(value), std::copysign(std::numeric_limits<float>::infinity(),
                                            (value.bits & 0x8000) ? -1.0f : 1.0f))
          << h;
    else
      ASSERT_EQ(double(float(value)), half_value(value.bits)) << h;
    ASSERT_EQ(float16_t(float(value)).bits, h) << h;
  }
}

TEST(Float16, MatchesReferenceAtEveryTieAndItsNeighbours) {
  // For each pair of adjacent finite halves: the exact midpoint and the floats either side of it.
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const float mid = float((half_value(std::uint16_t(h)) + half_value(std::uint16_t(h + 1))) / 2);
    for (float value : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1.0e30f)}) {
      ASSERT_EQ(float16_t(value).bits, reference_half(value)) << h << " " << value;
      ASSERT_EQ(float16_t(-value).bits, reference_half(-value)) << h << " " << value;
    }
  }
}

TEST(Float16, MatchesReferenceOnSampledFloats) {
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFu; x += 65521) {  // prime stride: all exponents
    const float value = float_of(std::uint32_t(x));
    if (std::isnan(value)) {
      ASSERT_TRUE(is_half_nan(float16_t(value).bits)) << x;
      ASSERT_EQ(std::uint64_t(float16_t(value).bits & 0x8000), (x >> 16) & 0x8000) << x;
      continue;
    }
    ASSERT_EQ(float16_t(value).bits, reference_half(value)) << x;
  }
}

#if defined(__FLT16_MAX__) && !defined(__CUDACC__)
TEST(Float16, MatchesCompilerFloat16OnSampledFloats) {
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFu; x += 4099) {
    const float value = float_of(std::uint32_t(x));
    const _Float16 native = static_cast<_Float16>(value);
    std::uint16_t native_bits;
    std::memcpy(&native_bits, &native, sizeof native_bits);
    if (std::isnan(value))
      ASSERT_TRUE(is_half_nan(float16_t(value).bits)) << x;
    else
      ASSERT_EQ(float16_t(value).bits, native_bits) << x;
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// bfloat16_t

TEST(Bfloat16, ConvertsExactValuesToKnownBitPatterns) {
  EXPECT_EQ(bfloat16_t(1.0f).bits, 0x3F80);
  EXPECT_EQ(bfloat16_t(-2.5f).bits, 0xC020);
  EXPECT_EQ(bfloat16_t(0.0f).bits, 0x0000);
  EXPECT_EQ(bfloat16_t(-0.0f).bits, 0x8000);
  EXPECT_EQ(bfloat16_t(std::numeric_limits<float>::infinity()).bits, 0x7F80);
  EXPECT_EQ(bfloat16_t(-std::numeric_limits<float>::infinity()).bits, 0xFF80);
  EXPECT_EQ(bfloat16_t(std::numeric_limits<float>::min()).bits, 0x0080);  // smallest normal
  EXPECT_EQ(bfloat16_t(float_of(0x00010000u)).bits, 0x0001);  // smallest bfloat16 subnormal
}

TEST(Bfloat16, ConvertsKnownBitPatternsToExactFloats) {
  EXPECT_EQ(float(bfloat16_t::from_bits(0x3F80)), 1.0f);
  EXPECT_EQ(float(bfloat16_t::from_bits(0xC020)), -2.5f);
  EXPECT_EQ(float(bfloat16_t::from_bits(0x7F7F)), float_of(0x7F7F0000u));  // largest finite
  EXPECT_EQ(float(bfloat16_t::from_bits(0x7F80)), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(float(bfloat16_t::from_bits(0x7FC0))));
  EXPECT_EQ(bits_of(float(bfloat16_t::from_bits(0xFFC1))), 0xFFC10000u);  // NaN payload kept
  EXPECT_TRUE(std::signbit(float(bfloat16_t::from_bits(0x8000))));
}

TEST(Bfloat16, RoundsHalfToEven) {
  EXPECT_EQ(bfloat16_t(float_of(0x3F808000u)).bits, 0x3F80);  // 1 + 2^-8: tie -> even 1.0
  EXPECT_EQ(bfloat16_t(float_of(0x3F818000u)).bits, 0x3F82);  // 1 + 3*2^-8: tie -> even up
  EXPECT_EQ(bfloat16_t(float_of(0x3F808001u)).bits, 0x3F81);  // just above the tie
  EXPECT_EQ(bfloat16_t(float_of(0x3F807FFFu)).bits, 0x3F80);  // just below the tie
  EXPECT_EQ(bfloat16_t(float_of(0xBF818000u)).bits, 0xBF82);  // negative tie
}

TEST(Bfloat16, OverflowsToInfinityAboveHalfAnUlpPastMax) {
  EXPECT_EQ(bfloat16_t(std::numeric_limits<float>::max()).bits, 0x7F80);
  EXPECT_EQ(bfloat16_t(-std::numeric_limits<float>::max()).bits, 0xFF80);
  EXPECT_EQ(bfloat16_t(float_of(0x7F7F7FFFu)).bits, 0x7F7F);  // below the tie stays finite
  EXPECT_EQ(bfloat16_t(float_of(0x7F7F8000u)).bits, 0x7F80);  // tie -> even, which is inf
}

TEST(Bfloat16, KeepsNanAsNanEvenWithPayloadOnlyInLowBits) {
  EXPECT_TRUE(is_bfloat16_nan(bfloat16_t(std::numeric_limits<float>::quiet_NaN()).bits));
  // Truncation would give inf and rounding would carry into inf: both must be avoided.
  EXPECT_TRUE(is_bfloat16_nan(bfloat16_t(float_of(0x7F800001u)).bits));
  EXPECT_TRUE(is_bfloat16_nan(bfloat16_t(float_of(0x7FFFFFFFu)).bits));
  EXPECT_TRUE(is_bfloat16_nan(bfloat16_t(float_of(0xFF800001u)).bits));
  EXPECT_EQ(bfloat16_t(float_of(0xFF800001u)).bits & 0x8000, 0x8000);
  EXPECT_EQ(bfloat16_t(float_of(0x7FC00000u)).bits, 0x7FC0);
}

TEST(Bfloat16, RoundTripsEveryNonNanEncodingExactly) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    const bfloat16_t value = bfloat16_t::from_bits(std::uint16_t(b));
    if (is_bfloat16_nan(value.bits)) {
      ASSERT_TRUE(std::isnan(float(value))) << b;
      ASSERT_TRUE(is_bfloat16_nan(bfloat16_t(float(value)).bits)) << b;
      continue;
    }
    if ((value.bits & 0x7FFF) == 0x7F80)  // the oracle's decode gives 2^128 there, by design
      ASSERT_EQ(float(value), std::copysign(std::numeric_limits<float>::infinity(),
                                            (value.bits & 0x8000) ? -1.0f : 1.0f))
          << b;
    else
      ASSERT_EQ(double(float(value)), bfloat16_value(value.bits)) << b;
    ASSERT_EQ(bfloat16_t(float(value)).bits, b) << b;
  }
}

TEST(Bfloat16, MatchesReferenceAtEveryTieAndItsNeighbours) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    if ((b & 0x7F80) == 0x7F80) continue;  // inf / NaN
    const std::uint32_t tie = (b << 16) | 0x8000u;
    for (std::uint32_t x : {tie - 1, tie, tie + 1}) {
      const float value = float_of(x);
      if (std::isnan(value)) continue;
      ASSERT_EQ(bfloat16_t(value).bits, reference_bfloat16(value)) << x;
    }
  }
}

TEST(Bfloat16, MatchesReferenceOnSampledFloats) {
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFu; x += 65521) {
    const float value = float_of(std::uint32_t(x));
    if (std::isnan(value)) {
      ASSERT_TRUE(is_bfloat16_nan(bfloat16_t(value).bits)) << x;
      continue;
    }
    ASSERT_EQ(bfloat16_t(value).bits, reference_bfloat16(value)) << x;
  }
}

}  // namespace
