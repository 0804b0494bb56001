// An unsigned integer of any size, printed in decimal: layout.hpp's messages state a count or a
// span past 2^63 exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arrayport::detail {

class big_uint {
 public:
  explicit big_uint(std::uint64_t v = 0) {
    while (v) {
      m_limbs.push_back(static_cast<std::uint32_t>(v));
      v >>= 32;
    }
  }
  big_uint& operator*=(std::uint64_t m) {
    big_uint lo = times(static_cast<std::uint32_t>(m));
    big_uint hi = times(static_cast<std::uint32_t>(m >> 32));
    if (!hi.m_limbs.empty()) hi.m_limbs.insert(hi.m_limbs.begin(), 0u);
    *this = lo;
    return *this += hi;
  }
  big_uint& operator+=(const big_uint& o) {
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < o.m_limbs.size() || carry; ++i) {
      if (i == m_limbs.size()) m_limbs.push_back(0);
      carry += m_limbs[i];
      if (i < o.m_limbs.size()) carry += o.m_limbs[i];
      m_limbs[i] = static_cast<std::uint32_t>(carry);
      carry >>= 32;
    }
    return *this;
  }
  std::string str() const {
    std::vector<std::uint32_t> n = m_limbs;
    std::string digits;
    while (!n.empty()) {  // divide by 10^9, collecting the remainders' digits
      std::uint64_t rem = 0;
      for (std::size_t i = n.size(); i-- > 0;) {
        const std::uint64_t cur = (rem << 32) | n[i];
        n[i] = static_cast<std::uint32_t>(cur / 1000000000u);
        rem = cur % 1000000000u;
      }
      while (!n.empty() && n.back() == 0) n.pop_back();
      for (int d = 0; d < 9 && (rem || !n.empty()); ++d, rem /= 10)
        digits.insert(digits.begin(), static_cast<char>('0' + rem % 10));
    }
    return digits.empty() ? "0" : digits;
  }

 private:
  big_uint times(std::uint32_t m) const {
    big_uint r;
    std::uint64_t carry = 0;
    for (std::uint32_t limb : m_limbs) {
      carry += static_cast<std::uint64_t>(limb) * m;
      r.m_limbs.push_back(static_cast<std::uint32_t>(carry));
      carry >>= 32;
    }
    if (carry) r.m_limbs.push_back(static_cast<std::uint32_t>(carry));
    while (!r.m_limbs.empty() && r.m_limbs.back() == 0) r.m_limbs.pop_back();
    return r;
  }
  std::vector<std::uint32_t> m_limbs;  // little-endian base 2^32, no leading zeros
};

}  // namespace arrayport::detail
