// A port's policy -- storm control, the ingress policer, anti-spoofing (the
// allowed source MAC and addresses), the RA and DHCP guards, its VLANs --
// and the table of its fields, named once for every layer.
//
// PortPolicy is what holds for a port (the datapath enforces it, replies
// show it); PortPolicyOptions is what a request, a state-file record or
// the CNI configuration gives (each field optional: absent keeps the value
// under it, over()). The table kPolicyFields has one row per field: its
// vdevctl keyword, wire attribute and its name, state-file key, JSON key,
// who may set it, its group and range. The codec (requests and replies,
// both ways, the attribute table), the state file (read and write),
// vdevctl's keywords and JSON and the daemon's table of who may set what
// iterate the rows (forEachPolicyField) instead of naming fields. A new
// option is a member of each struct and a row here (with its attribute
// number, which protocol.h names and documents); a field of a type no row
// has yet also needs its overload in each of those loops (the compiler
// names every one that is missing).
//
// Thread safety: plain values and constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/ip.h"
#include "base/mac.h"
#include "base/vlan.h"

namespace vdev::spec {

// What one port may send into the switch: storm control (broadcast,
// multicast and unknown-unicast frames per second) and an ingress policer
// (every frame, packets/s and bits/s). 0: no limit. Token buckets, each
// holding police_burst_ms (storm: kStormBurstMs) of its rate, at least one
// frame; a frame passes while its bucket is not in debt and then takes its
// cost (so one 64 KB GSO skb passes a small bucket and the debt it leaves
// holds back what follows). Broadcast, multicast and the policer are
// enforced by the port's program (XDP or tc) before anything else: what
// they drop never reaches vdevd or the fast path; unknown unicast by vdevd,
// the only one that knows a destination is unknown.
struct PortPolicy {
  static constexpr uint32_t kStormBurstMs = 100;
  // At most this many IPv4 and this many IPv6 addresses in allowed_ips.
  static constexpr size_t kMaxAllowedIps = 4;
  // A TCP stream inside one host retransmits within microseconds, into a
  // bucket still in debt, and then waits for its retransmission timeout
  // (200 ms at least): it gets about burst / 200 ms of the rate. Measured
  // through a 200 Mbit/s policer: 10 ms 12 Mbit/s, 100 ms 98, 250 ms 196
  // (docs/performance.md, "Storm control and policing").
  static constexpr uint32_t kDefaultPoliceBurstMs = 250;
  uint32_t storm_bcast = 0;    // broadcast frames/s: drops.storm_bcast
  uint32_t storm_mcast = 0;    // multicast frames/s, not broadcast: drops.storm_mcast
  uint32_t storm_unknown = 0;  // unicast frames/s to unknown MACs: drops.storm_unknown
  uint64_t police_pps = 0;     // every frame, packets/s: drops.police
  uint64_t police_bps = 0;     // bits/s of frames (Ethernet header on)
  // The policer's burst, always in effect: requests, records and options
  // refuse 0, so what replies show is what holds.
  uint32_t police_burst_ms = kDefaultPoliceBurstMs;
  // Anti-spoofing: the one source MAC the port may send, enforced by its
  // program before anything else but the policer; frames from any other
  // are dropped (drops.spoof_mac). All zeros: any source (the datapath's
  // map holds macKey() of it, 0 for any).
  Mac allowed_mac{};
  // Anti-spoofing by address: what the port may send from (IPv4, ARP,
  // IPv6, Neighbour Advertisements), enforced by its program after the MAC;
  // anything else, another EtherType included, is dropped (drops.spoof_ip).
  // Empty: any (bpf/vdev_limits.h, vdev_ip_allowed()).
  std::vector<IpAddr> allowed_ips;
  // RA and DHCP guard: Router Advertisements (drops.ra_guard) and DHCP or
  // DHCPv6 servers' messages (drops.dhcp_guard) from the port are dropped
  // by its program: a guest is neither the network's router nor its DHCP
  // server (bpf/vdev_limits.h, vdev_guard()).
  bool ra_guard = false;
  bool dhcp_guard = false;
  // 802.1Q membership (base/vlan.h), enforced by vdevd, and by the kernel
  // fast path's programs for the learned unicast they carry (a trunk's tag
  // popped or pushed there); floods, stacked tags and VIDs a port does not
  // carry are switched (or dropped) by vdevd.
  VlanConfig vlan;
  bool operator==(const PortPolicy&) const = default;
};

// A port's own policy, where given (vdevctl port add ... storm-bcast N,
// PORT_ADD's and PORT_SET's attributes, a state-file record): each field
// absent keeps the value under it (vdevd's defaults, or the port's).
struct PortPolicyOptions {
  std::optional<uint32_t> storm_bcast, storm_mcast, storm_unknown;
  std::optional<uint64_t> police_pps, police_bps;
  std::optional<uint32_t> police_burst_ms;         // >= 1
  std::optional<Mac> allowed_mac;                  // all zeros: any source
  std::optional<std::vector<IpAddr>> allowed_ips;  // empty: any address
  std::optional<bool> ra_guard, dhcp_guard;
  std::optional<VlanConfig> vlan;  // replaces the port's whole; unconfigured: no VLAN settings
  bool operator==(const PortPolicyOptions&) const = default;
  // The policy with each given field replacing base's.
  PortPolicy over(PortPolicy base) const;
  // The options with each given field replacing base's (PORT_SET onto a
  // saved record).
  PortPolicyOptions overOptions(PortPolicyOptions base) const;
};

// The policy's wire attributes (proto/protocol.h takes its numbers from
// here; their meaning is documented there). ABI: never renumbered.
enum PolicyAttr : uint16_t {
  kAttrStormBcast = 33,
  kAttrStormMcast = 34,
  kAttrStormUnknown = 35,
  kAttrPolicePps = 36,
  kAttrPoliceBps = 37,
  kAttrPoliceBurst = 38,
  kAttrAllowedMac = 39,
  kAttrAllowedIps = 40,
  kAttrRaGuard = 41,
  kAttrDhcpGuard = 42,
  kAttrVlanPvid = 43,  // the VLAN row's three: VLAN_PVID, VLAN_TAGGED, VLAN_UNTAGGED
  kAttrVlanTagged = 44,
  kAttrVlanUntagged = 45,
};

// Who may set a field: root only, or the port's owner too
// (vdev/daemon/src/port_policy.h).
enum class FieldClass : uint8_t {
  kRoot,   // root only
  kOwner,  // root and the port's owner
};

// Where a field belongs when fields are listed by what they bound: the
// guest's identity (anti-spoofing, guards, VLANs) or its rates. The table's
// own order is the wire's and the state file's (rates first); refusals
// name identity first.
enum class FieldGroup : uint8_t { kRate, kIdentity };

// Whether a field is a number (a rate, the burst): 0 is a value of its own
// ("no limit"), so replies carry every number, where the other fields are
// sent only while they differ from their default (no MAC, no address, a
// guard off, no VLAN settings).
template <class T>
inline constexpr bool kIsNumber = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// One row: a field of both structs and its names. T is the field's type,
// which picks its codec and text overloads.
template <class T>
struct PolicyField {
  using Type = T;
  T PortPolicy::*value;
  std::optional<T> PortPolicyOptions::*option;
  std::string_view cli;    // vdevctl's keyword (VLAN: "vlan", with native, trunk, untagged)
  uint16_t attr;           // wire attribute (VLAN: the first of its three)
  const char* wire;        // the attribute's name in messages (VLAN: policyAttrName())
  std::string_view key;    // state-file key (VLAN: "vlan", its keys vlan_pvid ...)
  std::string_view json;   // key in vdevctl's "limits" object (VLAN: "vlan", beside it)
  FieldClass who;
  FieldGroup group;
  // Numbers: the range a record, option or request may give, and the unit
  // messages name (bits/s: vdevctl takes a rate, 100M). 0 in range: "no
  // limit".
  uint64_t min = 0, max = 0;
  std::string_view unit = {};
  // vdevctl's usage text: what a number counts, what "on" does.
  std::string_view about = {};
};

// Every field of PortPolicy, in the order of the wire and the state file.
// Each row: the members; keyword, attribute and its name, state-file key,
// JSON key; who may set it, its group; range, unit and usage text.
inline constexpr auto kPolicyFields = std::make_tuple(
    PolicyField<uint32_t>{&PortPolicy::storm_bcast, &PortPolicyOptions::storm_bcast,
        "storm-bcast", kAttrStormBcast, "STORM_BCAST", "storm_bcast", "storm_bcast_pps",
        FieldClass::kRoot, FieldGroup::kRate,
        0, UINT32_MAX, "frames/s", "broadcast frames/s"},
    PolicyField<uint32_t>{&PortPolicy::storm_mcast, &PortPolicyOptions::storm_mcast,
        "storm-mcast", kAttrStormMcast, "STORM_MCAST", "storm_mcast", "storm_mcast_pps",
        FieldClass::kRoot, FieldGroup::kRate,
        0, UINT32_MAX, "frames/s", "multicast frames/s"},
    PolicyField<uint32_t>{&PortPolicy::storm_unknown, &PortPolicyOptions::storm_unknown,
        "storm-unknown", kAttrStormUnknown, "STORM_UNKNOWN", "storm_unknown", "storm_unknown_pps",
        FieldClass::kRoot, FieldGroup::kRate,
        0, UINT32_MAX, "frames/s", "unknown-unicast frames/s"},
    PolicyField<uint64_t>{&PortPolicy::police_pps, &PortPolicyOptions::police_pps,
        "police-pps", kAttrPolicePps, "POLICE_PPS", "police_pps", "police_pps",
        FieldClass::kRoot, FieldGroup::kRate,
        0, UINT64_MAX, "packets/s", "packets/s"},
    PolicyField<uint64_t>{&PortPolicy::police_bps, &PortPolicyOptions::police_bps,
        "police-rate", kAttrPoliceBps, "POLICE_BPS", "police_bps", "police_bps",
        FieldClass::kRoot, FieldGroup::kRate,
        0, UINT64_MAX, "bits/s", "bits/s"},
    PolicyField<uint32_t>{&PortPolicy::police_burst_ms, &PortPolicyOptions::police_burst_ms,
        "police-burst", kAttrPoliceBurst, "POLICE_BURST", "police_burst_ms", "police_burst_ms",
        FieldClass::kRoot, FieldGroup::kRate,
        1, UINT32_MAX, "milliseconds", "milliseconds"},
    PolicyField<Mac>{&PortPolicy::allowed_mac, &PortPolicyOptions::allowed_mac,
        "allowed-mac", kAttrAllowedMac, "ALLOWED_MAC", "allowed_mac", "allowed_mac",
        FieldClass::kRoot, FieldGroup::kIdentity},
    PolicyField<std::vector<IpAddr>>{&PortPolicy::allowed_ips, &PortPolicyOptions::allowed_ips,
        "allowed-ip", kAttrAllowedIps, "ALLOWED_IPS", "allowed_ips", "allowed_ips",
        FieldClass::kRoot, FieldGroup::kIdentity},
    PolicyField<bool>{&PortPolicy::ra_guard, &PortPolicyOptions::ra_guard,
        "ra-guard", kAttrRaGuard, "RA_GUARD", "ra_guard", "ra_guard",
        FieldClass::kRoot, FieldGroup::kIdentity,
        0, 0, {}, "on: the port's Router Advertisements are dropped"},
    PolicyField<bool>{&PortPolicy::dhcp_guard, &PortPolicyOptions::dhcp_guard,
        "dhcp-guard", kAttrDhcpGuard, "DHCP_GUARD", "dhcp_guard", "dhcp_guard",
        FieldClass::kRoot, FieldGroup::kIdentity,
        0, 0, {}, "on: the port's DHCP and DHCPv6 server messages are dropped"},
    PolicyField<VlanConfig>{&PortPolicy::vlan, &PortPolicyOptions::vlan,
        "vlan", kAttrVlanPvid, "VLAN_PVID", "vlan", "vlan",
        FieldClass::kRoot, FieldGroup::kIdentity});

inline constexpr size_t kPolicyFieldCount = std::tuple_size_v<decltype(kPolicyFields)>;

// The VLAN row's vdevctl keywords, in the order texts list them: an access
// port's VLAN, a trunk's tagged VLANs, its untagged one (the same as vlan)
// and more untagged ones. vdevctl parses them and the reference text test
// (tests/unit/reference_text_test.cpp) checks every text names them.
inline constexpr std::string_view kVlanKeywords[] = {"vlan", "trunk", "native", "untagged"};

// The name of a policy attribute as messages give it ("POLICE_BURST");
// nullptr for another attribute.
constexpr const char* policyAttrName(uint16_t attr);

// f(row) for every row, in table order.
template <class F>
constexpr void forEachPolicyField(F&& f) {
  std::apply([&](const auto&... row) { (f(row), ...); }, kPolicyFields);
}

constexpr const char* policyAttrName(uint16_t attr) {
  // The VLAN row's other two.
  if (attr == kAttrVlanTagged) return "VLAN_TAGGED";
  if (attr == kAttrVlanUntagged) return "VLAN_UNTAGGED";
  const char* name = nullptr;
  forEachPolicyField([&](const auto& r) {
    if (r.attr == attr) name = r.wire;
  });
  return name;
}

inline PortPolicy PortPolicyOptions::over(PortPolicy base) const {
  forEachPolicyField([&](const auto& r) {
    if (this->*r.option) base.*r.value = *(this->*r.option);
  });
  return base;
}
inline PortPolicyOptions PortPolicyOptions::overOptions(PortPolicyOptions base) const {
  forEachPolicyField([&](const auto& r) {
    if (this->*r.option) base.*r.option = this->*r.option;
  });
  return base;
}

// ------------------------------------------------- checks of the table

namespace detail {
// Every member of PortPolicy has a row: a member added to the struct
// breaks this binding (one of the wrong size does not compile); give it a
// row, then a name here.
[[maybe_unused]] inline void everyFieldHasARow(const PortPolicy& p) {
  [[maybe_unused]] const auto& [storm_bcast, storm_mcast, storm_unknown, police_pps, police_bps, police_burst_ms,
                                allowed_mac, allowed_ips, ra_guard, dhcp_guard, vlan] = p;
  static_assert(kPolicyFieldCount == 11, "every field of PortPolicy has a row");
}
constexpr bool policyRowsUnique() {
  bool ok = true;
  size_t i = 0;
  forEachPolicyField([&](const auto& a) {
    size_t j = 0;
    forEachPolicyField([&](const auto& b) {
      if (j++ <= i) return;
      // The VLAN row's attribute is the first of three.
      const uint16_t a_last = a.attr == kAttrVlanPvid ? uint16_t(kAttrVlanUntagged) : a.attr;
      const uint16_t b_last = b.attr == kAttrVlanPvid ? uint16_t(kAttrVlanUntagged) : b.attr;
      if (a.cli == b.cli || a.key == b.key || a.json == b.json || std::string_view(a.wire) == b.wire ||
          (a.attr <= b_last && b.attr <= a_last))
        ok = false;
    });
    i++;
  });
  return ok;
}
}  // namespace detail

static_assert(detail::policyRowsUnique(), "keywords, attributes and their names, state-file and JSON keys: once each");

}  // namespace vdev::spec
