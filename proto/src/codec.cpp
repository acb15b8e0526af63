// Netlink encoding of the vdev control protocol (see codec.h).
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

namespace vdev::proto {

namespace {

// ------------------------------------------------------------ ownership

struct NlMsgFree {
  void operator()(nl_msg* m) const noexcept { nlmsg_free(m); }
};
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgFree>;

Error invalid(std::string msg) { return Error{EINVAL, std::move(msg)}; }

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
    case kAttrStormBcast: return {"STORM_BCAST", Kind::kU32};
    case kAttrStormMcast: return {"STORM_MCAST", Kind::kU32};
    case kAttrStormUnknown: return {"STORM_UNKNOWN", Kind::kU32};
    case kAttrPolicePps: return {"POLICE_PPS", Kind::kU64};
    case kAttrPoliceBps: return {"POLICE_BPS", Kind::kU64};
    case kAttrPoliceBurst: return {"POLICE_BURST", Kind::kU32};
    case kAttrAllowedMac: return {"ALLOWED_MAC", Kind::kMac};
    case kAttrAllowedIps: return {"ALLOWED_IPS", Kind::kAddrs};
    case kAttrRaGuard: return {"RA_GUARD", Kind::kFlag};
    case kAttrDhcpGuard: return {"DHCP_GUARD", Kind::kFlag};
    case kAttrVlanPvid: return {"VLAN_PVID", Kind::kU16};
    case kAttrVlanTagged: return {"VLAN_TAGGED", Kind::kVids};
    case kAttrVlanUntagged: return {"VLAN_UNTAGGED", Kind::kVids};
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
    default: return {};
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
constexpr Space kStatsSpace = Table<kStatsMax, statsSpec>::space("STATS.", "STATS");
constexpr Space kPoolSpace = Table<kPoolMax, poolSpec>::space("POOL.", "POOL");
constexpr Space kErrSpace = Table<kErrAttrMax, errSpec>::space("", "the error attributes");

// Above every Space::max. Requests' spaces (the top level, CREATE) also fit
// the 64-bit masks of allowed attributes (allowedFor()).
constexpr uint16_t kMaxSpaceAttrs =
    std::max({uint16_t(kAttrMax), uint16_t(kCreateMax), kStatsMax, kPoolMax, kErrAttrMax}) + 1;
static_assert(kAttrMax < 64 && kCreateMax < 64);

std::string attrLabel(const Space& sp, uint16_t t) {
  AttrSpec s = t <= sp.max ? sp.spec(t) : AttrSpec{};
  if (s.name) return std::string(sp.prefix) + s.name;
  return std::string(sp.prefix) + "type " + std::to_string(t);
}

const char* kindText(Kind k) {
  switch (k) {
    case Kind::kFlag: return "u8 0|1";
    case Kind::kU8: return "u8";
    case Kind::kU16: return "u16";
    case Kind::kU32: return "u32";
    case Kind::kU64: return "u64";
    case Kind::kString: return "string";
    case Kind::kMac: return "MAC address";
    case Kind::kAddrs: return "IP addresses, 16 bytes each";
    case Kind::kVids: return "VLAN ID ranges, u16 pairs";
    case Kind::kBytes: return "bytes";
    case Kind::kNested: return "nested";
    case Kind::kNone: break;
  }
  return "?";
}

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
                         uint64_t allowed, const char* ctx) {
  Attrs out;
  std::bitset<kMaxSpaceAttrs> seen;
  int rem = len;
  const nlattr* nla = head;
  while (rem > 0) {
    if (!nla_ok(nla, rem)) {
      if (rem < NLA_HDRLEN)
        return invalid("truncated attribute header: " + std::to_string(rem) +
                       " bytes left at the end of " + sp.where);
      const uint16_t t = nla->nla_type & NLA_TYPE_MASK;
      if (nla->nla_len < NLA_HDRLEN)
        return invalid("attribute " + attrLabel(sp, t) + ": length field " +
                       std::to_string(nla->nla_len) + " is smaller than its header");
      return invalid("attribute " + attrLabel(sp, t) + ": length field " +
                     std::to_string(nla->nla_len) + " exceeds the " + std::to_string(rem) +
                     " bytes left (truncated)");
    }
    const uint16_t raw = nla->nla_type;
    const uint16_t t = raw & NLA_TYPE_MASK;
    const int plen = nla_len(nla);
    const AttrSpec s = t <= sp.max ? sp.spec(t) : AttrSpec{};
    // Built only for an error message (dumps carry tens of thousands of attributes).
    auto label = [&] { return "attribute " + attrLabel(sp, t); };
    if (s.kind == Kind::kNone) {
      if (strict) return invalid(label() + ": unknown attribute");
    } else {
      if (strict && !(allowed & (uint64_t{1} << t)))
        return invalid(label() + " is not valid for " + ctx);
      if (seen.test(t)) return invalid(label() + ": appears more than once");
      seen.set(t);
      if (raw & NLA_F_NET_BYTEORDER)
        return invalid(label() + ": NLA_F_NET_BYTEORDER not supported");
      if ((raw & NLA_F_NESTED) && s.kind != Kind::kNested)
        return invalid(label() + ": NLA_F_NESTED set on a " + kindText(s.kind) + " attribute");
      int want = -1;
      switch (s.kind) {
        case Kind::kFlag:
        case Kind::kU8: want = 1; break;
        case Kind::kU16: want = 2; break;
        case Kind::kU32: want = 4; break;
        case Kind::kU64: want = 8; break;
        case Kind::kMac: want = 6; break;
        default: break;
      }
      if (want >= 0 && plen != want)
        return invalid(label() + ": payload of " + std::to_string(plen) + " bytes, expected " +
                       std::to_string(want) + " (" + kindText(s.kind) + ")");
      if (s.kind == Kind::kAddrs && (plen % 16 || plen > 16 * kAddrsMax))
        return invalid(label() + ": payload of " + std::to_string(plen) + " bytes, expected " +
                       "16 bytes an address, at most " + std::to_string(kAddrsMax) + " (" + kindText(s.kind) + ")");
      if (s.kind == Kind::kVids) {
        if (plen % 4 || plen > 4 * kVidRangesMax)
          return invalid(label() + ": payload of " + std::to_string(plen) + " bytes, expected " +
                         "4 bytes a range, at most " + std::to_string(kVidRangesMax) + " (" + kindText(s.kind) + ")");
        const auto* d = static_cast<const uint8_t*>(nla_data(nla));
        for (int i = 0; i < plen; i += 4) {
          uint16_t r[2];
          std::memcpy(r, d + i, 4);
          if (r[0] < 1 || r[1] > kVidMax || r[0] > r[1])
            return invalid(label() + ": range " + std::to_string(r[0]) + "-" + std::to_string(r[1]) +
                           ", expected VLAN IDs 1 to " + std::to_string(kVidMax) + ", first <= last");
        }
      }
      if (s.kind == Kind::kFlag) {
        uint8_t v = nla_get_u8(nla);
        if (v > 1) return invalid(label() + ": " + std::to_string(v) + ", expected 0 or 1");
      }
      if (s.kind == Kind::kString) {
        const char* d = static_cast<const char*>(nla_data(nla));
        if (plen < 1 || d[plen - 1] != '\0')
          return invalid(label() + ": string is not NUL-terminated");
        const size_t n = strnlen(d, static_cast<size_t>(plen));
        if (n + 1 != static_cast<size_t>(plen))
          return invalid(label() + ": NUL byte inside the string");
        if (n > s.max_chars)
          return invalid(label() + ": " + std::to_string(n) + " characters, at most " +
                         std::to_string(s.max_chars));
      }
    }
    // nla_next(); the last attribute may omit its padding.
    int total = NLA_ALIGN(nla->nla_len);
    if (total > rem) total = rem;
    rem -= total;
    nla = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(nla) + total);
  }
  // Index with libnl; after the walk above its length policy cannot fail.
  int err = nla_parse(out.tb, sp.max, const_cast<nlattr*>(head), len, sp.policy);
  if (err < 0)
    return invalid(std::string("malformed attributes (libnl error ") + std::to_string(-err) + ")");
  out.tb[0] = nullptr;
  return out;
}

