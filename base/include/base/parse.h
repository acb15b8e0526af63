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

// A finite decimal number ("2", "0.5", "1e-3", "-1.5") inside [lo, hi]: the
// whole text, no leading '+' or space, no hex, no inf or nan. Durations,
// fractions and rates on command lines.
std::optional<double> parseDouble(std::string_view s, double lo, double hi);

}  // namespace vdev
