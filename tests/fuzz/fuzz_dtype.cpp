// Fuzzes the dtype spellings that come from outside (dtype.hpp, python/spellings.hpp): NumPy
// typestrs, PEP 3118 buffer formats with their itemsize, dtype names and raw DLPack (code, bits,
// lanes) triples. Each either parses to a supported dtype that spells back the same way, or throws
// type_error / value_error.
#include <arrayport/dtype.hpp>
#include <arrayport/python/spellings.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

using namespace arrayport;

[[noreturn]] void finding(const char* what, const std::string& input) {
  std::fprintf(stderr, "\n==== arrayport fuzz finding: %s (input '%s')\n", what, input.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

void check_typestr(const std::string& s) {
  dtype dt;
  try {
    dt = parse_typestr(s);
  } catch (const type_error&) {
    return;
  } catch (const value_error&) {
    // Only big-endian multi-byte data is a value_error.
    if (s.empty() || s[0] != '>') finding("parse_typestr: value_error for a non-big-endian typestr", s);
    return;
  }
  if (!is_supported(dt) || dt == dtypes::bfloat16) finding("parse_typestr: unsupported result", s);
  const std::string back = to_typestr(dt);
  if (s.size() != back.size() || s.compare(1, std::string::npos, back, 1) != 0)
    finding("parse_typestr: the result spells back differently", s);
  const char order = s[0];
  if (order != '<' && order != '=' && order != '|' && !(order == '>' && dt.itemsize() == 1))
    finding("parse_typestr: accepted a byte order it should refuse", s);
}

void check_buffer_format(const std::string& format, std::size_t itemsize) {
  dtype dt;
  try {
    dt = parse_buffer_format(std::string_view(format), itemsize);
  } catch (const type_error&) {
    return;
  } catch (const value_error&) {
    if (format.empty() || (format[0] != '>' && format[0] != '!'))
      finding("parse_buffer_format: value_error for a non-big-endian format", format);
    return;
  }
  if (!is_supported(dt) || dt == dtypes::bfloat16) finding("parse_buffer_format: unsupported result", format);
  if (dt.itemsize() != itemsize) finding("parse_buffer_format: result disagrees with itemsize", format);
  if (parse_buffer_format(to_buffer_format(dt), itemsize) != dt)
    finding("parse_buffer_format: the canonical format parses differently", format);
  // The C-string overload stops at the first NUL: it must agree whenever there is none.
  if (format.find('\0') == std::string::npos && parse_buffer_format(format.c_str(), itemsize) != dt)
    finding("parse_buffer_format: the const char* overload disagrees", format);
}

void check_name(const std::string& name) {
  dtype dt;
  try {
    dt = parse_dtype_name(name);
  } catch (const type_error&) {
    return;
  }
  if (dt.name() != name) finding("parse_dtype_name: the result is named differently", name);
}

void check_raw(std::uint8_t code, std::uint8_t bits, std::uint16_t lanes) {
  const dtype dt(code, bits, lanes);
  const std::string what = detail::describe(dt);
  if (is_supported(dt) != (dt.name() != "unknown")) finding("is_supported disagrees with name()", what);
  if (!is_supported(dt)) {
    try {
      (void)to_typestr(dt);
      finding("to_typestr accepted an unsupported dtype", what);
    } catch (const type_error&) {
    }
    try {
      (void)to_buffer_format(dt);
      finding("to_buffer_format accepted an unsupported dtype", what);
    } catch (const buffer_error&) {
    }
    return;
  }
  if (parse_dtype_name(dt.name()) != dt) finding("the name of a dtype parses differently", what);
  if (dt != dtypes::bfloat16 && parse_typestr(to_typestr(dt)) != dt)
    finding("the typestr of a dtype parses differently", what);
}

// float16 / bfloat16 storage: every bit pattern converts to float and back unchanged (NaNs stay
// NaN), which is what copies between half-precision arrays rely on.
void check_half(std::uint16_t bits) {
  const float f = static_cast<float>(float16_t::from_bits(bits));
  const std::uint16_t back = float16_t(f).bits;
  if (f == f ? back != bits : (back & 0x7C00u) != 0x7C00u || (back & 0x3FFu) == 0)
    finding("float16 does not round-trip", std::to_string(bits));
  const float g = static_cast<float>(bfloat16_t::from_bits(bits));
  const std::uint16_t back16 = bfloat16_t(g).bits;
  if (g == g ? back16 != bits : (back16 & 0x7F80u) != 0x7F80u || (back16 & 0x7Fu) == 0)
    finding("bfloat16 does not round-trip", std::to_string(bits));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::uint8_t code = in.ConsumeIntegral<std::uint8_t>();
  const std::uint8_t bits = in.ConsumeIntegral<std::uint8_t>();
  const std::uint16_t lanes = in.ConsumeBool() ? 1 : in.ConsumeIntegral<std::uint16_t>();
  check_raw(code, bits, lanes);
  check_half(static_cast<std::uint16_t>(code | (bits << 8)));
  // Itemsizes near the valid ones, and anything.
  const std::size_t itemsize = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::size_t>(0, 17)
                                                : in.ConsumeIntegral<std::size_t>();
  const std::string text = in.ConsumeRemainingBytesAsString();
  check_typestr(text);
  check_buffer_format(text, itemsize);
  check_name(text);
  return 0;
}
