// Semantic validation of requests (shared by the client, before sending, and
// the daemon, after decoding) and the name tables of the protocol.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "proto/codec.h"

namespace vdev::proto {

namespace {

Error invalid(std::string msg) { return Error{EINVAL, std::move(msg)}; }

std::string quoted(std::string_view s) {
  // For messages: the value as text, non-printable bytes as '?', cut at 64.
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > 64) out += "...";
  return out + "\"";
}

Status checkRange(uint64_t v, uint64_t lo, uint64_t hi, std::string_view attr) {
  if (v < lo || v > hi)
    return invalid("attribute " + std::string(attr) + ": " + std::to_string(v) + " out of range " +
                   std::to_string(lo) + ".." + std::to_string(hi));
  return {};
}

// printable ASCII; `space` allows ' '.
bool printable(std::string_view s, bool space) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c > 0x7e || c < 0x20 || (c == ' ' && !space)) return false;
  }
  return true;
}

Status validateNetnsName(std::string_view s) {
  const std::string attr = "attribute CREATE.PEER_NETNS_NAME: ";
  if (s.empty() || s.size() > kNetnsNameMax)
    return invalid(attr + "length " + std::to_string(s.size()) + ", expected 1.." +
                   std::to_string(kNetnsNameMax) + " characters");
  if (!printable(s, false)) return invalid(attr + quoted(s) + " has non-printable characters");
  if (s.find('/') != std::string_view::npos || s == "." || s == "..")
    return invalid(attr + quoted(s) + " is not a name under /run/netns");
  return {};
}

Status validateNetnsPath(std::string_view s) {
  const std::string attr = "attribute CREATE.PEER_NETNS_PATH: ";
  if (s.size() < 2 || s.size() > kNetnsPathMax)
    return invalid(attr + "length " + std::to_string(s.size()) + ", expected 2.." +
                   std::to_string(kNetnsPathMax) + " characters");
  if (!printable(s, true)) return invalid(attr + quoted(s) + " has non-printable characters");
  if (s[0] != '/') return invalid(attr + quoted(s) + " is not an absolute path");
  // No ".." component: the path names a netns file, it does not walk around.
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('/', pos);
    if (end == std::string_view::npos) end = s.size();
    if (s.substr(pos, end - pos) == "..")
      return invalid(attr + quoted(s) + " has a \"..\" component");
    pos = end + 1;
  }
  return {};
}

Status validateName(const std::string& name, std::string_view attr) {
  return validateIfname(name, attr);
}