// Reads of attributes that parseAttrs() has checked.
uint8_t getU8(const nlattr* a) { return nla_get_u8(a); }
uint16_t getU16(const nlattr* a) { return nla_get_u16(a); }
VidSet getVids(const nlattr* a) {
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
std::optional<VlanConfig> getVlan(const Attrs& tb) {
  if (!tb[kAttrVlanPvid] && !tb[kAttrVlanTagged] && !tb[kAttrVlanUntagged]) return std::nullopt;
  VlanConfig v;
  if (tb[kAttrVlanPvid]) v.pvid = getU16(tb[kAttrVlanPvid]);
  if (tb[kAttrVlanTagged]) v.tagged = getVids(tb[kAttrVlanTagged]);
  if (tb[kAttrVlanUntagged]) v.untagged = getVids(tb[kAttrVlanUntagged]);
  return v;
}
uint32_t getU32(const nlattr* a) { return nla_get_u32(a); }
uint64_t getU64(const nlattr* a) { return nla_get_u64(a); }
std::string getStr(const nlattr* a) { return std::string(static_cast<const char*>(nla_data(a))); }
Mac getMac(const nlattr* a) {
  Mac m;
  nla_memcpy(m.data(), a, 6);
  return m;
}
std::vector<IpAddr> getAddrs(const nlattr* a) {
  std::vector<IpAddr> v(static_cast<size_t>(nla_len(a)) / 16);
  const auto* d = static_cast<const uint8_t*>(nla_data(a));
  for (size_t i = 0; i < v.size(); i++) std::memcpy(v[i].data(), d + 16 * i, 16);
  return v;
}
const nlattr* nestHead(const nlattr* a) { return static_cast<const nlattr*>(nla_data(a)); }

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

// ------------------------------------------------------------- building

// Attribute writer over one nl_msg. The first failed nla_put (no room:
// -NLE_NOMEM) is remembered and every later put skipped, so building code is
// linear and checks once.
class Writer {
 public:
  explicit Writer(nl_msg* m) : m_(m) {}
  bool ok() const { return err_ == 0; }
  int err() const { return err_; }
  void u8(int t, uint8_t v) { note(ok() ? nla_put_u8(m_, t, v) : 0); }
  void u16(int t, uint16_t v) { note(ok() ? nla_put_u16(m_, t, v) : 0); }
  void vids(int t, const VidSet& s) {
    std::vector<uint16_t> r;
    for (const auto& [a, b] : vidRanges(s)) r.insert(r.end(), {a, b});
    note(ok() ? nla_put(m_, t, static_cast<int>(2 * r.size()), r.data()) : 0);
  }
  // A port's VLAN settings: all three when given (VLAN_PVID 0 alone: none).
  void vlan(const VlanConfig& v) {
    u16(kAttrVlanPvid, v.pvid);
    if (v.tagged.any()) vids(kAttrVlanTagged, v.tagged);
    if (v.untagged.any()) vids(kAttrVlanUntagged, v.untagged);
  }
  void u32(int t, uint32_t v) { note(ok() ? nla_put_u32(m_, t, v) : 0); }
  void u64(int t, uint64_t v) { note(ok() ? nla_put_u64(m_, t, v) : 0); }
  void str(int t, const std::string& s) {
    // Exact bytes plus the NUL (nla_put_string would stop at an inner NUL).
    if (s.size() >= 0xffff - NLA_HDRLEN) return note(-NLE_NOMEM);
    note(ok() ? nla_put(m_, t, static_cast<int>(s.size() + 1), s.c_str()) : 0);
  }
  void mac(int t, const Mac& m) { note(ok() ? nla_put(m_, t, 6, m.data()) : 0); }
  void bytes(int t, const std::vector<uint8_t>& v) {
    if (v.size() > 0xffff - NLA_HDRLEN) return note(-NLE_NOMEM);
    note(ok() ? nla_put(m_, t, static_cast<int>(v.size()), v.data()) : 0);
  }
  void addrs(int t, const std::vector<IpAddr>& v) {
    // std::array<uint8_t, 16> elements: contiguous, no padding.
    note(ok() ? nla_put(m_, t, static_cast<int>(16 * v.size()), v.data()) : 0);
  }
  nlattr* nestStart(int t) {
    if (!ok()) return nullptr;
    nlattr* a = nla_nest_start(m_, t);
    if (!a) note(-NLE_NOMEM);
    return a;
  }
  void nestEnd(nlattr* a) {
    // keep_empty: an empty CREATE means "create with defaults".
    if (ok() && a) note(nla_nest_end_keep_empty(m_, a));
  }

 private:
  void note(int rc) {
    if (rc < 0 && err_ == 0) err_ = rc;
  }
  nl_msg* m_;
  int err_ = 0;
};

std::vector<uint8_t> bytesOf(nl_msg* m) {
  const nlmsghdr* h = nlmsg_hdr(m);
  const auto* p = reinterpret_cast<const uint8_t*>(h);
  return std::vector<uint8_t>(p, p + h->nlmsg_len);
}

// Builds one generic netlink message: header + fill(Writer&). Tries a page
// first and the full datagram size if that is too small.
template <typename Fill>
Result<std::vector<uint8_t>> buildGenl(uint32_t pid, uint32_t seq, uint16_t flags, uint8_t cmd,
                                       Fill&& fill) {
  for (size_t cap : {size_t{4096}, kMaxMessageSize}) {
    NlMsgPtr m(nlmsg_alloc_size(cap));
    if (!m) return Error{ENOMEM, "nlmsg_alloc_size"};
    if (!genlmsg_put(m.get(), pid, seq, kFamilyId, 0, flags, cmd, kProtocolVersion))
      return Error{EMSGSIZE, "genlmsg_put"};
    Writer w(m.get());
    fill(w);
    if (w.ok()) return bytesOf(m.get());
    if (w.err() != -NLE_NOMEM)
      return Error{EINVAL, std::string("nla_put: ") + nl_geterror(w.err())};
  }
  return Error{EMSGSIZE, std::string(cmdName(cmd)) + ": one object does not fit in " +
                             std::to_string(kMaxMessageSize) + " bytes"};
}

// Datagrams of at most kMaxMessageSize bytes, each holding whole messages.
class Packer {
 public:
  void add(std::vector<uint8_t>&& msg) {
    if (!cur_.empty() && cur_.size() + msg.size() > kMaxMessageSize) flush();
    if (cur_.empty()) {
      cur_ = std::move(msg);
    } else {
      cur_.insert(cur_.end(), msg.begin(), msg.end());
    }
  }
  std::vector<std::vector<uint8_t>> finish() {
    flush();
    return std::move(out_);
  }

 private:
  void flush() {
    if (!cur_.empty()) out_.push_back(std::move(cur_));
    cur_.clear();
  }
  std::vector<std::vector<uint8_t>> out_;
  std::vector<uint8_t> cur_;
};

// Free text a peer shows (HOOK_NOTE): printable ASCII, anything else '?'.
std::string printable(std::string t) {
  for (char& c : t)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return t;
}

void putCreate(Writer& w, const CreateOptions& c) {
  nlattr* n = w.nestStart(kAttrCreate);
  if (c.peer_netns_name) w.str(kCreatePeerNetnsName, *c.peer_netns_name);
  if (c.peer_netns_path) w.str(kCreatePeerNetnsPath, *c.peer_netns_path);
  if (c.peer_netns_pid) w.u32(kCreatePeerNetnsPid, *c.peer_netns_pid);
  if (c.peer_ifname) w.str(kCreatePeerIfname, *c.peer_ifname);
  if (c.peer_mac) w.mac(kCreatePeerMac, *c.peer_mac);
  if (c.mtu) w.u32(kCreateMtu, *c.mtu);
  if (c.owner_uid) w.u32(kCreateOwnerUid, *c.owner_uid);
  if (c.group_gid) w.u32(kCreateGroupGid, *c.group_gid);
  if (c.multi_queue) w.u8(kCreateMultiQueue, *c.multi_queue ? 1 : 0);
  if (c.mac) w.mac(kCreateMac, *c.mac);
  w.nestEnd(n);
}

void putLimits(Writer& w, const LimitOptions& l) {
  if (l.storm_bcast) w.u32(kAttrStormBcast, *l.storm_bcast);
  if (l.storm_mcast) w.u32(kAttrStormMcast, *l.storm_mcast);
  if (l.storm_unknown) w.u32(kAttrStormUnknown, *l.storm_unknown);
  if (l.police_pps) w.u64(kAttrPolicePps, *l.police_pps);
  if (l.police_bps) w.u64(kAttrPoliceBps, *l.police_bps);
  if (l.police_burst_ms) w.u32(kAttrPoliceBurst, *l.police_burst_ms);
  if (l.allowed_mac) w.mac(kAttrAllowedMac, *l.allowed_mac);
  if (l.allowed_ips) w.addrs(kAttrAllowedIps, *l.allowed_ips);
  if (l.ra_guard) w.u8(kAttrRaGuard, *l.ra_guard ? 1 : 0);
  if (l.dhcp_guard) w.u8(kAttrDhcpGuard, *l.dhcp_guard ? 1 : 0);
  if (l.vlan) w.vlan(*l.vlan);
}

void putBody(Writer& w, const PortAddRequest& r) {
  w.str(kAttrPortName, r.name);
  w.u8(kAttrPortType, static_cast<uint8_t>(r.type));
  if (r.queues) w.u32(kAttrQueues, *r.queues);
  w.u8(kAttrXdpMode, static_cast<uint8_t>(r.xdp_mode));
  if (r.create) putCreate(w, *r.create);
  if (r.fast_rx) w.u8(kAttrFastRx, *r.fast_rx ? 1 : 0);
  if (r.tag) w.str(kAttrPortTag, *r.tag);
  if (r.hook) w.u8(kAttrHook, static_cast<uint8_t>(*r.hook));
  if (r.isolated) w.u8(kAttrIsolated, *r.isolated ? 1 : 0);
  putLimits(w, r.limits);
}
void putBody(Writer& w, const PortDelRequest& r) { w.str(kAttrPortName, r.name); }
void putBody(Writer& w, const PortSetRequest& r) {
  w.str(kAttrPortName, r.name);
  if (r.isolated) w.u8(kAttrIsolated, *r.isolated ? 1 : 0);
  putLimits(w, r.limits);
}
void putBody(Writer& w, const PortGetRequest& r) {
  if (!r.name.empty()) w.str(kAttrPortName, r.name);
}
void putBody(Writer& w, const StatsGetRequest& r) {
  if (!r.name.empty()) w.str(kAttrPortName, r.name);
}
void putBody(Writer&, const FdbGetRequest&) {}
void putBody(Writer& w, const FdbAddRequest& r) {
  w.mac(kAttrMac, r.mac);
  w.str(kAttrPortName, r.port);
  w.u8(kAttrFdbStatic, r.is_static ? 1 : 0);
  if (r.vid != kVidDefault) w.u16(kAttrVlanId, r.vid);
}
void putBody(Writer& w, const FdbDelRequest& r) {
  w.mac(kAttrMac, r.mac);
  if (r.vid != kVidDefault) w.u16(kAttrVlanId, r.vid);
}
void putBody(Writer&, const InfoGetRequest&) {}
void putBody(Writer& w, const CaptureStartRequest& r) {
  w.str(kAttrPortName, r.name);
  if (r.dir != CaptureDir::kBoth) w.u8(kAttrCaptureDir, static_cast<uint8_t>(r.dir));
  if (r.snaplen) w.u32(kAttrCaptureSnaplen, *r.snaplen);
  if (r.buffer) w.u32(kAttrCaptureBuffer, *r.buffer);
}
void putBody(Writer& w, const CaptureReadRequest& r) { w.u32(kAttrCaptureId, r.id); }
void putBody(Writer& w, const CaptureStopRequest& r) { w.u32(kAttrCaptureId, r.id); }

void putCapture(Writer& w, const CaptureMsg& c) {
  w.u32(kAttrCaptureId, c.id);
  if (c.snaplen) w.u32(kAttrCaptureSnaplen, *c.snaplen);
  if (!c.frames.empty()) w.bytes(kAttrCaptureFrames, c.frames);
  w.u64(kAttrCaptureTaken, c.taken);
  w.u64(kAttrCaptureDrops, c.drops);
  if (c.ended) w.u8(kAttrCaptureEnded, 1);
}

void putPortInfo(Writer& w, const PortInfo& p) {
  w.str(kAttrPortName, p.name);
  w.u8(kAttrPortType, static_cast<uint8_t>(p.type));
  w.u32(kAttrIfindex, p.ifindex);
  w.u32(kAttrQueues, p.queues);
  w.u32(kAttrQueuesBound, p.queues_bound);
  w.u8(kAttrXdpMode, static_cast<uint8_t>(p.xdp_mode));
  w.u8(kAttrBindMode, static_cast<uint8_t>(p.bind_mode));
  w.u32(kAttrMtu, p.mtu);
  w.u8(kAttrLive, p.live ? 1 : 0);
  if (p.mac) w.mac(kAttrMac, *p.mac);
  w.u8(kAttrFastRx, p.fast_rx ? 1 : 0);
  if (p.owner_uid) w.u32(kAttrOwnerUid, *p.owner_uid);
  if (!p.tag.empty()) w.str(kAttrPortTag, p.tag);
  if (p.hook) w.u8(kAttrHook, static_cast<uint8_t>(*p.hook));
  if (p.tc_attach) w.u8(kAttrTcAttach, static_cast<uint8_t>(*p.tc_attach));
  if (!p.hook_note.empty()) w.str(kAttrHookNote, printable(p.hook_note.substr(0, kHookNoteMax)));
  if (!p.link_note.empty()) w.str(kAttrLinkNote, printable(p.link_note.substr(0, kHookNoteMax)));
  if (p.uplink) w.u8(kAttrUplink, 1);
  if (p.isolated) w.u8(kAttrIsolated, 1);
  if (p.limits) {
    // All six, 0s included: a 0 here says "no limit", where absence would
    // say "an older daemon".
    w.u32(kAttrStormBcast, p.limits->storm_bcast);
    w.u32(kAttrStormMcast, p.limits->storm_mcast);
    w.u32(kAttrStormUnknown, p.limits->storm_unknown);
    w.u64(kAttrPolicePps, p.limits->police_pps);
    w.u64(kAttrPoliceBps, p.limits->police_bps);
    w.u32(kAttrPoliceBurst, p.limits->police_burst_ms);
    if (p.limits->allowed_mac) w.mac(kAttrAllowedMac, *p.limits->allowed_mac);
    if (!p.limits->allowed_ips.empty()) w.addrs(kAttrAllowedIps, p.limits->allowed_ips);
    if (p.limits->ra_guard) w.u8(kAttrRaGuard, 1);
    if (p.limits->dhcp_guard) w.u8(kAttrDhcpGuard, 1);
    if (p.limits->vlan.configured()) w.vlan(p.limits->vlan);
  }
}

void putPortStats(Writer& w, const PortStatsMsg& s) {
  putPortInfo(w, s.port);
  nlattr* n = w.nestStart(kAttrStats);
  for (const vdev::stats::CounterDef& c : vdev::stats::kPortCounters) w.u64(c.attr, s.counters[c]);
  w.nestEnd(n);
}

void putGlobals(Writer& w, const StatsReply& r) {
  if (r.pool) {
    const PoolMsg& p = *r.pool;
    nlattr* n = w.nestStart(kAttrPool);
    for (const vdev::stats::CounterDef& c : vdev::stats::kPoolCounters) w.u64(c.attr, p[c]);
    w.nestEnd(n);
  }
  if (r.fdb_entries) w.u64(kAttrFdbEntries, *r.fdb_entries);
}

void putFdb(Writer& w, const FdbEntryMsg& e) {
  w.mac(kAttrMac, e.mac);
  w.str(kAttrPortName, e.port);
  w.u8(kAttrFdbStatic, e.is_static ? 1 : 0);
  w.u64(kAttrFdbAgeMs, e.age_ms);
  w.u16(kAttrVlanId, e.vid);
}

void putInfo(Writer& w, const InfoMsg& i) {
  w.str(kAttrVersion, i.version);
  w.u32(kAttrThreads, i.threads);
  w.u8(kAttrSwitchMode, static_cast<uint8_t>(i.mode));
  w.u64(kAttrUptime, i.uptime_s);
  w.u32(kAttrNumPorts, i.num_ports);
  if (i.fd_limit) w.u32(kAttrFdLimit, *i.fd_limit);
  if (i.ports_fd_left) w.u32(kAttrPortsFdLeft, *i.ports_fd_left);
  if (i.ports_pool_left) w.u32(kAttrPortsPoolLeft, *i.ports_pool_left);
  if (i.ports_map_left) w.u32(kAttrPortsMapLeft, *i.ports_map_left);
  if (!i.start_issues.empty()) w.str(kAttrStartIssues, i.start_issues.substr(0, kStartIssuesMax));
  if (i.tc_attach) w.u8(kAttrTcAttach, static_cast<uint8_t>(*i.tc_attach));
  if (i.kernel_features) w.u64(kAttrKernelFeatures, *i.kernel_features);
  if (i.uid_caps) {
    const UidCapsWire c{i.uid_caps->ports, i.uid_caps->fdb, i.uid_caps->capture_bytes, i.uid_caps->rate,
                        i.uid_caps->burst};
    const auto* p = reinterpret_cast<const uint8_t*>(&c);
    w.bytes(kAttrUidCaps, std::vector<uint8_t>(p, p + sizeof c));
  }
  if (!i.uid_use.empty()) {
    std::vector<uint8_t> b;
    for (size_t k = 0; k < i.uid_use.size() && k < kUidUseMax; k++) {
      const auto& u = i.uid_use[k];
      const UidUseWire r{u.uid, u.ports, u.fdb, 0, u.capture_bytes};
      const auto* p = reinterpret_cast<const uint8_t*>(&r);
      b.insert(b.end(), p, p + sizeof r);
    }
    w.bytes(kAttrUidUse, b);
    b.clear();
    for (size_t k = 0; k < i.uid_use.size() && k < kUidUseMax; k++) {
      const auto& u = i.uid_use[k];
      if (!u.requests && !u.requests_refused) continue;
      const UidRequestsWire r{u.uid, 0, u.requests, u.requests_refused};
      const auto* p = reinterpret_cast<const uint8_t*>(&r);
      b.insert(b.end(), p, p + sizeof r);
    }
    if (!b.empty()) w.bytes(kAttrUidRequests, b);
  }
}

// Checks on reply objects, made by the encoder (a handler bug becomes EIO
// instead of a reply the client would reject) and by the decoder.
Status checkPortName(const std::string& n) { return validateIfname(n, "PORT_NAME"); }
Status checkVersion(const std::string& v) {
  if (v.empty() || v.size() > kVersionMax)
    return invalid("attribute VERSION: length " + std::to_string(v.size()) + ", expected 1.." +
                   std::to_string(kVersionMax));
  for (char c : v)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      return invalid("attribute VERSION: non-printable characters");
  return {};
}

Error handlerBug(const char* what, Cmd cmd) {
  return Error{EIO,
               std::string("internal error: handler answered ") + cmdName(cmd) + " with " + what};
}

std::vector<uint8_t> buildErrorMsg(const MsgHeader& orig, int err, std::string_view msg) {
  // err >= 0 here; 0 is an ACK.
  std::string text;
  text.reserve(std::min(msg.size(), kErrorMsgMax));
  for (size_t i = 0; i < msg.size() && i < kErrorMsgMax; ++i) {
    unsigned char c = static_cast<unsigned char>(msg[i]);
    text += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  const uint16_t flags = NLM_F_CAPPED | (text.empty() ? 0 : NLM_F_ACK_TLVS);
  NlMsgPtr m(nlmsg_alloc_size(NLMSG_HDRLEN + sizeof(nlmsgerr) + NLA_HDRLEN + kErrorMsgMax + 8));
  if (!m) return {};
  nlmsghdr* h = nlmsg_put(m.get(), orig.pid, orig.seq, NLMSG_ERROR, sizeof(nlmsgerr), flags);
  if (!h) return {};
  nlmsgerr e{};
  e.error = -err;
  e.msg.nlmsg_len = orig.len;
  e.msg.nlmsg_type = orig.type;
  e.msg.nlmsg_flags = orig.flags;
  e.msg.nlmsg_seq = orig.seq;
  e.msg.nlmsg_pid = orig.pid;
  std::memcpy(nlmsg_data(h), &e, sizeof e);
  if (!text.empty())
    nla_put(m.get(), NLMSGERR_ATTR_MSG, static_cast<int>(text.size() + 1), text.c_str());
  return bytesOf(m.get());
}

std::vector<uint8_t> buildDone(const MsgHeader& orig) {
  NlMsgPtr m(nlmsg_alloc_size(NLMSG_HDRLEN + 8));
  if (!m) return {};
  nlmsghdr* h = nlmsg_put(m.get(), orig.pid, orig.seq, NLMSG_DONE, sizeof(int), NLM_F_MULTI);
  if (!h) return {};
  int zero = 0;
  std::memcpy(nlmsg_data(h), &zero, sizeof zero);
  return bytesOf(m.get());
}

// A dump (or a single object): one message per item, packed.
template <typename T, typename Put>
Result<std::vector<std::vector<uint8_t>>> encodeObjects(const Request& req, bool dump,
                                                        const std::vector<T>& items, Put&& put,
                                                        const StatsReply* globals) {
  const Cmd cmd = cmdOf(req.body);
  const uint16_t flags = dump ? NLM_F_MULTI : 0;
  Packer pk;
  if (!dump) {
    // Exactly one object; STATS_GET puts the globals in the same message.
    auto msg = buildGenl(req.hdr.pid, req.hdr.seq, 0, cmd, [&](Writer& w) {
      put(w, items[0]);
      if (globals) putGlobals(w, *globals);
    });
    if (!msg) return msg.error();
    pk.add(std::move(*msg));
    return pk.finish();
  }
  if (globals && (globals->pool || globals->fdb_entries)) {
    auto msg = buildGenl(req.hdr.pid, req.hdr.seq, flags, cmd,
                         [&](Writer& w) { putGlobals(w, *globals); });
    if (!msg) return msg.error();
    pk.add(std::move(*msg));
  }
  for (const T& it : items) {
    auto msg = buildGenl(req.hdr.pid, req.hdr.seq, flags, cmd, [&](Writer& w) { put(w, it); });
    if (!msg) return msg.error();
    pk.add(std::move(*msg));
  }
  auto done = buildDone(req.hdr);
  if (done.empty()) return Error{ENOMEM, "NLMSG_DONE"};
  pk.add(std::move(done));
  return pk.finish();
}

bool isAction(Cmd c) {
  return c == kCmdPortAdd || c == kCmdPortDel || c == kCmdPortSet || c == kCmdFdbAdd || c == kCmdFdbDel;
}

// ----------------------------------------------------------- decoding

// Allowed request attributes per command (bit per type).
uint64_t allowedFor(Cmd c) {
  auto bit = [](uint16_t t) { return uint64_t{1} << t; };
  const uint64_t limits = bit(kAttrStormBcast) | bit(kAttrStormMcast) | bit(kAttrStormUnknown) |
                          bit(kAttrPolicePps) | bit(kAttrPoliceBps) | bit(kAttrPoliceBurst) |
                          bit(kAttrAllowedMac) | bit(kAttrAllowedIps) | bit(kAttrRaGuard) |
                          bit(kAttrDhcpGuard) | bit(kAttrVlanPvid) | bit(kAttrVlanTagged) |
                          bit(kAttrVlanUntagged);
  switch (c) {
    case kCmdPortAdd:
      return bit(kAttrPortName) | bit(kAttrPortType) | bit(kAttrQueues) | bit(kAttrXdpMode) |
             bit(kAttrCreate) | bit(kAttrFastRx) | bit(kAttrPortTag) | bit(kAttrHook) | bit(kAttrIsolated) |
             limits;
    case kCmdPortSet: return bit(kAttrPortName) | bit(kAttrIsolated) | limits;
    case kCmdPortDel:
    case kCmdPortGet:
    case kCmdStatsGet: return bit(kAttrPortName);
    case kCmdFdbAdd: return bit(kAttrMac) | bit(kAttrPortName) | bit(kAttrFdbStatic) | bit(kAttrVlanId);
    case kCmdFdbDel: return bit(kAttrMac) | bit(kAttrVlanId);
    case kCmdCaptureStart:
      return bit(kAttrPortName) | bit(kAttrCaptureDir) | bit(kAttrCaptureSnaplen) | bit(kAttrCaptureBuffer);
    case kCmdCaptureRead:
    case kCmdCaptureStop: return bit(kAttrCaptureId);
    default: return 0;
  }
}

Error missing(const char* attr, Cmd c) {
  return invalid(std::string("missing attribute ") + attr + " (required by " + cmdName(c) + ")");
}

Result<CreateOptions> decodeCreate(const nlattr* nest) {
  auto a = parseAttrs(kCreateSpace, nestHead(nest), nla_len(nest), true, ~uint64_t{0}, "CREATE");
  if (!a) return a.error();
  const Attrs& tb = *a;
  CreateOptions c;
  if (tb[kCreatePeerNetnsName]) c.peer_netns_name = getStr(tb[kCreatePeerNetnsName]);
  if (tb[kCreatePeerNetnsPath]) c.peer_netns_path = getStr(tb[kCreatePeerNetnsPath]);
  if (tb[kCreatePeerNetnsPid]) c.peer_netns_pid = getU32(tb[kCreatePeerNetnsPid]);
  if (tb[kCreatePeerIfname]) c.peer_ifname = getStr(tb[kCreatePeerIfname]);
  if (tb[kCreatePeerMac]) c.peer_mac = getMac(tb[kCreatePeerMac]);
  if (tb[kCreateMtu]) c.mtu = getU32(tb[kCreateMtu]);
  if (tb[kCreateOwnerUid]) c.owner_uid = getU32(tb[kCreateOwnerUid]);
  if (tb[kCreateGroupGid]) c.group_gid = getU32(tb[kCreateGroupGid]);
  if (tb[kCreateMultiQueue]) c.multi_queue = getU8(tb[kCreateMultiQueue]) != 0;
  if (tb[kCreateMac]) c.mac = getMac(tb[kCreateMac]);
  return c;
}

LimitOptions getLimits(const Attrs& tb) {
  LimitOptions l;
  if (tb[kAttrStormBcast]) l.storm_bcast = getU32(tb[kAttrStormBcast]);
  if (tb[kAttrStormMcast]) l.storm_mcast = getU32(tb[kAttrStormMcast]);
  if (tb[kAttrStormUnknown]) l.storm_unknown = getU32(tb[kAttrStormUnknown]);
  if (tb[kAttrPolicePps]) l.police_pps = getU64(tb[kAttrPolicePps]);
  if (tb[kAttrPoliceBps]) l.police_bps = getU64(tb[kAttrPoliceBps]);
  if (tb[kAttrPoliceBurst]) l.police_burst_ms = getU32(tb[kAttrPoliceBurst]);
  if (tb[kAttrAllowedMac]) l.allowed_mac = getMac(tb[kAttrAllowedMac]);
  if (tb[kAttrAllowedIps]) l.allowed_ips = getAddrs(tb[kAttrAllowedIps]);
  if (tb[kAttrRaGuard]) l.ra_guard = getU8(tb[kAttrRaGuard]) != 0;
  if (tb[kAttrDhcpGuard]) l.dhcp_guard = getU8(tb[kAttrDhcpGuard]) != 0;
  l.vlan = getVlan(tb);
  return l;
}

Result<RequestBody> decodeBody(Cmd cmd, bool dump, const Attrs& tb) {
  switch (cmd) {
    case kCmdPortAdd: {
      PortAddRequest r;
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      if (!tb[kAttrPortType]) return missing("PORT_TYPE", cmd);
      r.name = getStr(tb[kAttrPortName]);
      r.type = static_cast<PortType>(getU8(tb[kAttrPortType]));
      if (tb[kAttrQueues]) r.queues = getU32(tb[kAttrQueues]);
      if (tb[kAttrXdpMode]) r.xdp_mode = static_cast<XdpMode>(getU8(tb[kAttrXdpMode]));
      if (tb[kAttrCreate]) {
        auto c = decodeCreate(tb[kAttrCreate]);
        if (!c) return c.error();
        r.create = std::move(*c);
      }
      if (tb[kAttrFastRx]) r.fast_rx = getU8(tb[kAttrFastRx]) != 0;
      if (tb[kAttrPortTag]) r.tag = getStr(tb[kAttrPortTag]);
      if (tb[kAttrHook]) r.hook = static_cast<PortHook>(getU8(tb[kAttrHook]));
      if (tb[kAttrIsolated]) r.isolated = getU8(tb[kAttrIsolated]) != 0;
      r.limits = getLimits(tb);
      return RequestBody{std::move(r)};
    }
    case kCmdPortDel:
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      return RequestBody{PortDelRequest{getStr(tb[kAttrPortName])}};
    case kCmdPortSet: {
      PortSetRequest r;
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      r.name = getStr(tb[kAttrPortName]);
      if (tb[kAttrIsolated]) r.isolated = getU8(tb[kAttrIsolated]) != 0;
      r.limits = getLimits(tb);
      return RequestBody{std::move(r)};
    }
    case kCmdPortGet:
    case kCmdStatsGet: {
      std::string name;
      if (dump && tb[kAttrPortName])
        return invalid(std::string("attribute PORT_NAME is not valid in a dump (NLM_F_DUMP): ") +
                       cmdName(cmd) + " of one port is not a dump");
      if (!dump) {
        if (!tb[kAttrPortName])
          return invalid(std::string(cmdName(cmd)) +
                         " needs attribute PORT_NAME, or NLM_F_DUMP for every port");
        name = getStr(tb[kAttrPortName]);
      }
      if (cmd == kCmdPortGet) return RequestBody{PortGetRequest{std::move(name)}};
      return RequestBody{StatsGetRequest{std::move(name)}};
    }
    case kCmdFdbGet: return RequestBody{FdbGetRequest{}};
    case kCmdFdbAdd: {
      FdbAddRequest r;
      if (!tb[kAttrMac]) return missing("MAC", cmd);
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      r.mac = getMac(tb[kAttrMac]);
      r.port = getStr(tb[kAttrPortName]);
      if (tb[kAttrFdbStatic]) r.is_static = getU8(tb[kAttrFdbStatic]) != 0;
      if (tb[kAttrVlanId]) r.vid = getU16(tb[kAttrVlanId]);
      return RequestBody{std::move(r)};
    }
    case kCmdFdbDel: {
      if (!tb[kAttrMac]) return missing("MAC", cmd);
      FdbDelRequest r{getMac(tb[kAttrMac])};
      if (tb[kAttrVlanId]) r.vid = getU16(tb[kAttrVlanId]);
      return RequestBody{std::move(r)};
    }
    case kCmdInfoGet: return RequestBody{InfoGetRequest{}};
    case kCmdCaptureStart: {
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      CaptureStartRequest r;
      r.name = getStr(tb[kAttrPortName]);
      if (tb[kAttrCaptureDir]) r.dir = static_cast<CaptureDir>(getU8(tb[kAttrCaptureDir]));
      if (tb[kAttrCaptureSnaplen]) r.snaplen = getU32(tb[kAttrCaptureSnaplen]);
      if (tb[kAttrCaptureBuffer]) r.buffer = getU32(tb[kAttrCaptureBuffer]);
      return RequestBody{std::move(r)};
    }
    case kCmdCaptureRead:
      if (!tb[kAttrCaptureId]) return missing("CAPTURE_ID", cmd);
      return RequestBody{CaptureReadRequest{getU32(tb[kAttrCaptureId])}};
    case kCmdCaptureStop:
      if (!tb[kAttrCaptureId]) return missing("CAPTURE_ID", cmd);
      return RequestBody{CaptureStopRequest{getU32(tb[kAttrCaptureId])}};
    default: break;
  }
  return Error{EOPNOTSUPP, "unknown command " + std::to_string(cmd)};
}

bool dumpable(Cmd c) { return c == kCmdPortGet || c == kCmdStatsGet || c == kCmdFdbGet; }

MsgHeader readHeader(const uint8_t* p) {
  nlmsghdr h;
  std::memcpy(&h, p, sizeof h);
  return MsgHeader{h.nlmsg_len, h.nlmsg_type, h.nlmsg_flags, h.nlmsg_seq, h.nlmsg_pid};
}

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// Reply objects.
Result<PortInfo> readPortInfo(const Attrs& tb) {
  PortInfo p;
  if (!tb[kAttrPortName]) return invalid("port reply without attribute PORT_NAME");
  p.name = getStr(tb[kAttrPortName]);
  if (auto s = checkPortName(p.name); !s) return s.error();
  if (tb[kAttrPortType]) p.type = static_cast<PortType>(getU8(tb[kAttrPortType]));
  if (tb[kAttrIfindex]) p.ifindex = getU32(tb[kAttrIfindex]);
  if (tb[kAttrQueues]) p.queues = getU32(tb[kAttrQueues]);
  if (tb[kAttrQueuesBound]) p.queues_bound = getU32(tb[kAttrQueuesBound]);
  if (tb[kAttrXdpMode]) p.xdp_mode = static_cast<XdpMode>(getU8(tb[kAttrXdpMode]));
  if (tb[kAttrBindMode]) p.bind_mode = static_cast<BindMode>(getU8(tb[kAttrBindMode]));
  if (tb[kAttrMtu]) p.mtu = getU32(tb[kAttrMtu]);
  if (tb[kAttrLive]) p.live = getU8(tb[kAttrLive]) != 0;
  if (tb[kAttrMac]) p.mac = getMac(tb[kAttrMac]);
  if (tb[kAttrFastRx]) p.fast_rx = getU8(tb[kAttrFastRx]) != 0;
  if (tb[kAttrOwnerUid]) p.owner_uid = getU32(tb[kAttrOwnerUid]);
  if (tb[kAttrPortTag]) p.tag = getStr(tb[kAttrPortTag]);
  if (tb[kAttrHook]) p.hook = static_cast<PortHook>(getU8(tb[kAttrHook]));
  if (tb[kAttrTcAttach]) p.tc_attach = static_cast<TcAttach>(getU8(tb[kAttrTcAttach]));
  if (tb[kAttrHookNote]) p.hook_note = printable(getStr(tb[kAttrHookNote]));
  if (tb[kAttrLinkNote]) p.link_note = printable(getStr(tb[kAttrLinkNote]));
  if (tb[kAttrUplink]) p.uplink = getU8(tb[kAttrUplink]) != 0;
  if (tb[kAttrIsolated]) p.isolated = getU8(tb[kAttrIsolated]) != 0;
  // A daemon that has limits sends all six; one that sends any is taken to
  // have them (a missing one reads as 0), one that sends none to have none.
  if (tb[kAttrStormBcast] || tb[kAttrStormMcast] || tb[kAttrStormUnknown] || tb[kAttrPolicePps] ||
      tb[kAttrPoliceBps] || tb[kAttrPoliceBurst]) {
    Limits& l = p.limits.emplace();
    if (tb[kAttrStormBcast]) l.storm_bcast = getU32(tb[kAttrStormBcast]);
    if (tb[kAttrStormMcast]) l.storm_mcast = getU32(tb[kAttrStormMcast]);
    if (tb[kAttrStormUnknown]) l.storm_unknown = getU32(tb[kAttrStormUnknown]);
    if (tb[kAttrPolicePps]) l.police_pps = getU64(tb[kAttrPolicePps]);
    if (tb[kAttrPoliceBps]) l.police_bps = getU64(tb[kAttrPoliceBps]);
    if (tb[kAttrPoliceBurst]) l.police_burst_ms = getU32(tb[kAttrPoliceBurst]);
    if (tb[kAttrAllowedMac]) l.allowed_mac = getMac(tb[kAttrAllowedMac]);
    if (tb[kAttrAllowedIps]) l.allowed_ips = getAddrs(tb[kAttrAllowedIps]);
    l.ra_guard = tb[kAttrRaGuard] != nullptr;
    l.dhcp_guard = tb[kAttrDhcpGuard] != nullptr;
    if (auto v = getVlan(tb)) l.vlan = *v;
  }
  return p;
}

Result<PortStatsMsg> readPortStats(const Attrs& tb) {
  PortStatsMsg s;
  auto p = readPortInfo(tb);
  if (!p) return p.error();
  s.port = std::move(*p);
  if (tb[kAttrStats]) {
    auto a = parseAttrs(kStatsSpace, nestHead(tb[kAttrStats]), nla_len(tb[kAttrStats]), false, 0,
                        "STATS");
    if (!a) return a.error();
    // Absent (an older daemon): 0.
    for (const vdev::stats::CounterDef& c : vdev::stats::kPortCounters)
      if ((*a)[c.attr]) s.counters[c] = getU64((*a)[c.attr]);
  }
  return s;
}

Result<PoolMsg> readPool(const nlattr* nest) {
  auto a = parseAttrs(kPoolSpace, nestHead(nest), nla_len(nest), false, 0, "POOL");
  if (!a) return a.error();
  PoolMsg p;
  for (const vdev::stats::CounterDef& c : vdev::stats::kPoolCounters)
    if ((*a)[c.attr]) p[c] = getU64((*a)[c.attr]);
  return p;
}

Result<FdbEntryMsg> readFdb(const Attrs& tb) {
  if (!tb[kAttrMac]) return invalid("FDB reply without attribute MAC");
  if (!tb[kAttrPortName]) return invalid("FDB reply without attribute PORT_NAME");
  FdbEntryMsg e;
  e.mac = getMac(tb[kAttrMac]);
  e.port = getStr(tb[kAttrPortName]);
  if (auto s = checkPortName(e.port); !s) return s.error();
  if (tb[kAttrFdbStatic]) e.is_static = getU8(tb[kAttrFdbStatic]) != 0;
  if (tb[kAttrFdbAgeMs]) e.age_ms = getU64(tb[kAttrFdbAgeMs]);
  if (tb[kAttrVlanId]) e.vid = getU16(tb[kAttrVlanId]);  // absent: an older daemon, VLAN 1
  return e;
}

// Each Wire record of a bytes attribute of up to kUidUseMax records
// (absent: none), copied out (the payload has no alignment).
template <class Wire, class Fn>
Status forEachRecord(const nlattr* a, const char* name, Fn fn) {
  if (!a) return {};
  const size_t n = size_t(nla_len(a));
  if (n % sizeof(Wire) || n / sizeof(Wire) > kUidUseMax)
    return invalid(std::string("attribute ") + name + ": payload of " + std::to_string(n) + " bytes, not up to " +
                   std::to_string(kUidUseMax) + " records of " + std::to_string(sizeof(Wire)));
  const auto* p = static_cast<const uint8_t*>(nla_data(a));
  for (size_t k = 0; k < n; k += sizeof(Wire)) {
    Wire r;
    std::memcpy(&r, p + k, sizeof r);
    if (auto st = fn(r); !st) return st;
  }
  return {};
}

Result<InfoMsg> readInfo(const Attrs& tb) {
  if (!tb[kAttrVersion]) return invalid("INFO reply without attribute VERSION");
  InfoMsg i;
  i.version = getStr(tb[kAttrVersion]);
  if (auto s = checkVersion(i.version); !s) return s.error();
  if (tb[kAttrThreads]) i.threads = getU32(tb[kAttrThreads]);
  if (tb[kAttrSwitchMode]) i.mode = static_cast<SwitchMode>(getU8(tb[kAttrSwitchMode]));
  if (tb[kAttrUptime]) i.uptime_s = getU64(tb[kAttrUptime]);
  if (tb[kAttrNumPorts]) i.num_ports = getU32(tb[kAttrNumPorts]);
  if (tb[kAttrFdLimit]) i.fd_limit = getU32(tb[kAttrFdLimit]);
  if (tb[kAttrPortsFdLeft]) i.ports_fd_left = getU32(tb[kAttrPortsFdLeft]);
  if (tb[kAttrPortsPoolLeft]) i.ports_pool_left = getU32(tb[kAttrPortsPoolLeft]);
  if (tb[kAttrPortsMapLeft]) i.ports_map_left = getU32(tb[kAttrPortsMapLeft]);
  if (tb[kAttrStartIssues]) {
    i.start_issues = getStr(tb[kAttrStartIssues]);
    for (char& c : i.start_issues)
      if (c != '\n' && (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)) c = '?';
  }
  if (tb[kAttrTcAttach]) i.tc_attach = static_cast<TcAttach>(getU8(tb[kAttrTcAttach]));
  if (tb[kAttrKernelFeatures]) i.kernel_features = getU64(tb[kAttrKernelFeatures]);
  if (const nlattr* a = tb[kAttrUidCaps]) {
    if (nla_len(a) != int(sizeof(UidCapsWire)))
      return invalid("attribute UID_CAPS: payload of " + std::to_string(nla_len(a)) + " bytes, expected " +
                     std::to_string(sizeof(UidCapsWire)));
    UidCapsWire c;
    std::memcpy(&c, nla_data(a), sizeof c);
    i.uid_caps = InfoMsg::UidCaps{c.ports, c.fdb, c.capture_bytes, c.rate, c.burst};
  }
  if (auto st = forEachRecord<UidUseWire>(tb[kAttrUidUse], "UID_USE", [&](const UidUseWire& r) -> Status {
        i.uid_use.push_back(InfoMsg::UidUse{r.uid, r.ports, r.fdb, r.capture_bytes});
        return {};
      });
      !st)
    return st.error();
  if (auto st = forEachRecord<UidRequestsWire>(tb[kAttrUidRequests], "UID_REQUESTS", [&](const UidRequestsWire& r) -> Status {
        // Beside its UID_USE record (every uid with requests has one).
        auto it = std::find_if(i.uid_use.begin(), i.uid_use.end(), [&](const auto& u) { return u.uid == r.uid; });
        if (it == i.uid_use.end())
          return invalid("attribute UID_REQUESTS: uid " + std::to_string(r.uid) + " has no UID_USE record");
        it->requests = r.taken;
        it->requests_refused = r.refused;
        return {};
      });
      !st)
    return st.error();
  return i;
}

Result<CaptureMsg> readCapture(const Attrs& tb) {
  if (!tb[kAttrCaptureId]) return invalid("capture reply without attribute CAPTURE_ID");
  CaptureMsg c;
  c.id = getU32(tb[kAttrCaptureId]);
  if (tb[kAttrCaptureSnaplen]) c.snaplen = getU32(tb[kAttrCaptureSnaplen]);
  if (const nlattr* f = tb[kAttrCaptureFrames]) {
    const auto* p = static_cast<const uint8_t*>(nla_data(f));
    c.frames.assign(p, p + nla_len(f));
    if (auto r = parseCaptureFrames(c.frames); !r) return r.error();
  }
  if (tb[kAttrCaptureTaken]) c.taken = getU64(tb[kAttrCaptureTaken]);
  if (tb[kAttrCaptureDrops]) c.drops = getU64(tb[kAttrCaptureDrops]);
  c.ended = tb[kAttrCaptureEnded] != nullptr;
  return c;
}

Reply emptyBodyFor(Cmd c) {
  switch (c) {
    case kCmdPortGet: return PortList{};
    case kCmdStatsGet: return StatsReply{};
    case kCmdFdbGet: return FdbList{};
    case kCmdInfoGet: return InfoMsg{};
    case kCmdCaptureStart:
    case kCmdCaptureRead:
    case kCmdCaptureStop: return CaptureMsg{};
    default: return Ack{};
  }
}

// The extack message after an NLMSG_ERROR / NLMSG_DONE payload.
Result<std::string> readExtack(const uint8_t* tlv, size_t len) {
  if (len > INT_MAX) return invalid("oversized extack");
  auto a = parseAttrs(kErrSpace, reinterpret_cast<const nlattr*>(tlv), static_cast<int>(len), false,
                      0, "NLMSG_ERROR");
  if (!a) return a.error();
  if (!(*a)[NLMSGERR_ATTR_MSG]) return std::string();
  std::string s = getStr((*a)[NLMSGERR_ATTR_MSG]);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return s;
}

}  // namespace

// --------------------------------------------------------------- capture

void appendCaptureRecord(std::vector<uint8_t>& out, uint64_t time_ns, uint32_t wire_len, CaptureDir dir,
                         std::span<const uint8_t> kept) {
  CaptureRecordHeader h{time_ns, wire_len, static_cast<uint16_t>(kept.size()), static_cast<uint8_t>(dir), 0};
  const size_t at = out.size();
  out.resize(at + sizeof h + ((kept.size() + 3) & ~size_t{3}), 0);
  std::memcpy(out.data() + at, &h, sizeof h);
  if (!kept.empty()) std::memcpy(out.data() + at + sizeof h, kept.data(), kept.size());
}

Result<std::vector<CapturedFrame>> parseCaptureFrames(std::span<const uint8_t> frames) {
  std::vector<CapturedFrame> out;
  size_t at = 0;
  while (at < frames.size()) {
    const std::string which = "CAPTURE_FRAMES: record " + std::to_string(out.size() + 1);
    CaptureRecordHeader h;
    if (frames.size() - at < sizeof h) return invalid(which + ": truncated header");
    std::memcpy(&h, frames.data() + at, sizeof h);
    at += sizeof h;
    if (h.kept > h.wire_len) return invalid(which + ": keeps " + std::to_string(h.kept) + " bytes of " +
                                            std::to_string(h.wire_len));
    if (h.dir != uint8_t(CaptureDir::kRx) && h.dir != uint8_t(CaptureDir::kTx))
      return invalid(which + ": direction " + std::to_string(h.dir));
    const size_t padded = (size_t{h.kept} + 3) & ~size_t{3};
    if (frames.size() - at < h.kept) return invalid(which + ": truncated frame");
    out.push_back({h.time_ns, h.wire_len, static_cast<CaptureDir>(h.dir), frames.subspan(at, h.kept)});
    at += std::min(padded, frames.size() - at);
  }
  return out;
}

// --------------------------------------------------------------- encode

Result<std::vector<uint8_t>> encodeRequest(uint32_t seq, const RequestBody& body) {
  if (auto s = validate(body); !s) return s.error();
  const Cmd cmd = cmdOf(body);
  uint16_t flags = NLM_F_REQUEST;
  if (isDump(body)) flags |= NLM_F_DUMP;
  if (isAction(cmd)) flags |= NLM_F_ACK;
  auto msg = buildGenl(0, seq, flags, cmd,
                       [&](Writer& w) { std::visit([&](const auto& b) { putBody(w, b); }, body); });
  if (!msg) return msg.error();
  if (msg->size() > kMaxMessageSize) return Error{EMSGSIZE, "request too large"};
  return msg;
}

std::vector<uint8_t> encodeAck(const MsgHeader& orig) { return buildErrorMsg(orig, 0, {}); }

std::vector<uint8_t> encodeError(const MsgHeader& orig, int err, std::string_view msg) {
  if (err < 0) err = -err;
  if (err == 0 || err > 4095) err = EIO;
  return buildErrorMsg(orig, err, msg);
}

Result<std::vector<std::vector<uint8_t>>> encodeReply(const Request& req, const Reply& reply) {
  const Cmd cmd = cmdOf(req.body);
  const bool dump = isDump(req.body);
  using Out = Result<std::vector<std::vector<uint8_t>>>;
  struct Visitor {
    const Request& req;
    Cmd cmd;
    bool dump;
    static Out one(std::vector<uint8_t> m) {
      if (m.empty()) return Error{ENOMEM, "encode reply"};
      return std::vector<std::vector<uint8_t>>{std::move(m)};
    }
    Out operator()(const Ack&) const {
      if (!isAction(cmd)) return handlerBug("ACK", cmd);
      return one(encodeAck(req.hdr));
    }
    Out operator()(const ErrorReply& e) const { return one(encodeError(req.hdr, e.err, e.msg)); }
    Out operator()(const PortList& l) const {
      if (cmd != kCmdPortGet) return handlerBug("a port list", cmd);
      if (!dump && l.ports.size() != 1) return handlerBug("not exactly one port", cmd);
      for (const auto& p : l.ports)
        if (auto s = checkPortName(p.name); !s)
          return Error{EIO, "invalid reply: " + s.error().what};
      return encodeObjects(req, dump, l.ports, putPortInfo, nullptr);
    }
    Out operator()(const StatsReply& r) const {
      if (cmd != kCmdStatsGet) return handlerBug("statistics", cmd);
      if (!dump && r.ports.size() != 1) return handlerBug("not exactly one port", cmd);
      for (const auto& p : r.ports)
        if (auto s = checkPortName(p.port.name); !s)
          return Error{EIO, "invalid reply: " + s.error().what};
      return encodeObjects(req, dump, r.ports, putPortStats, &r);
    }
    Out operator()(const FdbList& l) const {
      if (cmd != kCmdFdbGet) return handlerBug("an FDB list", cmd);
      for (const auto& e : l.entries)
        if (auto s = checkPortName(e.port); !s)
          return Error{EIO, "invalid reply: " + s.error().what};
      return encodeObjects(req, true, l.entries, putFdb, nullptr);
    }
    Out operator()(const InfoMsg& i) const {
      if (cmd != kCmdInfoGet) return handlerBug("INFO", cmd);
      if (auto s = checkVersion(i.version); !s)
        return Error{EIO, "invalid reply: " + s.error().what};
      std::vector<InfoMsg> v{i};
      return encodeObjects(req, false, v, putInfo, nullptr);
    }
    Out operator()(const CaptureMsg& c) const {
      if (cmd != kCmdCaptureStart && cmd != kCmdCaptureRead && cmd != kCmdCaptureStop)
        return handlerBug("a capture", cmd);
      std::vector<CaptureMsg> v{c};
      return encodeObjects(req, false, v, putCapture, nullptr);
    }
  };
  return std::visit(Visitor{req, cmd, dump}, reply);
}

// --------------------------------------------------------------- decode

MsgHeader peekHeader(std::span<const uint8_t> dg) {
  if (dg.size() < NLMSG_HDRLEN) return {};
  return readHeader(dg.data());
}

Result<MsgHeader> decodeHeader(std::span<const uint8_t> dg) {
  if (dg.size() < NLMSG_HDRLEN)
    return invalid("truncated message: " + std::to_string(dg.size()) +
                   " bytes, a netlink header needs " + std::to_string(NLMSG_HDRLEN));
  if (dg.size() > kMaxMessageSize)
    return Error{EMSGSIZE, "message of " + std::to_string(dg.size()) + " bytes exceeds the " +
                               std::to_string(kMaxMessageSize) + "-byte limit"};
  MsgHeader h = readHeader(dg.data());
  if (h.len < NLMSG_HDRLEN)
    return invalid("length field " + std::to_string(h.len) + " is smaller than the header");
  if (h.len > dg.size())
    return invalid("length field " + std::to_string(h.len) + " exceeds the " +
                   std::to_string(dg.size()) + " bytes received (truncated message)");
  if (dg.size() > NLMSG_ALIGN(h.len))
    return invalid(std::to_string(dg.size() - NLMSG_ALIGN(h.len)) +
                   " bytes after the message: one request per datagram");
  if (h.type != kFamilyId)
    return invalid("message type " + hex(h.type) + " is not the vdev family " + hex(kFamilyId));
  if (!(h.flags & NLM_F_REQUEST)) return invalid("NLM_F_REQUEST not set");
  return h;
}

Result<Request> decodeRequest(std::span<const uint8_t> dg) {
  auto hr = decodeHeader(dg);
  if (!hr) return hr.error();
  const MsgHeader h = *hr;
  constexpr uint16_t kKnownFlags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_ROOT | NLM_F_MATCH;
  if (h.flags & ~kKnownFlags) return invalid("unsupported flags " + hex(h.flags & ~kKnownFlags));
  const uint16_t dumpBits = h.flags & NLM_F_DUMP;
  if (dumpBits != 0 && dumpBits != NLM_F_DUMP)
    return invalid("NLM_F_ROOT and NLM_F_MATCH must be set together (NLM_F_DUMP)");
  const bool dump = dumpBits == NLM_F_DUMP;

  Aligned buf(dg);
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
  const int payload = static_cast<int>(h.len - NLMSG_HDRLEN);
  if (payload < kGenlHdrLen)
    return invalid("truncated generic netlink header: " + std::to_string(payload) +
                   " bytes, needs " + std::to_string(kGenlHdrLen));
  const auto* g = static_cast<const genlmsghdr*>(nlmsg_data(nlh));
  if (g->version == 0 || g->version > kProtocolVersion)
    return Error{EPROTONOSUPPORT, "protocol version " + std::to_string(g->version) +
                                      " not supported (vdevd speaks 1.." +
                                      std::to_string(kProtocolVersion) + ")"};
  if (g->reserved != 0) return invalid("generic netlink header: reserved field is not zero");
  if (g->cmd == kCmdUnspec || g->cmd > kCmdMax)
    return Error{EOPNOTSUPP, "unknown command " + std::to_string(g->cmd)};
  const Cmd cmd = static_cast<Cmd>(g->cmd);
  if (dump && !dumpable(cmd))
    return Error{EOPNOTSUPP, std::string(cmdName(cmd)) + " cannot be dumped (NLM_F_DUMP)"};
  if (!dump && cmd == kCmdFdbGet)
    return Error{EOPNOTSUPP, "FDB_GET is a dump only: set NLM_F_DUMP"};

  auto attrs = parseAttrs(kTop, genlmsg_attrdata(g, 0), payload - kGenlHdrLen, true,
                          allowedFor(cmd), cmdName(cmd));
  if (!attrs) return attrs.error();
  auto body = decodeBody(cmd, dump, *attrs);
  if (!body) return body.error();
  if (auto s = validate(*body); !s) return s.error();
  return Request{h, g->version, std::move(*body)};
}

// ---------------------------------------------------- reply assembling

ReplyAssembler::ReplyAssembler(const Expect& expect)
    : expect_(expect), body_(emptyBodyFor(expect.cmd)) {}

Status ReplyAssembler::feed(std::span<const uint8_t> dg) {
  if (failed_) return *failed_;
  auto fail = [&](Error e) -> Status {
    failed_ = e;
    return e;
  };
  if (done_) return fail(Error{EPROTO, "data after the end of the reply"});
  if (dg.size() > INT_MAX) return fail(Error{EMSGSIZE, "oversized datagram"});
  if (dg.empty()) return fail(invalid("empty datagram"));
  Aligned buf(dg);
  int rem = static_cast<int>(buf.size());
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
  while (rem > 0) {
    if (done_) return fail(Error{EPROTO, "trailing messages after the end of the reply"});
    if (!nlmsg_ok(nlh, rem)) {
      if (rem < static_cast<int>(NLMSG_HDRLEN))
        return fail(invalid("truncated netlink header: " + std::to_string(rem) + " bytes"));
      return fail(invalid("netlink length field " + std::to_string(nlh->nlmsg_len) +
                          " does not fit the " + std::to_string(rem) + " bytes left"));
    }
    if (auto s = feedOne(nlh); !s) return fail(s.error());
    // nlmsg_next(); the last message may omit its padding.
    int total = static_cast<int>(NLMSG_ALIGN(nlh->nlmsg_len));
    if (total > rem) total = rem;
    rem -= total;
    nlh = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const uint8_t*>(nlh) + total);
  }
  return {};
}

