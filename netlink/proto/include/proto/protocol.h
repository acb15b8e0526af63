// vdev control protocol: the one header shared by vdevd and its clients
// (vdevctl, the CNI plugin). See docs/control-protocol.md.
//
// Wire format: netlink messages (struct nlmsghdr + struct genlmsghdr +
// attributes, host byte order, 4-byte aligned) carried over an AF_UNIX
// SOCK_SEQPACKET socket, one request per datagram. Not a netlink socket:
// nlmsg_type of every request and data reply is the fixed pseudo family
// kFamilyId below (no genl family resolution).
//
// Versioning rule (ABI): command, attribute and enum values below are never
// renumbered or reused; new ones are appended before the *Max markers. New
// optional attributes do not bump kProtocolVersion; a change that an old peer
// would misread does. The daemon rejects requests with a version above its
// own (EPROTONOSUPPORT) and requests carrying attributes it does not know
// (EINVAL): a request is executed exactly as asked or not at all. Clients
// ignore reply attributes they do not know, so a newer daemon can report more.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spec/port_policy.h"
#include "spec/port_spec.h"

namespace vdev::proto {

// genlmsghdr.version of every message this code sends.
inline constexpr uint8_t kProtocolVersion = 1;

// nlmsg_type of requests and data replies (>= NLMSG_MIN_TYPE, fixed: there is
// no genl controller on this socket). "vd".
inline constexpr uint16_t kFamilyId = 0x7664;

inline constexpr const char* kDefaultSocketDir = "/run/vdev";
inline constexpr const char* kDefaultSocketPath = "/run/vdev/vdevd.sock";

// Limits.
inline constexpr size_t kMaxMessageSize = 65536;  // one datagram, either direction
inline constexpr size_t kIfNameMax = 15;          // interface names: 1..15 chars (IFNAMSIZ - 1)
inline constexpr size_t kNetnsNameMax = 255;      // a name under /run/netns
inline constexpr size_t kNetnsPathMax = 4095;     // absolute path (PATH_MAX - 1)
inline constexpr size_t kVersionMax = 63;         // INFO version string
inline constexpr size_t kErrorMsgMax = 1023;      // error message attribute (longer is cut)
inline constexpr size_t kPortTagMax = 127;        // PORT_TAG: 1..127 printable characters
inline constexpr size_t kStartIssuesMax = 4000;   // START_ISSUES text (longer is cut)
inline constexpr size_t kHookNoteMax = 511;       // HOOK_NOTE text (longer is cut)
inline constexpr uint32_t kMinQueues = 1, kMaxQueues = 64;
inline constexpr uint32_t kMinMtu = 68, kMaxMtu = 65535;
inline constexpr size_t kMaxAllowedIps = 4;       // ALLOWED_IPS: IPv4 and IPv6 addresses each
inline constexpr uint32_t kMaxPid = 4194304;  // PID_MAX_LIMIT

// Commands (genlmsghdr.cmd). Replies carry the command of their request.
enum Cmd : uint8_t {
  kCmdUnspec = 0,
  // Attach a port; with CREATE, create its device first.
  //   req:   PORT_NAME (required), PORT_TYPE (required), QUEUES, XDP_MODE, CREATE,
  //          FAST_RX, PORT_TAG, HOOK, ISOLATED, STORM_BCAST, STORM_MCAST,
  //          STORM_UNKNOWN, POLICE_PPS, POLICE_BPS, POLICE_BURST, ALLOWED_MAC,
  //          ALLOWED_IPS, RA_GUARD, DHCP_GUARD, VLAN_PVID, VLAN_TAGGED,
  //          VLAN_UNTAGGED
  //   reply: ACK or ERROR
  kCmdPortAdd = 1,
  // Detach a port (and delete the device if vdevd created it).
  //   req:   PORT_NAME (required)        reply: ACK or ERROR
  kCmdPortDel = 2,
  // One port (PORT_NAME) or, with NLM_F_DUMP and no PORT_NAME, every port.
  //   reply: one message per port: PORT_NAME, PORT_TYPE, IFINDEX, QUEUES,
  //          QUEUES_BOUND, XDP_MODE, BIND_MODE, MTU, LIVE, MAC, FAST_RX,
  //          HOOK, OWNER_UID and PORT_TAG (ports added at run time), UPLINK
  //          and ISOLATED (when 1), STORM_* and POLICE_* (always), TC_ATTACH
  //          (a port with an skb program), HOOK_NOTE and LINK_NOTE (when
  //          there is one)
  kCmdPortGet = 3,
  // Counters of one port (PORT_NAME) or, with NLM_F_DUMP, of every port.
  //   reply: per port the PORT_GET attributes plus STATS (nested); POOL
  //          (nested) and FDB_ENTRIES once per reply: in the single reply's
  //          message, or in the first message of a dump (which then has no
  //          PORT_NAME).
  kCmdStatsGet = 4,
  // MAC table, NLM_F_DUMP only.
  //   reply: one message per entry: MAC, VLAN_ID, PORT_NAME, FDB_STATIC, FDB_AGE_MS
  kCmdFdbGet = 5,
  // Static MAC table entry.
  //   req:   MAC (required), PORT_NAME (required), FDB_STATIC (default 1; 0 is
  //          refused with EINVAL: learned entries come from traffic only),
  //          VLAN_ID (default 1; a VLAN the port carries)
  //   reply: ACK or ERROR
  kCmdFdbAdd = 6,
  //   req:   MAC (required), VLAN_ID (default 1)   reply: ACK or ERROR
  kCmdFdbDel = 7,
  // Daemon information. req: nothing.
  //   reply: VERSION, THREADS, SWITCH_MODE, UPTIME, NUM_PORTS, FD_LIMIT,
  //          PORTS_FD_LEFT, PORTS_POOL_LEFT, PORTS_MAP_LEFT, START_ISSUES (if any),
  //          TC_ATTACH, KERNEL_FEATURES, UID_CAPS, UID_USE, UID_REQUESTS
  kCmdInfoGet = 8,
  // Change a running port's isolation, storm control and policer, at once
  // (frames in flight are not touched; every bucket starts full). Each
  // attribute given replaces the port's value, the others stay; at least one
  // besides PORT_NAME. Root only; not a port from vdevd's command line (EPERM);
  // the change is saved with the port.
  //   req:   PORT_NAME (required), ISOLATED, STORM_BCAST, STORM_MCAST,
  //          STORM_UNKNOWN, POLICE_PPS, POLICE_BPS, POLICE_BURST, ALLOWED_MAC,
  //          ALLOWED_IPS, RA_GUARD, DHCP_GUARD, VLAN_PVID, VLAN_TAGGED,
  //          VLAN_UNTAGGED
  //   reply: ACK or ERROR
  kCmdPortSet = 9,
  // Capture (vdevctl capture): a copy of the frames one port receives
  // and/or sends, held by vdevd for the connection that asked for it
  // until that connection reads them. A capture belongs to its connection:
  // another connection cannot read or stop it, and it ends when its
  // connection closes. The port keeps the kernel fast path: its programs
  // copy what they carry, vdevd what it switches. Root, or the uid that
  // added the port (OWNER_UID).
  //   req:   PORT_NAME (required), CAPTURE_DIR (absent: both), CAPTURE_SNAPLEN
  //          (absent: 65535), CAPTURE_BUFFER (absent: 4096), CAPTURE_FILTER
  //          (absent: every frame)
  //   reply: CAPTURE_ID, CAPTURE_SNAPLEN (in effect), CAPTURE_TAKEN 0, CAPTURE_DROPS 0
  kCmdCaptureStart = 10,
  // The frames captured since the last read, as many as fit in one reply.
  //   req:   CAPTURE_ID (required)
  //   reply: CAPTURE_ID, CAPTURE_FRAMES (absent: none), CAPTURE_TAKEN,
  //          CAPTURE_DROPS, CAPTURE_ENDED (the port was removed; the frames
  //          before that are still read)
  kCmdCaptureRead = 11,
  // Ends a capture; the frames not read are dropped with it.
  //   req:   CAPTURE_ID (required)
  //   reply: CAPTURE_ID, CAPTURE_TAKEN, CAPTURE_DROPS (final)
  kCmdCaptureStop = 12,
  kCmdMax = kCmdCaptureStop
};

// Top-level attributes (one space for every command, like nl80211).
enum Attr : uint16_t {
  kAttrUnspec = 0,
  kAttrPortName = 1,     // string, 1..15 chars + NUL: interface name of the port
  kAttrPortType = 2,     // u8 PortType
  kAttrQueues = 3,       // u32, 1..64: queues (AF_XDP sockets / tap queues)
  kAttrXdpMode = 4,      // u8 XdpMode (requests: native|generic|auto; replies: none|native|generic)
  kAttrCreate = 5,       // nested CreateAttr: create the device (PORT_ADD, tap and veth only)
  kAttrIfindex = 6,      // u32
  kAttrMtu = 7,          // u32, bytes (L3 MTU of the device)
  kAttrLive = 8,         // u8 0|1: port has open sockets and its link is up
  kAttrBindMode = 9,     // u8 BindMode
  kAttrMac = 10,         // 6 bytes: port MAC (replies), FDB entry MAC (FDB_*)
  kAttrFdbStatic = 11,   // u8 0|1
  kAttrFdbAgeMs = 12,    // u64, milliseconds since a learned entry was last seen (0: static)
  kAttrStats = 13,       // nested: a port's counters (STATS_GET replies; see below)
  kAttrPool = 14,        // nested: UMEM frame accounting (STATS_GET replies, once; see below)
  kAttrFdbEntries = 15,  // u64: live MAC table entries (STATS_GET replies, with POOL)
  kAttrVersion = 16,     // string, 1..63 chars: vdevd version
  kAttrThreads = 17,     // u32: datapath threads
  kAttrSwitchMode = 18,  // u8 SwitchMode
  kAttrUptime = 19,      // u64, seconds since vdevd started
  kAttrNumPorts = 20,    // u32
  kAttrQueuesBound = 21, // u32: queues with a socket now (port replies; < QUEUES while a VM has not opened them all)
  kAttrFastRx = 22,      // u8 0|1: frames received on the port may take the kernel fast path
                         // (PORT_ADD: absent = 1; port replies). 0: they always go through vdevd
  kAttrOwnerUid = 23,    // u32: uid of the client that added the port (port replies; absent:
                         // a port from vdevd's command line)
  kAttrPortTag = 24,     // string, 1..127 printable chars, no space: a label the adding client gives the
                         // port (PORT_ADD; port replies). vdev-cni: "cni:" + network name
  kAttrFdLimit = 25,     // u32: vdevd's open-file limit (RLIMIT_NOFILE soft limit; INFO)
  kAttrPortsFdLeft = 26, // u32: further one-queue ports that limit leaves room for (INFO)
  kAttrStartIssues = 27, // string, up to 4000 chars, lines separated by '\n': what vdevd could
                         // not restore or use at start (INFO; absent: nothing)
  kAttrHook = 28,        // u8 PortHook: where the port's received frames enter vdev (PORT_ADD:
                         // absent = chosen by the device, tc for veths and taps; port replies)
  kAttrPortsPoolLeft = 29, // u32: further one-queue ports at the XDP hook whose fill-ring floor the
                           // frame pool has room for (INFO; ports at the tc hook take none)
  kAttrPortsMapLeft = 30,  // u32: further ports the kernel fast path's maps have entries for (INFO;
                           // a port beyond them is switched by vdevd alone)
  kAttrUplink = 31,        // u8 0|1: the port's device is an uplink -- neither a veth nor a tap (a NIC,
                           // a VXLAN or Geneve tunnel, a bond) (port replies; absent: 0)
  kAttrIsolated = 32,      // u8 0|1: an isolated port, which talks only to ports that are not (the
                           // bridge's "isolated") (PORT_ADD: absent = 0; port replies; absent: 0)
  // A port's policy: the numbers are spec/port_policy.h's (its field table,
  // kPolicyFields, gives each its vdevctl keyword and state-file key).
  // Storm control and the ingress policer of a port: what it may send into
  // the switch (drops.storm_bcast, storm_mcast, storm_unknown, police). 0:
  // no limit. PORT_ADD: each optional, absent = vdevd's default for every
  // port (its --storm-* and --police-* options), and sent only when given,
  // so an older vdevd still takes a request that gives none. Port replies:
  // all six, the port's effective values (absent: a daemon without them).
  kAttrStormBcast = spec::kAttrStormBcast,    // u32: broadcast frames/s
  kAttrStormMcast = spec::kAttrStormMcast,    // u32: multicast frames/s (not broadcast)
  kAttrStormUnknown = spec::kAttrStormUnknown,  // u32: unicast frames/s to unknown MACs (flooded)
  kAttrPolicePps = spec::kAttrPolicePps,     // u64: every frame, packets/s
  kAttrPoliceBps = spec::kAttrPoliceBps,     // u64: every frame, bits/s (Ethernet header on)
  kAttrPoliceBurst = spec::kAttrPoliceBurst,   // u32, >= 1: the policer's buckets hold this many milliseconds of
                           // its rates (PORT_ADD: 0 is refused; port replies: vdevd's default
                           // filled in)
  // Anti-spoofing: the one source MAC the port may send (drops.spoof_mac for
  // any other, by its program). PORT_ADD, PORT_SET: unicast, or all zeros
  // for any source (absent in PORT_ADD: any, and then not sent). Port
  // replies: present only while the port has one.
  kAttrAllowedMac = spec::kAttrAllowedMac,    // 6 bytes
  // Anti-spoofing by address: the IPv4 and IPv6 addresses the port may send
  // from (drops.spoof_ip for any other and for other EtherTypes, by its
  // program). 16 bytes an address, IPv4 mapped (::ffff:a.b.c.d); at most
  // four of each family, none unspecified or multicast. PORT_ADD, PORT_SET:
  // empty for any address (absent in PORT_ADD: any). Port replies: present
  // only while the port has some.
  kAttrAllowedIps = spec::kAttrAllowedIps,    // 16 * n bytes, n <= 8
  // RA and DHCP guard: the port's Router Advertisements (drops.ra_guard) and
  // DHCP/DHCPv6 servers' messages (drops.dhcp_guard) are dropped by its
  // program. PORT_ADD, PORT_SET: 1 on, 0 off (absent in PORT_ADD: off).
  // Port replies: present (1) only while on.
  kAttrRaGuard = spec::kAttrRaGuard,       // u8 0|1
  kAttrDhcpGuard = spec::kAttrDhcpGuard,     // u8 0|1
  // VLANs (802.1Q; base/vlan.h): the VLAN untagged frames received go to
  // (0: none taken), the VIDs carried tagged, those sent untagged (the PVID
  // among them). A VID list is u16 pairs [first, last], 1..4094, first <=
  // last. PORT_ADD, PORT_SET: any of the three replaces the port's VLAN
  // settings whole (the absent ones empty); VLAN_PVID 0 alone takes them
  // away (the default VLAN 1, untagged, tags not looked at). Port replies:
  // present only while the port has VLAN settings.
  kAttrVlanPvid = spec::kAttrVlanPvid,      // u16
  kAttrVlanTagged = spec::kAttrVlanTagged,    // u16 pairs
  kAttrVlanUntagged = spec::kAttrVlanUntagged,  // u16 pairs
  // An FDB entry's VLAN (FDB_GET replies: always; FDB_ADD, FDB_DEL: absent = 1).
  kAttrVlanId = 46,        // u16 1..4094
  // Capture (CAPTURE_START, CAPTURE_READ, CAPTURE_STOP).
  kAttrCaptureId = 47,      // u32 >= 1: a capture of this connection's
  kAttrCaptureDir = 48,     // u8 CaptureDir
  kAttrCaptureSnaplen = 49, // u32 64..65535: bytes of each frame kept (the rest cut)
  kAttrCaptureBuffer = 50,  // u32 16..16384: frames vdevd holds for the reader (CAPTURE_START)
  // The frames, one record after another, each 4-byte aligned (host byte
  // order): u64 time (ns since the epoch, CLOCK_REALTIME), u32 length on
  // the wire, u16 bytes kept (<= snaplen), u8 CaptureDir (kRx or kTx),
  // u8 0, then the bytes kept and 0..3 bytes of padding.
  kAttrCaptureFrames = 51,  // bytes
  kAttrCaptureTaken = 52,   // u64: frames copied into the capture so far
  kAttrCaptureDrops = 53,   // u64: frames the capture missed so far (its buffer was full)
  kAttrCaptureEnded = 54,   // u8 1: the port is gone; the capture takes no more frames
  // The kernel's ways, as vdevd uses them (docs/architecture.md, "Kernel
  // features"). TC_ATTACH: how the skb programs are attached to a device
  // (INFO: vdevd's choice for this kernel; port replies: the port's skb
  // program, at tc or the copy program at XDP, absent without one).
  kAttrTcAttach = 55,       // u8 TcAttach
  // Why the port is not at the hook `auto` chose: its tc attach failed and
  // it went to XDP (port replies; absent: it is where auto put it).
  kAttrHookNote = 56,       // string, 1..511 chars
  // INFO: the kernel features vdevd uses now, one bit each (KernelFeature);
  // a bit a client does not know is a newer daemon's.
  kAttrKernelFeatures = 57, // u64
  // Why the port has no device while it waits for one: which device it
  // waits for, and one of its name it refused (port replies; absent: it
  // has its device).
  kAttrLinkNote = 58,       // string, 1..511 chars
  // INFO: the caps per non-root uid (UidCapsWire), and each uid's use of
  // them (UidUseWire records: every uid with a port, a capture or a
  // request counted against the rate).
  kAttrUidCaps = 59,        // bytes, one UidCapsWire
  kAttrUidUse = 60,         // bytes, UidUseWire records
  // INFO: each non-root uid's control requests since vdevd started
  // (UidRequestsWire records: every uid that sent one).
  kAttrUidRequests = 61,    // bytes, UidRequestsWire records
  // CAPTURE_START: only the frames that match every field inside
  // (CaptureFilterAttr, at least one) are copied. A vdevd older than the
  // filter refuses the request (an unknown attribute), so a filter is never
  // silently a capture of everything.
  kAttrCaptureFilter = 62,  // nested
  kAttrMax = kAttrCaptureFilter
};

// Inside kAttrCreate (PORT_ADD).
enum CreateAttr : uint16_t {
  kCreateUnspec = 0,
  // veth: where the peer end goes. At most one of the three; none: the
  // peer stays in vdevd's namespace.
  kCreatePeerNetnsName = 1,  // string, 1..255 chars, a name under /run/netns (no '/')
  kCreatePeerNetnsPath = 2,  // string, absolute path to a netns file, no ".." component
  kCreatePeerNetnsPid = 3,   // u32, 1..4194304: the netns of this process
  kCreatePeerIfname = 4,     // string, interface name of the peer end (veth)
  kCreatePeerMac = 5,        // 6 bytes, unicast and non-zero (veth)
  kCreateMtu = 6,            // u32, 68..65535 (veth: both ends; tap)
  kCreateOwnerUid = 7,       // u32, uid that may open the tap (not (uid_t)-1) (tap)
  kCreateGroupGid = 8,       // u32, gid that may open the tap (not (gid_t)-1) (tap)
  kCreateMultiQueue = 9,     // u8 0|1: IFF_MULTI_QUEUE; required for QUEUES > 1 (tap)
  kCreateMac = 10,           // 6 bytes, unicast and non-zero: the tap's MAC (tap)
  kCreateMax = kCreateMac
};

// Inside kAttrCaptureFilter (CAPTURE_START). What each field matches:
// vdev/datapath/bpf/vdev_capture_filter.h, docs/vdevctl.md ("capture").
enum CaptureFilterAttr : uint16_t {
  kCapFilterUnspec = 0,
  kCapFilterMac = 1,        // 6 bytes: the source or the destination MAC
  kCapFilterVlan = 2,       // u16 1..4094: the outer tag's VID, or the port's untagged VLAN
  kCapFilterEthertype = 3,  // u16 >= 0x0600: the EtherType after up to two tags
  kCapFilterIp = 4,         // 16 bytes (IPv4 mapped, ::ffff:a.b.c.d), not unspecified:
                            // the IPv4/IPv6 source or destination
  kCapFilterProto = 5,      // u8: the IPv4 protocol or IPv6 Next Header
  kCapFilterPort = 6,       // u16: the TCP/UDP source or destination port; with PROTO
                            // only if that is TCP (6) or UDP (17)
  kCapFilterMax = kCapFilterPort
};

// Inside kAttrStats and kAttrPool: one u64 attribute per counter, the
// attribute numbers of the counter table (stats/counters.h: a port's
// counters inside STATS, kPortCounters; where every UMEM frame is inside
// POOL, kPoolCounters, whose total is the sum of the others). The table keeps
// this header's rule for them: an attribute number is never renumbered or
// reused, a new counter takes the next one. A client reads a counter its
// peer did not send (an older vdevd) as 0 and ignores attributes it does not
// know (a newer vdevd's).

// Enum attribute values (spec/port_spec.h holds the port's and vdevd's
// modes, whose numbers are this protocol's). Replies may carry values a
// client does not know (a newer daemon); requests may not, nor the values
// only the datapath uses (PortHook::kAuto, TcAttach::kAuto).
using spec::BindMode;
using spec::PortHook;
using spec::PortType;
using spec::SwitchMode;
using spec::TcAttach;
using spec::XdpMode;
// KERNEL_FEATURES bits: what each one means, and the Linux version that
// brought it, in docs/architecture.md ("Kernel features"); their names in
// kernelFeatureName() (codec.h).
enum KernelFeature : uint8_t {
  kKfTcx = 0,           // the skb programs at tcx (6.6)
  kKfClsact = 1,        // ... at clsact, classic tc (any kernel)
  kKfMultiBuffer = 2,   // AF_XDP multi-buffer on vdevd's sockets (XDP_USE_SG, 6.6)
  kKfXdpFeatures = 3,   // devices' XDP features from the netdev family (6.3); else by driver
  kKfXdpFrags = 4,      // the XDP program frags-aware (xdp.frags, 5.18)
  kKfRedirectPeer = 5,  // the skb path's fast path into veth peers (bpf_redirect_peer, 5.10)
  kKfBusyPoll = 6,      // preferred busy polling on the AF_XDP sockets (5.11)
  kKfCount = 7
};
// What a capture copies: what the port receives (kRx: into the switch),
// what vdevd hands it to send (kTx), or both.
enum class CaptureDir : uint8_t { kRx = 1, kTx = 2, kBoth = 3 };
// A frame record's header inside CAPTURE_FRAMES.
struct CaptureRecordHeader {
  uint64_t time_ns;
  uint32_t wire_len;
  uint16_t kept;
  uint8_t dir;  // CaptureDir::kRx or kTx
  uint8_t pad;
};
static_assert(sizeof(CaptureRecordHeader) == 16);
// INFO's caps per non-root uid and their use (host byte order: the
// socket is local). 0 in a cap: none.
struct UidCapsWire {
  uint32_t ports;          // --uid-max-ports
  uint32_t fdb;            // --uid-max-fdb
  uint64_t capture_bytes;  // --uid-max-capture
  uint32_t rate;           // --uid-max-rate, requests a second
  uint32_t burst;          // --uid-rate-burst
};
static_assert(sizeof(UidCapsWire) == 24);
struct UidUseWire {
  uint32_t uid;
  uint32_t ports;          // ports it added
  uint32_t fdb;            // MACs learned on them
  uint32_t pad;
  uint64_t capture_bytes;  // its running captures' memory
};
static_assert(sizeof(UidUseWire) == 24);
struct UidRequestsWire {
  uint32_t uid;
  uint32_t pad;
  uint64_t taken;    // requests answered
  uint64_t refused;  // refused by --uid-max-rate (EAGAIN)
};
static_assert(sizeof(UidRequestsWire) == 24);
inline constexpr size_t kUidUseMax = 1024;  // records in one INFO reply

inline constexpr uint32_t kCaptureSnaplenMin = 64, kCaptureSnaplenMax = 65535;
inline constexpr uint32_t kCaptureBufferMin = 16, kCaptureBufferMax = 16384;
inline constexpr uint32_t kCaptureBufferDefault = 4096;

}  // namespace vdev::proto