Status validateCreate(const PortAddRequest& r) {
  const CreateOptions& c = *r.create;
  if (r.type == PortType::kNetdev)
    return invalid(
        "attribute CREATE is not valid for PORT_TYPE netdev (it attaches an existing "
        "device)");
  // A netkit pair takes what a veth takes: a peer, its namespace and MAC.
  const bool veth = r.type == PortType::kVeth || r.type == PortType::kNetkit;
  const char* tname = veth ? portTypeName(r.type) : "tap";
  auto notFor = [&](const char* a) {
    return invalid(std::string("attribute CREATE.") + a + " is not valid for a " + tname);
  };
  if (veth) {
    if (c.owner_uid) return notFor("OWNER_UID");
    if (c.group_gid) return notFor("GROUP_GID");
    if (c.multi_queue) return notFor("MULTI_QUEUE");
    if (c.mac) return notFor("MAC");
  } else {
    if (c.peer_netns_name) return notFor("PEER_NETNS_NAME");
    if (c.peer_netns_path) return notFor("PEER_NETNS_PATH");
    if (c.peer_netns_pid) return notFor("PEER_NETNS_PID");
    if (c.peer_ifname) return notFor("PEER_IFNAME");
    if (c.peer_mac) return notFor("PEER_MAC");
  }
  const char* ns[3];
  int nns = 0;
  if (c.peer_netns_name) ns[nns++] = "PEER_NETNS_NAME";
  if (c.peer_netns_path) ns[nns++] = "PEER_NETNS_PATH";
  if (c.peer_netns_pid) ns[nns++] = "PEER_NETNS_PID";
  if (nns > 1)
    return invalid(std::string("attributes CREATE.") + ns[0] + " and CREATE." + ns[1] +
                   " are mutually exclusive");
  if (c.peer_netns_name)
    if (auto s = validateNetnsName(*c.peer_netns_name); !s) return s;
  if (c.peer_netns_path)
    if (auto s = validateNetnsPath(*c.peer_netns_path); !s) return s;
  if (c.peer_netns_pid)
    if (auto s = checkRange(*c.peer_netns_pid, 1, kMaxPid, "CREATE.PEER_NETNS_PID"); !s) return s;
  if (c.peer_ifname) {
    if (auto s = validateIfname(*c.peer_ifname, "CREATE.PEER_IFNAME"); !s) return s;
    if (nns == 0 && *c.peer_ifname == r.name)
      return invalid("attribute CREATE.PEER_IFNAME: " + quoted(*c.peer_ifname) +
                     " equals PORT_NAME in the same namespace");
  }
  if (c.peer_mac)
    if (auto s = validateUnicastMac(*c.peer_mac, "CREATE.PEER_MAC"); !s) return s;
  if (c.mac)
    if (auto s = validateUnicastMac(*c.mac, "CREATE.MAC"); !s) return s;
  if (c.mtu)
    if (auto s = checkRange(*c.mtu, kMinMtu, kMaxMtu, "CREATE.MTU"); !s) return s;
  if (c.owner_uid && *c.owner_uid == UINT32_MAX)
    return invalid("attribute CREATE.OWNER_UID: 4294967295 ((uid_t)-1) is not a uid");
  if (c.group_gid && *c.group_gid == UINT32_MAX)
    return invalid("attribute CREATE.GROUP_GID: 4294967295 ((gid_t)-1) is not a gid");
  if (!veth && r.queues && *r.queues > 1 && !c.multi_queue.value_or(false))
    return invalid("attribute QUEUES: " + std::to_string(*r.queues) +
                   " queues need CREATE.MULTI_QUEUE for a tap");
  return {};
}

// Every rate may be anything (0: no limit). A burst of 0 is refused: the
// datapath reads 0 as its default, so it would quietly become something
// other than what was asked.
Status validateLimits(const LimitOptions& l) {
  if (l.police_burst_ms && *l.police_burst_ms == 0)
    return invalid("attribute POLICE_BURST: 0 ms is no burst (at least 1; leave it out for vdevd's default)");
  if (l.allowed_mac && *l.allowed_mac != Mac{})  // all zeros: any source
    if (auto s = validateUnicastMac(*l.allowed_mac, "ALLOWED_MAC"); !s) return s;
  if (l.allowed_ips)
    if (auto s = validateAllowedIps(*l.allowed_ips, "ALLOWED_IPS"); !s) return s;
  if (l.vlan)
    if (const std::string why = vlanConfigError(*l.vlan); !why.empty())
      return invalid("attributes VLAN_PVID, VLAN_TAGGED, VLAN_UNTAGGED: " + why);
  return {};
}

Status validateVid(uint16_t vid) {
  if (vid < 1 || vid > kVidMax)
    return invalid("attribute VLAN_ID: " + std::to_string(vid) + ", expected 1 to " + std::to_string(kVidMax));
  return {};
}