Status ReplyAssembler::feedOne(const nlmsghdr* nlh) {
  const uint32_t seq = nlh->nlmsg_seq;
  const bool first = !started_ && !done_;
  if (!expect_.seq) {
    expect_.seq = seq;
  } else if (seq != *expect_.seq) {
    // seq 0: a connection-level error sent before any request was read.
    if (!(nlh->nlmsg_type == NLMSG_ERROR && seq == 0 && first))
      return Error{EPROTO, "reply seq " + std::to_string(seq) + " does not match request seq " +
                               std::to_string(*expect_.seq)};
  }
  const size_t plen = nlh->nlmsg_len - NLMSG_HDRLEN;
  const auto* payload = static_cast<const uint8_t*>(nlmsg_data(nlh));
  switch (nlh->nlmsg_type) {
    case NLMSG_NOOP: return {};
    case NLMSG_ERROR: {
      if (plen < sizeof(nlmsgerr))
        return invalid("truncated NLMSG_ERROR: " + std::to_string(plen) + " bytes");
      nlmsgerr e;
      std::memcpy(&e, payload, sizeof e);
      if (e.error > 0 || e.error < -4095)
        return invalid("NLMSG_ERROR with invalid error " + std::to_string(e.error));
      std::string msg;
      if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
        // TLVs follow the echoed request: its header only when capped.
        uint64_t off = sizeof(nlmsgerr);
        if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
          off = sizeof(int) + ((uint64_t{e.msg.nlmsg_len} + 3) & ~uint64_t{3});
        if (off > plen) return invalid("NLMSG_ERROR: echoed request exceeds the message");
        auto m = readExtack(payload + off, plen - off);
        if (!m) return m.error();
        msg = std::move(*m);
      }
      if (e.error == 0) {
        if (!isAction(expect_.cmd))
          return Error{EPROTO, std::string("unexpected ACK to ") + cmdName(expect_.cmd)};
        if (started_) return Error{EPROTO, "ACK inside a dump"};
        body_ = Ack{};
      } else {
        body_ = ErrorReply{-e.error, std::move(msg)};
      }
      done_ = true;
      return {};
    }
    case NLMSG_DONE: {
      // (A dump's data messages all carry NLM_F_MULTI: dataMsg() checks.)
      if (!expect_.dump) return Error{EPROTO, "NLMSG_DONE answering a request that is no dump"};
      if (plen >= sizeof(int)) {
        int err;
        std::memcpy(&err, payload, sizeof err);
        if (err > 0 || err < -4095)
          return invalid("NLMSG_DONE with invalid error " + std::to_string(err));
        if (err < 0) {
          std::string msg;
          if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
            auto m = readExtack(payload + sizeof(int), plen - sizeof(int));
            if (!m) return m.error();
            msg = std::move(*m);
          }
          body_ = ErrorReply{-err, std::move(msg)};
        }
      } else if (plen != 0) {
        return invalid("truncated NLMSG_DONE");
      }
      done_ = true;
      return {};
    }
    case kFamilyId: return dataMsg(nlh);
    default: return invalid("unexpected message type " + hex(nlh->nlmsg_type));
  }
}

