// Mac: an Ethernet address, and its one text form ("02:00:5e:10:00:01").
//
// The control plane parses and prints MACs with these and nothing else; the
// datapath's hot path works on raw bytes and 64-bit keys (datapath/fdb.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vdev {

using Mac = std::array<uint8_t, 6>;

// "aa:bb:cc:dd:ee:ff": six colon-separated pairs of hex digits, either case.
// Anything else (other separators, missing or extra digits) is nullopt.
std::optional<Mac> parseMac(std::string_view s);
// Lower case, colon separated: "02:00:5e:10:00:01".
std::string formatMac(const Mac& m);

inline bool macIsMulticast(const Mac& m) { return (m[0] & 1) != 0; }  // broadcast too
inline bool macIsZero(const Mac& m) { return (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]) == 0; }
inline bool macIsLocal(const Mac& m) { return (m[0] & 2) != 0; }  // locally administered

}  // namespace vdev
