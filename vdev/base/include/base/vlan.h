// VlanConfig: a port's 802.1Q membership (vdevctl port add ... vlan VID |
// trunk VID[,VID-VID...] [native VID]), and VID lists in their text form
// ("10,20-29").
//
// The model is the Linux bridge's with vlan_filtering: a port takes
// untagged frames into its PVID, carries each VID of `tagged` with its tag
// and each of `untagged` without one. A port without VLAN settings
// (configured() false) is in the default VLAN 1, untagged, and looks at no
// tag: a tagged frame from it is payload of VLAN 1, as before VLANs.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vdev {

inline constexpr uint16_t kVidDefault = 1;  // the VLAN of ports without VLAN settings
inline constexpr uint16_t kVidMax = 4094;   // 0 and 4095 are reserved (802.1Q)

using VidSet = std::bitset<4096>;

struct VlanConfig {
  uint16_t pvid = 0;  // untagged frames received go here; 0: untagged frames are not taken
  VidSet tagged;      // carried with their tag
  VidSet untagged;    // sent without a tag (the PVID is one of them)
  bool configured() const { return pvid != 0 || tagged.any() || untagged.any(); }
  bool carries(uint16_t vid) const { return vid <= kVidMax && (tagged[vid] || untagged[vid]); }
  bool operator==(const VlanConfig&) const = default;
};

// The one VLAN the port takes and sends untagged (its PVID; the default
// VLAN for a port without VLAN settings; 0: none, a trunk without a native
// VLAN). The PVID is always among the untagged VIDs (vlanConfigError), so
// the kernel fast path's rule -- untagged both ways in this VLAN, every
// `tagged` VID with its tag, any other VID vdevd's -- is the switch's.
inline uint16_t untaggedVid(const VlanConfig& v) { return v.configured() ? v.pvid : kVidDefault; }

// "10", "10,20", "100-199,300": VIDs 1..4094; nullopt for anything else (an
// empty list, a reversed range, a VID out of range).
std::optional<VidSet> parseVidList(std::string_view s);
// The shortest such list ("" for none).
std::string formatVidList(const VidSet& s);
// The set as ranges [first, last], ascending.
std::vector<std::pair<uint16_t, uint16_t>> vidRanges(const VidSet& s);
// Why the configuration cannot be a port's ("" if it can): VIDs out of
// range, a VID both tagged and untagged, a PVID not among the untagged.
std::string vlanConfigError(const VlanConfig& v);
// Its text: "vlan 10", "trunk 10,20-29", "trunk 10 native 5", with
// " untagged L" for untagged VIDs beyond the PVID; "" when not configured.
std::string formatVlanConfig(const VlanConfig& v);

}  // namespace vdev