Status validateBody(const PortAddRequest& r) {
  if (auto s = validateName(r.name, "PORT_NAME"); !s) return s;
  if (r.type != PortType::kTap && r.type != PortType::kVeth && r.type != PortType::kNetdev &&
      r.type != PortType::kNetkit)
    return invalid("attribute PORT_TYPE: " + std::to_string(static_cast<unsigned>(r.type)) +
                   " is not tap(1), veth(2), netdev(3) or netkit(5)");
  if (r.type == PortType::kNetkit && !r.create)
    return invalid("PORT_TYPE netkit needs CREATE: vdevd makes the pair (an existing device is type netdev)");
  if (r.queues)
    if (auto s = checkRange(*r.queues, kMinQueues, kMaxQueues, "QUEUES"); !s) return s;
  if (r.xdp_mode != XdpMode::kNative && r.xdp_mode != XdpMode::kGeneric &&
      r.xdp_mode != XdpMode::kAuto)
    return invalid("attribute XDP_MODE: " + std::to_string(static_cast<unsigned>(r.xdp_mode)) +
                   " is not native(1), generic(2) or auto(3)");
  if (r.tag)
    if (auto s = validatePortTag(*r.tag); !s) return s;
  if (r.hook && *r.hook != PortHook::kXdp && *r.hook != PortHook::kTc)
    return invalid("attribute HOOK: " + std::to_string(static_cast<unsigned>(*r.hook)) +
                   " is not xdp(1) or tc(2)");
  if (auto s = validateLimits(r.limits); !s) return s;
  if (r.create) return validateCreate(r);
  return {};
}
Status validateBody(const PortDelRequest& r) { return validateName(r.name, "PORT_NAME"); }
Status validateBody(const PortGetRequest& r) {
  return r.name.empty() ? Status{} : validateName(r.name, "PORT_NAME");
}
Status validateBody(const StatsGetRequest& r) {
  return r.name.empty() ? Status{} : validateName(r.name, "PORT_NAME");
}
Status validateBody(const FdbGetRequest&) { return {}; }
Status validateBody(const FdbAddRequest& r) {
  if (auto s = validateUnicastMac(r.mac, "MAC"); !s) return s;
  // Learned entries are the switch's own, made and aged by traffic; a
  // "dynamic" entry added by hand would be one the next frame from the MAC
  // silently moves or ages out. Refused rather than quietly made static.
  if (!r.is_static)
    return invalid("attribute FDB_STATIC: 0 is not supported (FDB_ADD adds static entries; "
                   "learned entries come from traffic only)");
  if (auto s = validateVid(r.vid); !s) return s;
  return validateName(r.port, "PORT_NAME");
}
Status validateBody(const FdbDelRequest& r) {
  if (auto s = validateVid(r.vid); !s) return s;
  return validateUnicastMac(r.mac, "MAC");
}
Status validateBody(const InfoGetRequest&) { return {}; }
Status validateBody(const PortSetRequest& r) {
  if (auto s = validateName(r.name, "PORT_NAME"); !s) return s;
  if (!r.isolated && r.limits == LimitOptions{})
    return invalid("PORT_SET of " + r.name +
                   " changes nothing: give ISOLATED, ALLOWED_MAC, ALLOWED_IPS, RA_GUARD, DHCP_GUARD, a VLAN_* or a "
                   "STORM_* or POLICE_* attribute");
  return validateLimits(r.limits);
}

Status validateCaptureFilter(const CaptureFilter& f) {
  if (f.empty()) return invalid("attribute CAPTURE_FILTER: empty (give at least one field, or leave it out)");
  if (f.vlan && (*f.vlan < 1 || *f.vlan > kVidMax))
    return invalid("attribute CAPTURE_FILTER.VLAN: " + std::to_string(*f.vlan) + ", expected 1.." +
                   std::to_string(kVidMax));
  if (f.ethertype && *f.ethertype < 0x0600)
    return invalid("attribute CAPTURE_FILTER.ETHERTYPE: " + std::to_string(*f.ethertype) +
                   ", expected an EtherType (0x0600 or above; below is an 802.3 length)");
  if (f.ip && *f.ip == IpAddr{})
    return invalid("attribute CAPTURE_FILTER.IP: the unspecified address (::) is no frame's");
  if (f.port && f.proto && *f.proto != 6 && *f.proto != 17)
    return invalid("attribute CAPTURE_FILTER.PORT with PROTO " + std::to_string(*f.proto) +
                   ": ports are TCP's (6) and UDP's (17)");
  if ((f.ip || f.proto || f.port) && f.ethertype && *f.ethertype != 0x0800 && *f.ethertype != 0x86dd)
    return invalid("attribute CAPTURE_FILTER.ETHERTYPE " + std::to_string(*f.ethertype) +
                   " with IP, PROTO or PORT: those are in IPv4 (0x0800) and IPv6 (0x86dd) frames");
  return {};
}

