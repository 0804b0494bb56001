// The NumPy and PEP 3118 spellings of dtypes: array-interface typestrs ("<f4") and buffer-protocol
// formats ("f"), parsed and produced for the Python bridge. Pure C++: no Python.h needed.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>

// Every multi-byte spelling below ('<' typestrs, '=' and '@' buffer formats) assumes the host is
// little-endian; MSVC defines no __BYTE_ORDER__ but targets only little-endian platforms.
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "arrayport targets little-endian hosts only");
#endif

namespace ARRAYPORT_NAMESPACE {

// ---------------------------------------------------------------------------------------------
// NumPy array-interface typestr (__array_interface__ / __cuda_array_interface__ "typestr")

namespace detail {

// bfloat16 has no NumPy kind: ml_dtypes and the CUDA array interface spell it "<V2" (two opaque
// bytes). The spelling cannot be parsed back, since "<V2" says nothing about the contents.
inline const char* typestr_or_null(dtype dt) noexcept {
  if (dt == dtypes::bool_) return "|b1";
  if (dt == dtypes::int8) return "|i1";
  if (dt == dtypes::int16) return "<i2";
  if (dt == dtypes::int32) return "<i4";
  if (dt == dtypes::int64) return "<i8";
  if (dt == dtypes::uint8) return "|u1";
  if (dt == dtypes::uint16) return "<u2";
  if (dt == dtypes::uint32) return "<u4";
  if (dt == dtypes::uint64) return "<u8";
  if (dt == dtypes::float16) return "<f2";
  if (dt == dtypes::bfloat16) return "<V2";
  if (dt == dtypes::float32) return "<f4";
  if (dt == dtypes::float64) return "<f8";
  if (dt == dtypes::complex64) return "<c8";
  if (dt == dtypes::complex128) return "<c16";
  return nullptr;
}

inline constexpr const char* accepted_typestrs =
    "'|b1', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '<f2', '<f4', '<f8', '<c8', "
    "'<c16' (byte order '<', '=' or '|')";

}  // namespace detail

/// Parses a NumPy typestr: byte order '<', '=' or '|' ('>' only for 1-byte types), then kind
/// b/i/u/f/c and the itemsize in bytes. Unsupported kinds or sizes (including "<V2") are a
/// type_error; big-endian multi-byte data is a value_error.
inline dtype parse_typestr(std::string_view typestr) {
  if (typestr.size() >= 3) {
    const char order = typestr[0];
    const std::string_view kind_and_size = typestr.substr(1);
    if (order == '<' || order == '>' || order == '=' || order == '|') {
      for (const dtype& candidate : detail::supported_dtypes) {
        if (candidate == dtypes::bfloat16) continue;
        if (std::string_view(detail::typestr_or_null(candidate)).substr(1) != kind_and_size)
          continue;
        if (order == '>' && candidate.itemsize() != 1)
          throw value_error("big-endian typestr '" + std::string(typestr) +
                            "' is not supported: arrayport targets little-endian hosts; expected "
                            "byte order '<', '=' or '|' (byte-swap the array first, e.g. "
                            "a.astype(a.dtype.newbyteorder('<')))");
        return candidate;
      }
    }
  }
  throw type_error("unsupported typestr '" + std::string(typestr) + "': expected one of " +
                   detail::accepted_typestrs);
}

/// The little-endian typestr of a supported dtype; bfloat16 gives "<V2" (see above). Anything
/// else is a type_error.
inline std::string to_typestr(dtype dt) {
  if (const char* typestr = detail::typestr_or_null(dt)) return typestr;
  throw type_error("dtype " + detail::describe(dt) + " has no typestr: expected one of " +
                   detail::supported_dtype_names);
}

// ---------------------------------------------------------------------------------------------
// PEP 3118 buffer-protocol format strings (Py_buffer.format)

namespace detail {

inline constexpr const char* accepted_buffer_formats =
    "'?', 'b', 'B', 'c', 'e', 'f', 'd', 'Zf', 'Zd', 'F', 'D', or an integer code 'h', 'H', 'i', "
    "'I', 'l', 'L', 'q', 'Q', 'n', 'N' with itemsize 1, 2, 4 or 8; optionally prefixed by '@', "
    "'=' or '<'";

inline std::string describe_buffer_format(std::string_view format, std::size_t itemsize) {
  return "buffer format '" + std::string(format) + "' (itemsize " + std::to_string(itemsize) +
         (format.empty() ? "; an empty format means 'B')" : ")");
}

inline dtype integer_of_itemsize(bool is_signed, std::size_t itemsize) noexcept {
  switch (itemsize) {
    case 1: return is_signed ? dtypes::int8 : dtypes::uint8;
    case 2: return is_signed ? dtypes::int16 : dtypes::uint16;
    case 4: return is_signed ? dtypes::int32 : dtypes::uint32;
    case 8: return is_signed ? dtypes::int64 : dtypes::uint64;
  }
  return dtype{};
}

}  // namespace detail

/// Parses a single-element PEP 3118 format together with Py_buffer.itemsize. An empty format is
/// "B" (CPython's contract for format == NULL). The integer codes are mapped by itemsize, not by
/// letter, because 'l'/'L' are 8 bytes on Linux and 4 on Windows and producers disagree on which
/// letter they emit; fixed-size codes must agree with itemsize. Unsupported formats (long double,
/// structs, repeat counts, pointers, ...) are a type_error; big-endian ('>' or '!') multi-byte
/// data is a value_error.
inline dtype parse_buffer_format(std::string_view format, std::size_t itemsize) {
  std::string_view code = format.empty() ? std::string_view("B") : format;
  char order = '@';
  if (code[0] == '@' || code[0] == '=' || code[0] == '<' || code[0] == '>' || code[0] == '!') {
    order = code[0];
    code.remove_prefix(1);
  }
  dtype result{};
  bool sized_by_itemsize = false;
  if (code.size() == 1) {
    switch (code[0]) {
      case '?': result = dtypes::bool_; break;
      case 'b': result = dtypes::int8; break;
      case 'B':
      case 'c': result = dtypes::uint8; break;
      case 'h':
      case 'i':
      case 'l':
      case 'q':
      case 'n':
      case 'H':
      case 'I':
      case 'L':
      case 'Q':
      case 'N':
        sized_by_itemsize = true;
        result = detail::integer_of_itemsize(code[0] >= 'a', itemsize);
        if (result == dtype{})
          throw type_error("unsupported " + detail::describe_buffer_format(format, itemsize) +
                           ": integer codes need itemsize 1, 2, 4 or 8");
        break;
      case 'e': result = dtypes::float16; break;
      case 'f': result = dtypes::float32; break;
      case 'd': result = dtypes::float64; break;
      case 'F': result = dtypes::complex64; break;  // NumPy's character codes, emitted by some
      case 'D': result = dtypes::complex128; break;
    }
  } else if (code == "Zf") {
    result = dtypes::complex64;
  } else if (code == "Zd") {
    result = dtypes::complex128;
  }
  if (result == dtype{})
    throw type_error("unsupported " + detail::describe_buffer_format(format, itemsize) +
                     ": expected one of " + detail::accepted_buffer_formats);
  if (!sized_by_itemsize && result.itemsize() != itemsize)
    throw type_error(detail::describe_buffer_format(format, itemsize) + " is inconsistent: '" +
                     std::string(code) + "' is " + std::string(result.name()) +
                     ", expected itemsize " + std::to_string(result.itemsize()));
  if ((order == '>' || order == '!') && itemsize != 1)
    throw value_error("big-endian " + detail::describe_buffer_format(format, itemsize) +
                      " is not supported: arrayport targets little-endian hosts; expected byte "
                      "order '@', '=' or '<'");
  return result;
}

/// Py_buffer.format may be NULL, which means "B".
inline dtype parse_buffer_format(const char* format, std::size_t itemsize) {
  return parse_buffer_format(format ? std::string_view(format) : std::string_view(), itemsize);
}

/// The native-order format for a supported dtype (static storage, fit for Py_buffer.format). 64-bit
/// integers use 'q'/'Q', whose size is 8 on every platform, unlike 'l'. bfloat16 and unsupported
/// dtypes are a buffer_error: PEP 3118 cannot describe them.
inline const char* to_buffer_format(dtype dt) {
  if (dt == dtypes::bool_) return "?";
  if (dt == dtypes::int8) return "b";
  if (dt == dtypes::int16) return "h";
  if (dt == dtypes::int32) return "i";
  if (dt == dtypes::int64) return "q";
  if (dt == dtypes::uint8) return "B";
  if (dt == dtypes::uint16) return "H";
  if (dt == dtypes::uint32) return "I";
  if (dt == dtypes::uint64) return "Q";
  if (dt == dtypes::float16) return "e";
  if (dt == dtypes::float32) return "f";
  if (dt == dtypes::float64) return "d";
  if (dt == dtypes::complex64) return "Zf";
  if (dt == dtypes::complex128) return "Zd";
  if (dt == dtypes::bfloat16)
    throw buffer_error(
        "bfloat16 has no buffer-protocol format: PEP 3118 defines none; export it "
        "through DLPack or __cuda_array_interface__ instead");
  throw buffer_error("dtype " + detail::describe(dt) +
                     " has no buffer-protocol format: expected one of " +
                     detail::supported_dtype_names + " except 'bfloat16'");
}

}  // namespace arrayport
