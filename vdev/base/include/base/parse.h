// Strict number parsing for command lines, configuration and state files:
// the whole text must be a decimal number inside [lo, hi] -- no sign, no
// leading or trailing space, no "0x", no overflow. Anything else is nullopt,
// so a caller reports its own "--frames must be 64..1048576" message.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace vdev {

std::optional<uint64_t> parseU64(std::string_view s, uint64_t lo = 0,
                                 uint64_t hi = std::numeric_limits<uint64_t>::max());

inline std::optional<uint32_t> parseU32(std::string_view s, uint32_t lo = 0,
                                        uint32_t hi = std::numeric_limits<uint32_t>::max()) {
  auto v = parseU64(s, lo, hi);
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

// A rate (bits/s on vdevd's and vdevctl's command lines): a decimal number
// as parseU64 takes it, optionally followed by k, M or G for 10^3, 10^6 or
// 10^9 ("100M" is 100000000) -- SI prefixes, as link speeds and tc's rates
// are written, not powers of two. No fraction ("1.5M": write 1500k), no
// other suffix or case ("10T", "100m"), nothing beyond UINT64_MAX.
std::optional<uint64_t> parseRate(std::string_view s);

// A finite decimal number ("2", "0.5", "1e-3", "-1.5") inside [lo, hi]: the
// whole text, no leading '+' or space, no hex, no inf or nan. Durations,
// fractions and rates on command lines.
std::optional<double> parseDouble(std::string_view s, double lo, double hi);

}  // namespace vdev