Status validateBody(const CaptureStartRequest& r) {
  if (auto s = validateName(r.name, "PORT_NAME"); !s) return s;
  if (r.dir != CaptureDir::kRx && r.dir != CaptureDir::kTx && r.dir != CaptureDir::kBoth)
    return invalid("attribute CAPTURE_DIR: " + std::to_string(unsigned(r.dir)) + ", expected 1 (rx), 2 (tx) or 3 (both)");
  if (r.snaplen && (*r.snaplen < kCaptureSnaplenMin || *r.snaplen > kCaptureSnaplenMax))
    return invalid("attribute CAPTURE_SNAPLEN: " + std::to_string(*r.snaplen) + ", expected " +
                   std::to_string(kCaptureSnaplenMin) + ".." + std::to_string(kCaptureSnaplenMax));
  if (r.buffer && (*r.buffer < kCaptureBufferMin || *r.buffer > kCaptureBufferMax))
    return invalid("attribute CAPTURE_BUFFER: " + std::to_string(*r.buffer) + " frames, expected " +
                   std::to_string(kCaptureBufferMin) + ".." + std::to_string(kCaptureBufferMax));
  if (r.filter) return validateCaptureFilter(*r.filter);
  return {};
}
Status validateCaptureId(uint32_t id) {
  if (id == 0) return invalid("attribute CAPTURE_ID: 0 is no capture (ids start at 1)");
  return {};
}
Status validateBody(const CaptureReadRequest& r) { return validateCaptureId(r.id); }
Status validateBody(const CaptureStopRequest& r) { return validateCaptureId(r.id); }

}  // namespace

Status validate(const RequestBody& body) {
  return std::visit([](const auto& b) { return validateBody(b); }, body);
}

Status validateIfname(std::string_view name, std::string_view attr) {
  // The kernel's dev_valid_name(), restricted to printable ASCII.
  const std::string a = "attribute " + std::string(attr) + ": ";
  if (name.empty()) return invalid(a + "empty interface name");
  if (name.size() > kIfNameMax)
    return invalid(a + quoted(name) + " is " + std::to_string(name.size()) +
                   " characters, at most " + std::to_string(kIfNameMax));
  if (!printable(name, false))
    return invalid(a + quoted(name) + " has non-printable characters or spaces");
  if (name == "." || name == "..")
    return invalid(a + quoted(name) + " is not a valid interface name");
  // '%': the kernel takes "vd%d" as a pattern and names the device vd0.
  if (name.find_first_of("/:%") != std::string_view::npos)
    return invalid(a + quoted(name) + " is not a valid interface name (no '/', ':' or '%')");
  return {};
}

Status validatePortTag(std::string_view tag) {
  if (tag.empty() || tag.size() > kPortTagMax)
    return invalid("attribute PORT_TAG: length " + std::to_string(tag.size()) + ", expected 1.." +
                   std::to_string(kPortTagMax) + " characters");
  // No spaces: the state file keeps it as one key=value word.
  if (!printable(tag, false)) return invalid("attribute PORT_TAG: " + quoted(tag) + " has spaces or non-printable characters");
  return {};
}

Status validateAllowedIps(const std::vector<IpAddr>& ips, std::string_view attr) {
  const std::string a = "attribute " + std::string(attr) + ": ";
  size_t v4 = 0, v6 = 0;
  for (const IpAddr& ip : ips) {
    const bool is4 = ipIsV4(ip);
    (is4 ? v4 : v6)++;
    const bool unspecified = is4 ? (ip[12] | ip[13] | ip[14] | ip[15]) == 0 : ip == IpAddr{};
    const bool multicast = is4 ? ip[12] >= 224 : ip[0] == 0xff;  // IPv4: class E and broadcast too
    if (unspecified || multicast)
      return invalid(a + formatIp(ip) + " is not an address a port sends from (unspecified, multicast or reserved)");
    if (std::count(ips.begin(), ips.end(), ip) > 1) return invalid(a + formatIp(ip) + " appears more than once");
  }
  if (v4 > kMaxAllowedIps || v6 > kMaxAllowedIps)
    return invalid(a + std::to_string(v4) + " IPv4 and " + std::to_string(v6) + " IPv6 addresses, at most " +
                   std::to_string(kMaxAllowedIps) + " of each");
  return {};
}