Status ReplyAssembler::dataMsg(const nlmsghdr* nlh) {
  const bool multi = nlh->nlmsg_flags & NLM_F_MULTI;
  if (isAction(expect_.cmd))
    return Error{EPROTO, std::string("unexpected data answering ") + cmdName(expect_.cmd)};
  if (multi != expect_.dump)
    return Error{EPROTO, multi ? "NLM_F_MULTI answering a request that is no dump"
                               : "dump answered without NLM_F_MULTI"};
  const int payload = static_cast<int>(nlh->nlmsg_len - NLMSG_HDRLEN);
  if (payload < kGenlHdrLen) return invalid("truncated generic netlink header");
  const auto* g = static_cast<const genlmsghdr*>(nlmsg_data(nlh));
  if (g->version == 0) return invalid("reply with protocol version 0");
  if (g->cmd != expect_.cmd)
    return Error{EPROTO, std::string("reply command ") + cmdName(g->cmd) + " answering " +
                             cmdName(expect_.cmd)};
  started_ = true;
  auto attrs =
      parseAttrs(kTop, genlmsg_attrdata(g, 0), payload - kGenlHdrLen, false, 0, cmdName(g->cmd));
  if (!attrs) return attrs.error();
  const Attrs& tb = *attrs;
  switch (expect_.cmd) {
    case kCmdPortGet: {
      auto p = readPortInfo(tb);
      if (!p) return p.error();
      std::get<PortList>(body_).ports.push_back(std::move(*p));
      break;
    }
    case kCmdStatsGet: {
      auto& r = std::get<StatsReply>(body_);
      bool any = false;
      if (tb[kAttrPool]) {
        if (pool_seen_) return invalid("attribute POOL sent twice in one reply");
        pool_seen_ = any = true;
        auto p = readPool(tb[kAttrPool]);
        if (!p) return p.error();
        r.pool = *p;
      }
      if (tb[kAttrFdbEntries]) {
        if (fdb_entries_seen_) return invalid("attribute FDB_ENTRIES sent twice in one reply");
        fdb_entries_seen_ = any = true;
        r.fdb_entries = getU64(tb[kAttrFdbEntries]);
      }
      if (tb[kAttrPortName] || !multi) {
        auto s = readPortStats(tb);
        if (!s) return s.error();
        r.ports.push_back(std::move(*s));
        any = true;
      }
      if (!any) return invalid("STATS_GET reply message with neither PORT_NAME nor POOL");
      break;
    }
    case kCmdFdbGet: {
      auto e = readFdb(tb);
      if (!e) return e.error();
      std::get<FdbList>(body_).entries.push_back(std::move(*e));
      break;
    }
    case kCmdInfoGet: {
      auto i = readInfo(tb);
      if (!i) return i.error();
      body_ = std::move(*i);
      break;
    }
    case kCmdCaptureStart:
    case kCmdCaptureRead:
    case kCmdCaptureStop: {
      auto c = readCapture(tb);
      if (!c) return c.error();
      body_ = std::move(*c);
      break;
    }
    default: return Error{EPROTO, "unexpected data"};
  }
  if (!multi) done_ = true;
  return {};
}

Result<Reply> ReplyAssembler::finish() {
  if (failed_) return *failed_;
  if (!done_) return Error{EPROTO, "incomplete reply"};
  return body_;
}

Result<Reply> decodeReply(std::span<const uint8_t> bytes, const Expect& expect) {
  ReplyAssembler a(expect);
  if (auto s = a.feed(bytes); !s) return s.error();
  return a.finish();
}

}  // namespace vdev::proto
