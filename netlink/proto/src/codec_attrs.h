// Internal to proto: the attribute tables of the control protocol and the
// pieces the codec's parts share (codec_encode.cpp builds messages,
// codec_decode.cpp reads requests, codec_reply.cpp reads replies,
// capture_format.cpp is CAPTURE_FRAMES' record format).
//
//
// Building: libnl-3 messages (nlmsg_alloc_size, genlmsg_put, nla_put_*,
// nla_nest_start), owned by NlMsgPtr. Parsing: our own walk over every
// attribute first (framing, type, exact length, flags, duplicates, unknown
// types), which produces messages naming the attribute, then nla_parse() with
// a length policy to index them, then typed reads and semantic validation.
//
// Untrusted input is only ever read through nlmsg_ok()/nla_ok()-checked
// pointers into a 4-byte aligned buffer (copied if the caller's is not), so
// no read is out of bounds or misaligned.
#pragma once

#include "proto/codec.h"

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <algorithm>
#include <bitset>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include <array>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

namespace vdev::proto::codec_detail {

// ------------------------------------------------------------ ownership

struct NlMsgFree {
  void operator()(nl_msg* m) const noexcept { nlmsg_free(m); }
};
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgFree>;

inline Error invalid(std::string msg) { return Error{EINVAL, std::move(msg)}; }

constexpr int kGenlHdrLen = GENL_HDRLEN;

// ----------------------------------------------------- attribute tables

// kAddrs: IP addresses, 16 bytes each (IpAddr), at most kAddrsMax of them.
// kVids: VID ranges, u16 pairs [first, last] (1..4094, first <= last).
// kBytes: any bytes (CAPTURE_FRAMES, checked by parseCaptureFrames).
enum class Kind : uint8_t { kNone, kFlag, kU8, kU16, kU32, kU64, kString, kMac, kAddrs, kVids, kBytes, kNested };
constexpr int kAddrsMax = 8;
constexpr int kVidRangesMax = 2047;  // 4094 VIDs make at most this many ranges

struct AttrSpec {
  const char* name = nullptr;  // nullptr: not an attribute of this space
  Kind kind = Kind::kNone;
  uint16_t max_chars = 0;  // kString: longest value, without the NUL
};

// A policy attribute (spec/port_policy.h): its name from the table, its
// kind from the field's type; VLAN's three: the PVID, then two VID lists.
template <class T>
constexpr Kind policyKind() {
  if constexpr (std::is_same_v<T, uint32_t>) return Kind::kU32;
  else if constexpr (std::is_same_v<T, uint64_t>) return Kind::kU64;
  else if constexpr (std::is_same_v<T, bool>) return Kind::kFlag;
  else if constexpr (std::is_same_v<T, Mac>) return Kind::kMac;
  else if constexpr (std::is_same_v<T, std::vector<IpAddr>>) return Kind::kAddrs;
  else if constexpr (std::is_same_v<T, VlanConfig>) return Kind::kU16;  // VLAN_PVID
  else static_assert(sizeof(T) == 0, "a policy field's type needs its wire kind here");
}
constexpr AttrSpec policySpec(uint16_t t) {
  if (t == kAttrVlanTagged || t == kAttrVlanUntagged) return {spec::policyAttrName(t), Kind::kVids};
  AttrSpec out{};
  spec::forEachPolicyField([&](const auto& r) {
    if (r.attr == t) out = {r.wire, policyKind<typename std::decay_t<decltype(r)>::Type>()};
  });
  return out;
}

constexpr AttrSpec topSpec(uint16_t t) {
  switch (t) {
    case kAttrPortName: return {"PORT_NAME", Kind::kString, kIfNameMax};
    case kAttrPortType: return {"PORT_TYPE", Kind::kU8};
    case kAttrQueues: return {"QUEUES", Kind::kU32};
    case kAttrXdpMode: return {"XDP_MODE", Kind::kU8};
    case kAttrCreate: return {"CREATE", Kind::kNested};
    case kAttrIfindex: return {"IFINDEX", Kind::kU32};
    case kAttrMtu: return {"MTU", Kind::kU32};
    case kAttrLive: return {"LIVE", Kind::kFlag};
    case kAttrBindMode: return {"BIND_MODE", Kind::kU8};
    case kAttrMac: return {"MAC", Kind::kMac};
    case kAttrFdbStatic: return {"FDB_STATIC", Kind::kFlag};
    case kAttrFdbAgeMs: return {"FDB_AGE_MS", Kind::kU64};
    case kAttrStats: return {"STATS", Kind::kNested};
    case kAttrPool: return {"POOL", Kind::kNested};
    case kAttrFdbEntries: return {"FDB_ENTRIES", Kind::kU64};
    case kAttrVersion: return {"VERSION", Kind::kString, kVersionMax};
    case kAttrThreads: return {"THREADS", Kind::kU32};
    case kAttrSwitchMode: return {"SWITCH_MODE", Kind::kU8};
    case kAttrUptime: return {"UPTIME", Kind::kU64};
    case kAttrNumPorts: return {"NUM_PORTS", Kind::kU32};
    case kAttrQueuesBound: return {"QUEUES_BOUND", Kind::kU32};
    case kAttrFastRx: return {"FAST_RX", Kind::kFlag};
    case kAttrOwnerUid: return {"OWNER_UID", Kind::kU32};
    case kAttrPortTag: return {"PORT_TAG", Kind::kString, kPortTagMax};
    case kAttrFdLimit: return {"FD_LIMIT", Kind::kU32};
    case kAttrPortsFdLeft: return {"PORTS_FD_LEFT", Kind::kU32};
    case kAttrStartIssues: return {"START_ISSUES", Kind::kString, kStartIssuesMax};
    case kAttrHook: return {"HOOK", Kind::kU8};
    case kAttrPortsPoolLeft: return {"PORTS_POOL_LEFT", Kind::kU32};
    case kAttrPortsMapLeft: return {"PORTS_MAP_LEFT", Kind::kU32};
    case kAttrUplink: return {"UPLINK", Kind::kFlag};
    case kAttrIsolated: return {"ISOLATED", Kind::kFlag};
    case kAttrVlanId: return {"VLAN_ID", Kind::kU16};
    case kAttrCaptureId: return {"CAPTURE_ID", Kind::kU32};
    case kAttrCaptureDir: return {"CAPTURE_DIR", Kind::kU8};
    case kAttrCaptureSnaplen: return {"CAPTURE_SNAPLEN", Kind::kU32};
    case kAttrCaptureBuffer: return {"CAPTURE_BUFFER", Kind::kU32};
    case kAttrCaptureFrames: return {"CAPTURE_FRAMES", Kind::kBytes};
    case kAttrCaptureTaken: return {"CAPTURE_TAKEN", Kind::kU64};
    case kAttrCaptureDrops: return {"CAPTURE_DROPS", Kind::kU64};
    case kAttrCaptureEnded: return {"CAPTURE_ENDED", Kind::kFlag};
    case kAttrTcAttach: return {"TC_ATTACH", Kind::kU8};
    case kAttrHookNote: return {"HOOK_NOTE", Kind::kString, kHookNoteMax};
    case kAttrKernelFeatures: return {"KERNEL_FEATURES", Kind::kU64};
    case kAttrLinkNote: return {"LINK_NOTE", Kind::kString, kHookNoteMax};
    case kAttrUidCaps: return {"UID_CAPS", Kind::kBytes};
    case kAttrUidUse: return {"UID_USE", Kind::kBytes};
    case kAttrUidRequests: return {"UID_REQUESTS", Kind::kBytes};
    case kAttrCaptureFilter: return {"CAPTURE_FILTER", Kind::kNested};
    default: return policySpec(t);
  }
}

constexpr AttrSpec createSpec(uint16_t t) {
  switch (t) {
    case kCreatePeerNetnsName: return {"PEER_NETNS_NAME", Kind::kString, kNetnsNameMax};
    case kCreatePeerNetnsPath: return {"PEER_NETNS_PATH", Kind::kString, kNetnsPathMax};
    case kCreatePeerNetnsPid: return {"PEER_NETNS_PID", Kind::kU32};
    case kCreatePeerIfname: return {"PEER_IFNAME", Kind::kString, kIfNameMax};
    case kCreatePeerMac: return {"PEER_MAC", Kind::kMac};
    case kCreateMtu: return {"MTU", Kind::kU32};
    case kCreateOwnerUid: return {"OWNER_UID", Kind::kU32};
    case kCreateGroupGid: return {"GROUP_GID", Kind::kU32};
    case kCreateMultiQueue: return {"MULTI_QUEUE", Kind::kFlag};
    case kCreateMac: return {"MAC", Kind::kMac};
    default: return {};
  }
}

constexpr AttrSpec captureFilterSpec(uint16_t t) {
  switch (t) {
    case kCapFilterMac: return {"MAC", Kind::kMac};
    case kCapFilterVlan: return {"VLAN", Kind::kU16};
    case kCapFilterEthertype: return {"ETHERTYPE", Kind::kU16};
    case kCapFilterIp: return {"IP", Kind::kAddrs};  // exactly one: the decoder checks
    case kCapFilterProto: return {"PROTO", Kind::kU8};
    case kCapFilterPort: return {"PORT", Kind::kU16};
    default: return {};
  }
}

// Inside STATS and POOL: one u64 per row of the counter table, named in
// messages by its JSON path ("STATS.drops.runt").
constexpr uint16_t kStatsMax = vdev::stats::kPortAttrMax;
constexpr uint16_t kPoolMax = vdev::stats::kPoolAttrMax;

// Looked up by row index, not by pointer: GCC with -fsanitize=address does
// not fold a comparison of a table address with nullptr in a constant
// expression, and these specs build constexpr policy tables.
constexpr AttrSpec statsSpec(uint16_t t) {
  if (t > kStatsMax || !vdev::stats::detail::kPortByAttr[t]) return {};
  return {vdev::stats::kPortCounters[vdev::stats::detail::kPortByAttr[t] - 1].path, Kind::kU64};
}

constexpr AttrSpec poolSpec(uint16_t t) {
  if (t > kPoolMax || !vdev::stats::detail::kPoolByAttr[t]) return {};
  return {vdev::stats::kPoolCounters[vdev::stats::detail::kPoolByAttr[t] - 1].path, Kind::kU64};
}

// NLMSGERR_ATTR_* after an NLMSG_ERROR payload.
constexpr AttrSpec errSpec(uint16_t t) {
  switch (t) {
    case NLMSGERR_ATTR_MSG: return {"NLMSGERR_ATTR_MSG", Kind::kString, kErrorMsgMax};
    case NLMSGERR_ATTR_OFFS: return {"NLMSGERR_ATTR_OFFS", Kind::kU32};
    default: return {};
  }
}
constexpr uint16_t kErrAttrMax = NLMSGERR_ATTR_OFFS;

// The libnl policy for a spec: exact lengths (strings: 1..max+1).
constexpr nla_policy policyFor(const AttrSpec& s) {
  switch (s.kind) {
    case Kind::kFlag:
    case Kind::kU8: return {NLA_U8, 1, 1};
    case Kind::kU16: return {NLA_U16, 2, 2};
    case Kind::kU32: return {NLA_U32, 4, 4};
    case Kind::kU64: return {NLA_U64, 8, 8};
    case Kind::kString: return {NLA_STRING, 1, static_cast<uint16_t>(s.max_chars + 1)};
    case Kind::kMac: return {NLA_UNSPEC, 6, 6};
    case Kind::kAddrs: return {NLA_UNSPEC, 0, 16 * kAddrsMax};
    case Kind::kVids: return {NLA_UNSPEC, 0, 4 * kVidRangesMax};
    case Kind::kBytes: return {NLA_UNSPEC, 0, 0};
    case Kind::kNested: return {NLA_NESTED, 0, 0};
    case Kind::kNone: break;
  }
  return {NLA_UNSPEC, 0, 0};
}

struct Space {
  const char* prefix;  // "" or "CREATE." ...: attribute names in messages
  const char* where;   // "the message", "CREATE" ...: where a stream ends
  uint16_t max;
  AttrSpec (*spec)(uint16_t);
  const nla_policy* policy;
};

template <uint16_t Max, AttrSpec (*F)(uint16_t)>
struct Table {
  static constexpr auto policy = [] {
    std::array<nla_policy, Max + 1> p{};
    for (uint16_t t = 0; t <= Max; ++t) p[t] = policyFor(F(t));
    return p;
  }();
  static constexpr Space space(const char* prefix, const char* where) {
    return {prefix, where, Max, F, policy.data()};
  }
};

constexpr Space kTop = Table<kAttrMax, topSpec>::space("", "the message");
constexpr Space kCreateSpace = Table<kCreateMax, createSpec>::space("CREATE.", "CREATE");
constexpr Space kCaptureFilterSpace =
    Table<kCapFilterMax, captureFilterSpec>::space("CAPTURE_FILTER.", "CAPTURE_FILTER");
constexpr Space kStatsSpace = Table<kStatsMax, statsSpec>::space("STATS.", "STATS");
constexpr Space kPoolSpace = Table<kPoolMax, poolSpec>::space("POOL.", "POOL");
constexpr Space kErrSpace = Table<kErrAttrMax, errSpec>::space("", "the error attributes");

// Above every Space::max. Requests' spaces (the top level, CREATE) also fit
// the 64-bit masks of allowed attributes (allowedFor()).
constexpr uint16_t kMaxSpaceAttrs =
    std::max({uint16_t(kAttrMax), uint16_t(kCreateMax), uint16_t(kCapFilterMax), kStatsMax, kPoolMax, kErrAttrMax}) + 1;
static_assert(kAttrMax < 64 && kCreateMax < 64 && kCapFilterMax < 64);

// "CREATE.PEER_NETNS_NAME", or "type N" for an unknown attribute.
std::string attrLabel(const Space& sp, uint16_t t);
// An attribute kind as messages name it ("u32", "MAC address" ...).
const char* kindText(Kind k);

// An indexed attribute set: tb[type] or nullptr.
struct Attrs {
  nlattr* tb[kMaxSpaceAttrs] = {};
  nlattr* operator[](uint16_t t) const { return t < kMaxSpaceAttrs ? tb[t] : nullptr; }
};

// Walks `len` bytes of attributes at `head` and checks each one; then indexes
// them with nla_parse(). strict (requests): unknown types, type 0 and
// types outside `allowed` (bit per type) are errors; lenient (replies): they
// are skipped. `ctx` names the command for "not valid for" messages.
Result<Attrs> parseAttrs(const Space& sp, const nlattr* head, int len, bool strict,
                         uint64_t allowed, const char* ctx);

// Reads of attributes that parseAttrs() has checked.
inline uint8_t getU8(const nlattr* a) { return nla_get_u8(a); }
inline uint16_t getU16(const nlattr* a) { return nla_get_u16(a); }
inline VidSet getVids(const nlattr* a) {
  VidSet s;
  const auto* d = static_cast<const uint8_t*>(nla_data(a));
  for (int i = 0; i + 4 <= nla_len(a); i += 4) {
    uint16_t r[2];
    std::memcpy(r, d + i, 4);
    for (uint32_t v = r[0]; v <= r[1]; v++) s.set(v);
  }
  return s;
}
// VLAN_PVID, VLAN_TAGGED, VLAN_UNTAGGED: given if any of them is.
inline std::optional<VlanConfig> getVlan(const Attrs& tb) {
  if (!tb[kAttrVlanPvid] && !tb[kAttrVlanTagged] && !tb[kAttrVlanUntagged]) return std::nullopt;
  VlanConfig v;
  if (tb[kAttrVlanPvid]) v.pvid = getU16(tb[kAttrVlanPvid]);
  if (tb[kAttrVlanTagged]) v.tagged = getVids(tb[kAttrVlanTagged]);
  if (tb[kAttrVlanUntagged]) v.untagged = getVids(tb[kAttrVlanUntagged]);
  return v;
}
inline uint32_t getU32(const nlattr* a) { return nla_get_u32(a); }
inline uint64_t getU64(const nlattr* a) { return nla_get_u64(a); }
inline std::string getStr(const nlattr* a) { return std::string(static_cast<const char*>(nla_data(a))); }
inline Mac getMac(const nlattr* a) {
  Mac m;
  nla_memcpy(m.data(), a, 6);
  return m;
}
inline std::vector<IpAddr> getAddrs(const nlattr* a) {
  std::vector<IpAddr> v(static_cast<size_t>(nla_len(a)) / 16);
  const auto* d = static_cast<const uint8_t*>(nla_data(a));
  for (size_t i = 0; i < v.size(); i++) std::memcpy(v[i].data(), d + 16 * i, 16);
  return v;
}
// A policy field's attribute (spec/port_policy.h), read by the field's
// type; nullopt when absent. VLAN: its three attributes (getVlan).
template <class T>
struct PolicyType {};
inline std::optional<uint32_t> getPolicy(const Attrs& tb, uint16_t t, PolicyType<uint32_t>) {
  return tb[t] ? std::optional(getU32(tb[t])) : std::nullopt;
}
inline std::optional<uint64_t> getPolicy(const Attrs& tb, uint16_t t, PolicyType<uint64_t>) {
  return tb[t] ? std::optional(getU64(tb[t])) : std::nullopt;
}
inline std::optional<bool> getPolicy(const Attrs& tb, uint16_t t, PolicyType<bool>) {
  return tb[t] ? std::optional(getU8(tb[t]) != 0) : std::nullopt;
}
inline std::optional<Mac> getPolicy(const Attrs& tb, uint16_t t, PolicyType<Mac>) {
  return tb[t] ? std::optional(getMac(tb[t])) : std::nullopt;
}
inline std::optional<std::vector<IpAddr>> getPolicy(const Attrs& tb, uint16_t t, PolicyType<std::vector<IpAddr>>) {
  return tb[t] ? std::optional(getAddrs(tb[t])) : std::nullopt;
}
inline std::optional<VlanConfig> getPolicy(const Attrs& tb, uint16_t, PolicyType<VlanConfig>) { return getVlan(tb); }
// The row's attributes, a bit each (VLAN: its three).
template <class Row>
constexpr uint64_t policyAttrBits(const Row& r) {
  if constexpr (std::is_same_v<typename Row::Type, VlanConfig>)
    return uint64_t{1} << kAttrVlanPvid | uint64_t{1} << kAttrVlanTagged | uint64_t{1} << kAttrVlanUntagged;
  else
    return uint64_t{1} << r.attr;
}

inline const nlattr* nestHead(const nlattr* a) { return static_cast<const nlattr*>(nla_data(a)); }

// A 4-byte aligned view of untrusted bytes (copied when the caller's are not).
class Aligned {
 public:
  explicit Aligned(std::span<const uint8_t> in) : n_(in.size()) {
    if (n_ == 0) {
      p_ = reinterpret_cast<const uint8_t*>(&empty_);
    } else if (reinterpret_cast<uintptr_t>(in.data()) % 4 == 0) {
      p_ = in.data();
    } else {
      copy_.resize((n_ + 3) / 4);
      std::memcpy(copy_.data(), in.data(), n_);
      p_ = reinterpret_cast<const uint8_t*>(copy_.data());
    }
  }
  const uint8_t* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  std::vector<uint32_t> copy_;
  uint32_t empty_ = 0;
  const uint8_t* p_ = nullptr;
  size_t n_;
};

// Free text a peer shows (HOOK_NOTE, LINK_NOTE): printable ASCII, anything else '?'.
std::string printable(std::string t);
// Checks on reply objects, made by the encoder (a handler bug becomes EIO
// instead of a reply the client would reject) and by the decoder.
Status checkPortName(const std::string& n);
Status checkVersion(const std::string& v);
// Commands answered by an ACK (NLM_F_ACK set on their requests).
bool isAction(Cmd c);
MsgHeader readHeader(const uint8_t* p);
std::string hex(unsigned v);

}  // namespace vdev::proto::codec_detail