Status validateUnicastMac(const Mac& mac, std::string_view attr) {
  if (mac[0] & 1)
    return invalid("attribute " + std::string(attr) + ": " + formatMac(mac) +
                   " is a multicast address");
  if (mac == Mac{})
    return invalid("attribute " + std::string(attr) + ": 00:00:00:00:00:00 is not an address");
  return {};
}

Cmd cmdOf(const RequestBody& body) {
  static constexpr Cmd kByIndex[] = {kCmdPortAdd, kCmdPortDel, kCmdPortGet, kCmdStatsGet,
                                     kCmdFdbGet,  kCmdFdbAdd,  kCmdFdbDel,  kCmdInfoGet,
                                     kCmdPortSet, kCmdCaptureStart, kCmdCaptureRead, kCmdCaptureStop};
  static_assert(std::size(kByIndex) == std::variant_size_v<RequestBody>);
  return kByIndex[body.index()];
}

bool isDump(const RequestBody& body) {
  if (auto* g = std::get_if<PortGetRequest>(&body)) return g->name.empty();
  if (auto* s = std::get_if<StatsGetRequest>(&body)) return s->name.empty();
  return std::holds_alternative<FdbGetRequest>(body);
}

// ------------------------------------------------------------------ names

const char* cmdName(uint8_t cmd) {
  switch (cmd) {
    case kCmdPortAdd: return "PORT_ADD";
    case kCmdPortDel: return "PORT_DEL";
    case kCmdPortGet: return "PORT_GET";
    case kCmdStatsGet: return "STATS_GET";
    case kCmdFdbGet: return "FDB_GET";
    case kCmdFdbAdd: return "FDB_ADD";
    case kCmdFdbDel: return "FDB_DEL";
    case kCmdInfoGet: return "INFO_GET";
    case kCmdPortSet: return "PORT_SET";
    case kCmdCaptureStart: return "CAPTURE_START";
    case kCmdCaptureRead: return "CAPTURE_READ";
    case kCmdCaptureStop: return "CAPTURE_STOP";
    default: return "UNKNOWN";
  }
}

const char* attrName(uint16_t attr) {
  switch (attr) {
    case kAttrPortName: return "PORT_NAME";
    case kAttrPortType: return "PORT_TYPE";
    case kAttrQueues: return "QUEUES";
    case kAttrXdpMode: return "XDP_MODE";
    case kAttrCreate: return "CREATE";
    case kAttrIfindex: return "IFINDEX";
    case kAttrMtu: return "MTU";
    case kAttrLive: return "LIVE";
    case kAttrBindMode: return "BIND_MODE";
    case kAttrMac: return "MAC";
    case kAttrFdbStatic: return "FDB_STATIC";
    case kAttrFdbAgeMs: return "FDB_AGE_MS";
    case kAttrStats: return "STATS";
    case kAttrPool: return "POOL";
    case kAttrFdbEntries: return "FDB_ENTRIES";
    case kAttrVersion: return "VERSION";
    case kAttrThreads: return "THREADS";
    case kAttrSwitchMode: return "SWITCH_MODE";
    case kAttrUptime: return "UPTIME";
    case kAttrNumPorts: return "NUM_PORTS";
    case kAttrQueuesBound: return "QUEUES_BOUND";
    case kAttrFastRx: return "FAST_RX";
    case kAttrOwnerUid: return "OWNER_UID";
    case kAttrPortTag: return "PORT_TAG";
    case kAttrFdLimit: return "FD_LIMIT";
    case kAttrPortsFdLeft: return "PORTS_FD_LEFT";
    case kAttrStartIssues: return "START_ISSUES";
    case kAttrHook: return "HOOK";
    case kAttrPortsPoolLeft: return "PORTS_POOL_LEFT";
    case kAttrPortsMapLeft: return "PORTS_MAP_LEFT";
    case kAttrUplink: return "UPLINK";
    case kAttrIsolated: return "ISOLATED";
    case kAttrVlanId: return "VLAN_ID";
    case kAttrCaptureId: return "CAPTURE_ID";
    case kAttrCaptureDir: return "CAPTURE_DIR";
    case kAttrCaptureSnaplen: return "CAPTURE_SNAPLEN";
    case kAttrCaptureBuffer: return "CAPTURE_BUFFER";
    case kAttrCaptureFrames: return "CAPTURE_FRAMES";
    case kAttrCaptureTaken: return "CAPTURE_TAKEN";
    case kAttrCaptureDrops: return "CAPTURE_DROPS";
    case kAttrCaptureEnded: return "CAPTURE_ENDED";
    case kAttrTcAttach: return "TC_ATTACH";
    case kAttrHookNote: return "HOOK_NOTE";
    case kAttrKernelFeatures: return "KERNEL_FEATURES";
    case kAttrLinkNote: return "LINK_NOTE";
    case kAttrUidCaps: return "UID_CAPS";
    case kAttrUidUse: return "UID_USE";
    case kAttrUidRequests: return "UID_REQUESTS";
    case kAttrCaptureFilter: return "CAPTURE_FILTER";
    default: {
      // The policy's: its table names them (spec/port_policy.h).
      const char* policy = spec::policyAttrName(attr);
      return policy ? policy : "UNKNOWN";
    }
  }
}

