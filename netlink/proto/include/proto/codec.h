// Typed requests and replies of the vdev control protocol, and their
// netlink encoding (see protocol.h and docs/control-protocol.md).
//
// Everything here is pure: no I/O, no global state, thread safe. Decoders
// take untrusted bytes: any input gives either a value or an Error whose
// `what` is a human message naming the offending field, never a crash.
// Messages are built with libnl-3 (nlmsg_alloc_size / genlmsg_put / nla_put_*)
// and parsed with nla_parse plus vdev's own validation (libnl's policy only
// checks lengths).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/ip.h"
#include "base/mac.h"
#include "base/result.h"
#include "base/vlan.h"
#include "proto/protocol.h"
#include "spec/port_policy.h"
#include "stats/counters.h"

struct nlmsghdr;  // <linux/netlink.h>

namespace vdev::proto {

using vdev::Error;
using vdev::Result;
using vdev::Status;

using vdev::Mac;

// ---------------------------------------------------------------- requests

// kAttrCreate. Which fields a type allows: see protocol.h (CreateAttr).
struct CreateOptions {
  // veth only. At most one of the three netns fields.
  std::optional<std::string> peer_netns_name;
  std::optional<std::string> peer_netns_path;
  std::optional<uint32_t> peer_netns_pid;
  std::optional<std::string> peer_ifname;
  std::optional<Mac> peer_mac;
  // veth and tap.
  std::optional<uint32_t> mtu;
  // tap only.
  std::optional<uint32_t> owner_uid;
  std::optional<uint32_t> group_gid;
  std::optional<bool> multi_queue;
  std::optional<Mac> mac;
  bool operator==(const CreateOptions&) const = default;
};

// STORM_*, POLICE_*, ALLOWED_*, *_GUARD and VLAN_* in PORT_ADD and
// PORT_SET: the port's own policy (spec/port_policy.h). Each absent:
// vdevd's default for every port, or the port's (and not on the wire); 0:
// no limit (POLICE_BURST excepted: at least 1 ms).
using LimitOptions = spec::PortPolicyOptions;
// The same in port replies: what the port has in effect (its own values
// over vdevd's defaults; 0: no limit; an allowed MAC of all zeros: any
// source; police_burst_ms always what holds).
using Limits = spec::PortPolicy;

struct PortAddRequest {
  std::string name;
  PortType type = PortType::kNetdev;
  std::optional<uint32_t> queues;       // absent: the daemon's default
  XdpMode xdp_mode = XdpMode::kAuto;    // kNative, kGeneric or kAuto
  std::optional<CreateOptions> create;  // absent: attach an existing device
  std::optional<bool> fast_rx;          // absent: on (received frames may take the kernel fast path)
  std::optional<std::string> tag;       // PORT_TAG: the adder's label (vdev-cni: "cni:NETWORK")
  std::optional<PortHook> hook;         // absent: chosen by the device (tc for veths and taps)
  std::optional<bool> isolated;         // absent: not isolated (and not on the wire)
  LimitOptions limits;                  // STORM_*, POLICE_*: each absent = vdevd's default
  bool operator==(const PortAddRequest&) const = default;
};
struct PortDelRequest {
  std::string name;
  bool operator==(const PortDelRequest&) const = default;
};
// Empty name: dump (NLM_F_DUMP) of every port.
struct PortGetRequest {
  std::string name;
  bool operator==(const PortGetRequest&) const = default;
};
// Empty name: dump of every port.
struct StatsGetRequest {
  std::string name;
  bool operator==(const StatsGetRequest&) const = default;
};
struct FdbGetRequest {  // always a dump
  bool operator==(const FdbGetRequest&) const = default;
};
struct FdbAddRequest {
  Mac mac{};
  std::string port;
  bool is_static = true;
  uint16_t vid = kVidDefault;
  bool operator==(const FdbAddRequest&) const = default;
};
struct FdbDelRequest {
  Mac mac{};
  uint16_t vid = kVidDefault;
  bool operator==(const FdbDelRequest&) const = default;
};
struct InfoGetRequest {
  bool operator==(const InfoGetRequest&) const = default;
};
// PORT_SET: what is given replaces the port's value; at least one field.
// A limit of 0 is "no limit"; to go back to vdevd's default for every port,
// give that value (the port then keeps it as its own).
struct PortSetRequest {
  std::string name;
  std::optional<bool> isolated;
  LimitOptions limits;
  bool operator==(const PortSetRequest&) const = default;
};

// CAPTURE_START: dir, snaplen and buffer absent = both, 65535, 4096.
// CAPTURE_FILTER: what is given must match (absent: anything).
struct CaptureFilter {
  std::optional<Mac> mac;
  std::optional<uint16_t> vlan;
  std::optional<uint16_t> ethertype;
  std::optional<IpAddr> ip;
  std::optional<uint8_t> proto;
  std::optional<uint16_t> port;
  bool empty() const { return !mac && !vlan && !ethertype && !ip && !proto && !port; }
  bool operator==(const CaptureFilter&) const = default;
};
struct CaptureStartRequest {
  std::string name;
  CaptureDir dir = CaptureDir::kBoth;
  std::optional<uint32_t> snaplen;
  std::optional<uint32_t> buffer;
  std::optional<CaptureFilter> filter;  // sent only when given
  bool operator==(const CaptureStartRequest&) const = default;
};
struct CaptureReadRequest {
  uint32_t id = 0;
  bool operator==(const CaptureReadRequest&) const = default;
};
struct CaptureStopRequest {
  uint32_t id = 0;
  bool operator==(const CaptureStopRequest&) const = default;
};

using RequestBody = std::variant<PortAddRequest, PortDelRequest, PortGetRequest, StatsGetRequest,
                                 FdbGetRequest, FdbAddRequest, FdbDelRequest, InfoGetRequest,
                                 PortSetRequest, CaptureStartRequest, CaptureReadRequest,
                                 CaptureStopRequest>;

// The netlink header of a message, as received.
struct MsgHeader {
  uint32_t len = 0;
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t seq = 0;
  uint32_t pid = 0;
};

struct Request {
  MsgHeader hdr;                       // decodeRequest fills it; replies echo hdr.seq and hdr.pid
  uint8_t version = kProtocolVersion;  // genlmsghdr.version the client spoke
  RequestBody body;
};

Cmd cmdOf(const RequestBody& body);
// Whether the request is a dump (NLM_F_DUMP): PORT_GET / STATS_GET without a
// name, FDB_GET.
bool isDump(const RequestBody& body);

// ----------------------------------------------------------------- replies

struct Ack {
  bool operator==(const Ack&) const = default;
};
// NLMSG_ERROR with a negative errno and a message (like the kernel's extack).
struct ErrorReply {
  int err = 0;  // positive errno
  std::string msg;
  bool operator==(const ErrorReply&) const = default;
};

struct PortInfo {
  std::string name;
  PortType type = PortType::kNetdev;
  uint32_t ifindex = 0;
  uint32_t queues = 0;
  XdpMode xdp_mode = XdpMode::kNone;
  BindMode bind_mode = BindMode::kNone;
  uint32_t mtu = 0;
  bool live = false;
  std::optional<Mac> mac;
  uint32_t queues_bound = 0;  // queues with a socket now (<= queues)
  bool fast_rx = true;        // the port's option; a daemon that does not send FAST_RX has it on
  std::optional<uint32_t> owner_uid;  // who added it at run time; nullopt: vdevd's command line
  std::string tag;                    // PORT_TAG given at add ("" if none)
  std::optional<PortHook> hook;  // absent: a daemon that does not send HOOK (always XDP)
  std::optional<TcAttach> tc_attach;  // TC_ATTACH: how its skb program is attached; absent: none
  std::string hook_note;         // HOOK_NOTE: why it is not at the hook auto chose ("" if it is)
  std::string link_note;         // LINK_NOTE: what device it waits for ("" while it has one)
  bool uplink = false;           // UPLINK: neither a veth nor a tap
  bool isolated = false;         // ISOLATED
  std::optional<Limits> limits;  // STORM_*, POLICE_*; absent: a daemon that does not send them
  bool operator==(const PortInfo&) const = default;
};

// A port's counters (STATS_GET). `counters`: every counter of the table
// (stats/counters.h) by id; one the daemon did not send (an older vdevd) is 0.
struct PortStatsMsg {
  PortInfo port;
  stats::PortValues counters;
  bool operator==(const PortStatsMsg&) const = default;
};

// Where every UMEM frame is (POOL), by the table's pool ids.
using PoolMsg = stats::PoolValues;

struct StatsReply {
  std::vector<PortStatsMsg> ports;
  std::optional<PoolMsg> pool;
  std::optional<uint64_t> fdb_entries;
  bool operator==(const StatsReply&) const = default;
};

struct PortList {
  std::vector<PortInfo> ports;
  bool operator==(const PortList&) const = default;
};

struct FdbEntryMsg {
  Mac mac{};
  std::string port;
  bool is_static = false;
  uint64_t age_ms = 0;
  uint16_t vid = kVidDefault;  // VLAN_ID
  bool operator==(const FdbEntryMsg&) const = default;
};
struct FdbList {
  std::vector<FdbEntryMsg> entries;
  bool operator==(const FdbList&) const = default;
};

struct InfoMsg {
  std::string version;
  uint32_t threads = 0;
  SwitchMode mode = SwitchMode::kSwitch;
  uint64_t uptime_s = 0;
  uint32_t num_ports = 0;
  std::optional<uint32_t> fd_limit;       // RLIMIT_NOFILE soft limit
  std::optional<uint32_t> ports_fd_left;  // further one-queue ports that limit allows
  std::optional<uint32_t> ports_pool_left;  // further one-queue XDP-hook ports the frame pool allows
  std::optional<uint32_t> ports_map_left;   // further ports the fast path's maps have entries for
  std::string start_issues;               // what was not restored at start, one per line
  std::optional<TcAttach> tc_attach;      // how vdevd attaches skb programs on this kernel
  std::optional<uint64_t> kernel_features;  // KernelFeature bits in use; absent: an older daemon
  struct UidUse {
    uint32_t uid = 0, ports = 0, fdb = 0;
    uint64_t capture_bytes = 0;
    // Control requests since vdevd started: taken, refused by the rate
    // (UID_REQUESTS; 0 from an older daemon).
    uint64_t requests = 0, requests_refused = 0;
    bool operator==(const UidUse&) const = default;
  };
  struct UidCaps {
    uint32_t ports = 0, fdb = 0;
    uint64_t capture_bytes = 0;
    uint32_t rate = 0, burst = 0;
    bool operator==(const UidCaps&) const = default;
  };
  std::optional<UidCaps> uid_caps;  // absent: an older daemon
  std::vector<UidUse> uid_use;      // by uid
  bool operator==(const InfoMsg&) const = default;
};

// A capture's state and the frames read (CAPTURE_START, _READ, _STOP).
struct CaptureMsg {
  uint32_t id = 0;
  std::optional<uint32_t> snaplen;  // CAPTURE_START: the bytes kept of each frame
  std::vector<uint8_t> frames;      // CAPTURE_FRAMES: records (protocol.h); checked by the decoder
  uint64_t taken = 0;               // frames copied into the capture so far
  uint64_t drops = 0;               // frames it missed (its buffer full)
  bool ended = false;               // the port is gone
  bool operator==(const CaptureMsg&) const = default;
};
// One record of CAPTURE_FRAMES.
struct CapturedFrame {
  uint64_t time_ns = 0;
  uint32_t wire_len = 0;
  CaptureDir dir = CaptureDir::kRx;
  std::span<const uint8_t> data;  // the bytes kept, inside the CAPTURE_FRAMES buffer
};
// Appends one record to a CAPTURE_FRAMES buffer.
void appendCaptureRecord(std::vector<uint8_t>& out, uint64_t time_ns, uint32_t wire_len, CaptureDir dir,
                         std::span<const uint8_t> kept);
// The records of a CAPTURE_FRAMES buffer. Errors: EINVAL, naming the
// record, for a truncated one, one whose kept bytes exceed its length, or a
// direction that is not kRx or kTx.
Result<std::vector<CapturedFrame>> parseCaptureFrames(std::span<const uint8_t> frames);

// What a command answers:
//   PORT_ADD, PORT_DEL, PORT_SET, FDB_ADD, FDB_DEL -> Ack
//   PORT_GET -> PortList (exactly one port unless dump)
//   STATS_GET -> StatsReply (exactly one port unless dump)
//   FDB_GET -> FdbList;  INFO_GET -> InfoMsg;  CAPTURE_* -> CaptureMsg
//   any -> ErrorReply
using Reply = std::variant<Ack, ErrorReply, PortList, StatsReply, FdbList, InfoMsg, CaptureMsg>;

// ------------------------------------------------------------- validation
// Interface names (validateIfname): 1..15 printable ASCII characters, not
// "." or "..", none of '/', ':', '%' or a space -- what the kernel refuses
// (dev_valid_name) plus '%', which it takes as a pattern ("vd%d" becomes
// "vd0"), so the device would not have the name asked for.
// The semantic checks (ranges, names, combinations) that both the client
// (before sending) and the daemon (after decoding) apply. Errors: EINVAL
// with a message naming the attribute.
Status validate(const RequestBody& body);
Status validateIfname(std::string_view name, std::string_view attr);
Status validateUnicastMac(const Mac& mac, std::string_view attr);
// Anti-spoofing addresses: none unspecified, multicast or repeated, at most
// kMaxAllowedIps of each family.
Status validateAllowedIps(const std::vector<IpAddr>& ips, std::string_view attr);
// PORT_TAG: 1..kPortTagMax printable ASCII characters, no space.
Status validatePortTag(std::string_view tag);

// --------------------------------------------------------------- encoding

// A request datagram. Validates the body first (the same checks the daemon
// makes), so a bad request fails here with the daemon's message.
Result<std::vector<uint8_t>> encodeRequest(uint32_t seq, const RequestBody& body);

// The reply datagrams for `req`, each at most kMaxMessageSize bytes. A dump
// packs as many objects per datagram as fit and ends with NLMSG_DONE; never
// truncated. ErrorReply becomes NLMSG_ERROR, Ack an ACK. Errors: EIO when the
// reply kind does not fit the command (a handler bug), EMSGSIZE when one
// object alone does not fit in a datagram.
Result<std::vector<std::vector<uint8_t>>> encodeReply(const Request& req, const Reply& reply);
// NLMSG_ERROR with error 0, echoing `orig`'s header (NLM_F_CAPPED).
std::vector<uint8_t> encodeAck(const MsgHeader& orig);
// NLMSG_ERROR with -err (err > 0) and the message as NLMSGERR_ATTR_MSG
// (NLM_F_ACK_TLVS); the message is cut to kErrorMsgMax bytes and
// non-printable bytes are replaced by '?'.
std::vector<uint8_t> encodeError(const MsgHeader& orig, int err, std::string_view msg);

// --------------------------------------------------------------- decoding

// The framing of one request datagram: exactly one message, length field
// consistent with the datagram, NLM_F_REQUEST, our family, at most
// kMaxMessageSize. Errors: EINVAL, EMSGSIZE. A datagram that fails here is a
// broken client (the server answers and disconnects).
Result<MsgHeader> decodeHeader(std::span<const uint8_t> datagram);
// The header fields that can be read at all (zeros where the datagram is too
// short): what an error reply to garbage echoes.
MsgHeader peekHeader(std::span<const uint8_t> datagram);

// A whole request, strictly: framing as above; version 1..kProtocolVersion
// (else EPROTONOSUPPORT); known command (else EOPNOTSUPP) and dump flag as
// the command allows; every attribute known, valid for the command, of the
// right length, not repeated, within range; required ones present. Errors:
// EINVAL, EMSGSIZE, EOPNOTSUPP, EPROTONOSUPPORT with a message naming the
// attribute.
Result<Request> decodeRequest(std::span<const uint8_t> datagram);

// What a reply must answer.
struct Expect {
  std::optional<uint32_t> seq;  // nullopt: take the first message's
  Cmd cmd = kCmdUnspec;
  bool dump = false;
};

// Collects the datagrams of one reply (a single message, or NLM_F_MULTI
// messages up to NLMSG_DONE, or NLMSG_ERROR). Replies are decoded leniently
// where the protocol allows growth (unknown attributes and enum values) and
// strictly otherwise. An NLMSG_ERROR with seq 0 is a connection-level error
// (e.g. EBUSY, too many clients) and is accepted as the answer to any request.
class ReplyAssembler {
 public:
  explicit ReplyAssembler(const Expect& expect);
  // Feeds one datagram. Errors (EPROTO for a reply that does not answer the
  // request, EINVAL for a malformed one) are sticky.
  Status feed(std::span<const uint8_t> datagram);
  bool done() const { return done_; }
  // The reply once done() (ErrorReply if the daemon answered with an error).
  Result<Reply> finish();

 private:
  Status feedOne(const struct nlmsghdr* nlh);
  Status dataMsg(const struct nlmsghdr* nlh);
  Expect expect_;
  Reply body_;
  bool done_ = false;
  bool started_ = false;  // a data message was seen
  bool pool_seen_ = false, fdb_entries_seen_ = false;
  std::optional<Error> failed_;
};

// Decodes a complete reply given as one buffer (datagrams concatenated).
Result<Reply> decodeReply(std::span<const uint8_t> bytes, const Expect& expect);

// ------------------------------------------------------------------ names

const char* cmdName(uint8_t cmd);          // "PORT_ADD", ..., "UNKNOWN"
const char* attrName(uint16_t attr);       // "PORT_NAME", ...
// The modes' names (spec/port_spec.h: "tap", "native", "zerocopy", "tc" ...;
// "unknown" for a newer daemon's value).
using spec::bindModeName;
using spec::portHookName;
using spec::portTypeName;
using spec::switchModeName;
using spec::tcAttachName;
using spec::xdpModeName;
// "tcx", "clsact", "multi_buffer", "xdp_features", "xdp_frags",
// "redirect_peer", "busy_poll"; nullptr for a bit this code does not know.
const char* kernelFeatureName(uint8_t bit);
const char* captureDirName(CaptureDir d);  // "rx", "tx", "both", "unknown"
std::optional<CaptureDir> parseCaptureDir(std::string_view s);  // rx|tx|both
// A capture filter's EtherType and IP protocol, by name or number:
// "arp", "ipv4", "ipv6", or a number (0x0806, 2054) of at least 0x0600; "tcp", "udp", "icmp", "icmpv6", or 0..255.
std::optional<uint16_t> parseCaptureEthertype(std::string_view s);
std::optional<uint8_t> parseCaptureProto(std::string_view s);
// The values a request may carry, by name.
std::optional<PortType> parsePortType(std::string_view s);  // tap|veth|netdev|netkit
std::optional<XdpMode> parseXdpMode(std::string_view s);    // native|generic|auto
std::optional<PortHook> parsePortHook(std::string_view s);  // xdp|tc

}  // namespace vdev::proto