const char* kernelFeatureName(uint8_t bit) {
  switch (bit) {
    case kKfTcx: return "tcx";
    case kKfClsact: return "clsact";
    case kKfMultiBuffer: return "multi_buffer";
    case kKfXdpFeatures: return "xdp_features";
    case kKfXdpFrags: return "xdp_frags";
    case kKfRedirectPeer: return "redirect_peer";
    case kKfBusyPoll: return "busy_poll";
    default: return nullptr;
  }
}
const char* captureDirName(CaptureDir d) {
  switch (d) {
    case CaptureDir::kRx: return "rx";
    case CaptureDir::kTx: return "tx";
    case CaptureDir::kBoth: return "both";
  }
  return "unknown";
}

std::optional<PortType> parsePortType(std::string_view s) {
  return spec::byName(s, {PortType::kTap, PortType::kVeth, PortType::kNetdev, PortType::kNetkit});
}
std::optional<PortHook> parsePortHook(std::string_view s) {
  return spec::byName(s, {PortHook::kXdp, PortHook::kTc});
}
std::optional<CaptureDir> parseCaptureDir(std::string_view s) {
  if (s == "rx") return CaptureDir::kRx;
  if (s == "tx") return CaptureDir::kTx;
  if (s == "both") return CaptureDir::kBoth;
  return std::nullopt;
}
namespace {
// "0x0806", "2054": a number; nullopt past max or for anything else.
std::optional<uint32_t> parseNumber(std::string_view s, uint32_t max) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty() || s.size() > 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
    if (d >= base) return std::nullopt;
    v = v * uint32_t(base) + uint32_t(d);
    if (v > max) return std::nullopt;
  }
  return v;
}
}  // namespace

std::optional<uint16_t> parseCaptureEthertype(std::string_view s) {
  if (s == "arp") return 0x0806;
  if (s == "ipv4") return 0x0800;
  if (s == "ipv6") return 0x86dd;
  auto v = parseNumber(s, 0xffff);
  if (!v || *v < 0x0600) return std::nullopt;
  return uint16_t(*v);
}
std::optional<uint8_t> parseCaptureProto(std::string_view s) {
  if (s == "icmp") return 1;
  if (s == "tcp") return 6;
  if (s == "udp") return 17;
  if (s == "icmpv6") return 58;
  auto v = parseNumber(s, 255);
  if (!v) return std::nullopt;
  return uint8_t(*v);
}

std::optional<XdpMode> parseXdpMode(std::string_view s) {
  return spec::byName(s, {XdpMode::kNative, XdpMode::kGeneric, XdpMode::kAuto});
}


}  // namespace vdev::proto
