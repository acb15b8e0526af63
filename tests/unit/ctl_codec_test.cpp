// Control protocol codec: round trips of every request and reply, every
// validation error path, dump splitting, sequence echo.
#include <gtest/gtest.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/codec.h"
#include "proto/metrics.h"

namespace vdev::proto {
namespace {

// ------------------------------------------------------------- helpers

// Hand-made messages, for what the encoder never produces.
class Raw {
 public:
  Raw& hdr(uint16_t type = kFamilyId, uint16_t flags = NLM_F_REQUEST, uint32_t seq = 7,
           uint32_t pid = 0) {
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = seq;
    h.nlmsg_pid = pid;
    put(&h, sizeof h);
    return *this;
  }
  Raw& genl(uint8_t cmd, uint8_t version = kProtocolVersion, uint16_t reserved = 0) {
    genlmsghdr g{cmd, version, reserved};
    put(&g, sizeof g);
    return *this;
  }
  Raw& attr(uint16_t type, const void* data, size_t len, bool pad = true) {
    nlattr a{static_cast<uint16_t>(NLA_HDRLEN + len), type};
    put(&a, sizeof a);
    put(data, len);
    if (pad) padTo4();
    return *this;
  }
  Raw& u8(uint16_t t, uint8_t v) { return attr(t, &v, 1); }
  Raw& u16(uint16_t t, uint16_t v) { return attr(t, &v, 2); }
  Raw& u32(uint16_t t, uint32_t v) { return attr(t, &v, 4); }
  Raw& u64(uint16_t t, uint64_t v) { return attr(t, &v, 8); }
  Raw& str(uint16_t t, const std::string& s, bool pad = true) {
    return attr(t, s.c_str(), s.size() + 1, pad);
  }
  Raw& bytes(uint16_t t, const std::string& s) { return attr(t, s.data(), s.size()); }
  Raw& mac(uint16_t t, const Mac& m) { return attr(t, m.data(), 6); }
  Raw& nest(uint16_t t) {
    nests_.push_back(b_.size());
    nlattr a{0, static_cast<uint16_t>(t | NLA_F_NESTED)};
    put(&a, sizeof a);
    return *this;
  }
  Raw& end() {
    size_t at = nests_.back();
    nests_.pop_back();
    uint16_t len = static_cast<uint16_t>(b_.size() - at);
    std::memcpy(&b_[at], &len, 2);
    return *this;
  }
  Raw& raw(const std::string& s) {
    put(s.data(), s.size());
    return *this;
  }
  // nlmsg_len = everything so far (or `len`).
  std::vector<uint8_t> done(std::optional<uint32_t> len = std::nullopt) {
    std::vector<uint8_t> out = b_;
    uint32_t l = len ? *len : static_cast<uint32_t>(out.size());
    if (out.size() >= 4) std::memcpy(out.data(), &l, 4);
    return out;
  }

 private:
  void put(const void* p, size_t n) {
    auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
  }
  void padTo4() {
    while (b_.size() % 4) b_.push_back(0);
  }
  std::vector<uint8_t> b_;
  std::vector<size_t> nests_;
};

constexpr Mac kMac1{0x02, 0, 0, 0, 0, 0x01};
constexpr Mac kMac2{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
constexpr Mac kMcast{0x01, 0x00, 0x5e, 0, 0, 1};

std::vector<uint8_t> enc(const RequestBody& b, uint32_t seq = 42) {
  auto r = encodeRequest(seq, b);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(*r) : std::vector<uint8_t>{};
}

void expectRoundTrip(const RequestBody& b) {
  auto bytes = enc(b, 99);
  auto d = decodeRequest(bytes);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->body, b);
  EXPECT_EQ(d->hdr.seq, 99u);
  EXPECT_EQ(d->hdr.len, bytes.size());
  EXPECT_EQ(bool(d->hdr.flags & NLM_F_DUMP), isDump(b));
  EXPECT_EQ(d->version, kProtocolVersion);
}

// Decoding must fail with err and a message containing `what`.
void expectReject(const std::vector<uint8_t>& bytes, int err, const std::string& what) {
  auto d = decodeRequest(bytes);
  ASSERT_FALSE(d.ok()) << "accepted; expected: " << what;
  EXPECT_EQ(d.error().err, err) << d.error().what;
  EXPECT_NE(d.error().what.find(what), std::string::npos)
      << "message \"" << d.error().what << "\" lacks \"" << what << "\"";
}

std::vector<uint8_t> concat(const std::vector<std::vector<uint8_t>>& dgs) {
  std::vector<uint8_t> out;
  for (auto& d : dgs) out.insert(out.end(), d.begin(), d.end());
  return out;
}

Request requestFor(RequestBody body, uint32_t seq = 1234, uint32_t pid = 77) {
  Request r;
  r.hdr.seq = seq;
  r.hdr.pid = pid;
  r.hdr.type = kFamilyId;
  r.hdr.flags = NLM_F_REQUEST | (isDump(body) ? NLM_F_DUMP : 0);
  r.body = std::move(body);
  return r;
}

// Encodes a reply and decodes it back (datagram by datagram).
Result<Reply> replyRoundTrip(const Request& req, const Reply& reply,
                             std::vector<std::vector<uint8_t>>* dgs_out = nullptr) {
  auto dgs = encodeReply(req, reply);
  if (!dgs) return dgs.error();
  ReplyAssembler a(Expect{req.hdr.seq, cmdOf(req.body), isDump(req.body)});
  for (auto& d : *dgs) {
    EXPECT_LE(d.size(), kMaxMessageSize);
    if (auto s = a.feed(d); !s) return s.error();
  }
  if (dgs_out) *dgs_out = *dgs;
  return a.finish();
}

PortInfo port(const std::string& name, uint32_t i = 1) {
  PortInfo p;
  p.name = name;
  p.type = PortType::kVeth;
  p.ifindex = 10 + i;
  p.queues = 1 + i % 4;
  p.xdp_mode = XdpMode::kGeneric;
  p.bind_mode = BindMode::kCopy;
  p.mtu = 1500;
  p.live = i % 2;
  p.fast_rx = i % 4 != 2;
  if (i % 3) p.mac = Mac{0x02, 0, 0, 0, uint8_t(i >> 8), uint8_t(i)};
  return p;
}

// Every counter of the table a value of its own, all 64 bits used.
uint64_t counterValue(const stats::CounterDef& c, uint32_t i) {
  return uint64_t(c.attr) << 48 | uint64_t(c.id + 1) << 24 | i;
}

PortStatsMsg portStats(const std::string& name, uint32_t i) {
  PortStatsMsg s;
  s.port = port(name, i);
  for (const stats::CounterDef& c : stats::kPortCounters) s.counters[c] = counterValue(c, i);
  return s;
}

PoolMsg pool() {
  PoolMsg p;
  for (const stats::CounterDef& c : stats::kPoolCounters) p[c] = 1000 * (c.id + 1);
  p[stats::kPoolTotal] = p.sum();
  return p;
}

// The STATS / POOL attribute of a counter.
uint16_t attrOf(stats::PortCounter id) { return stats::portCounter(id).attr; }
uint16_t attrOf(stats::PoolCounter id) { return stats::poolCounter(id).attr; }

// ------------------------------------------------------- request round trips

TEST(CtlCodec, RoundTripPortAddNetdev) {
  expectRoundTrip(PortAddRequest{"eth0", PortType::kNetdev, std::nullopt, XdpMode::kAuto, {}});
  expectRoundTrip(PortAddRequest{"ens1f0", PortType::kNetdev, 8u, XdpMode::kNative, {}});
}

TEST(CtlCodec, RoundTripPortAddTap) {
  CreateOptions c;
  c.owner_uid = 1000;
  c.group_gid = 100;
  c.multi_queue = true;
  c.mtu = 9000;
  c.mac = kMac2;
  expectRoundTrip(PortAddRequest{"tap-vm1", PortType::kTap, 4u, XdpMode::kGeneric, c});
  // Empty CREATE: create with defaults (must not vanish on the wire).
  PortAddRequest empty{"tap0", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  expectRoundTrip(empty);
  auto d = decodeRequest(enc(empty));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(std::get<PortAddRequest>(d->body).create.has_value());
}

TEST(CtlCodec, RoundTripPortAddVethEachNetns) {
  CreateOptions base;
  base.peer_ifname = "eth0";
  base.peer_mac = kMac1;
  base.mtu = 1400;
  CreateOptions byName = base, byPath = base, byPid = base, none;
  byName.peer_netns_name = "ctr-1";
  byPath.peer_netns_path = "/proc/1234/ns/net";
  byPid.peer_netns_pid = 1234;
  none.peer_ifname = "vd0p";
  for (const auto& c : {byName, byPath, byPid, none})
    expectRoundTrip(PortAddRequest{"vd0", PortType::kVeth, 2u, XdpMode::kAuto, c});
}

TEST(CtlCodec, RoundTripOtherRequests) {
  expectRoundTrip(PortDelRequest{"vd0"});
  expectRoundTrip(PortGetRequest{"vd0"});
  expectRoundTrip(PortGetRequest{});
  expectRoundTrip(StatsGetRequest{"vd0"});
  expectRoundTrip(StatsGetRequest{});
  expectRoundTrip(FdbGetRequest{});
  expectRoundTrip(FdbAddRequest{kMac2, "vd1", true});
  expectRoundTrip(FdbDelRequest{kMac1});
  expectRoundTrip(InfoGetRequest{});
}

TEST(CtlCodec, CommandsAndFlags) {
  auto b = enc(PortGetRequest{});
  auto h = decodeHeader(b);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->flags & NLM_F_DUMP, NLM_F_DUMP);
  EXPECT_EQ(h->type, kFamilyId);
  auto d = decodeRequest(b);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(cmdOf(d->body), kCmdPortGet);
  EXPECT_TRUE(isDump(d->body));
  auto a = enc(PortDelRequest{"x"});
  EXPECT_EQ(decodeHeader(a)->flags, NLM_F_REQUEST | NLM_F_ACK);
  const auto* g = reinterpret_cast<const genlmsghdr*>(a.data() + NLMSG_HDRLEN);
  EXPECT_EQ(g->cmd, kCmdPortDel);
  EXPECT_EQ(g->version, kProtocolVersion);
}

TEST(CtlCodec, DecodesFromMisalignedBuffer) {
  auto b = enc(PortAddRequest{"vd0", PortType::kVeth, 3u, XdpMode::kAuto, CreateOptions{}});
  std::vector<uint8_t> shifted(b.size() + 1);
  std::memcpy(shifted.data() + 1, b.data(), b.size());
  auto d = decodeRequest(std::span<const uint8_t>(shifted.data() + 1, b.size()));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(d->body).queues, 3u);
}

TEST(CtlCodec, AcceptsLastAttributeWithoutPadding) {
  // "vd0\0" is 4 bytes: use a 5-char name so the last attribute needs padding.
  auto b = Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "vd000", false).done();
  ASSERT_NE(b.size() % 4, 0u);
  auto d = decodeRequest(b);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(std::get<PortDelRequest>(d->body).name, "vd000");
}

// --------------------------------------------------------- framing errors

TEST(CtlCodecReject, TruncatedHeader) {
  std::vector<uint8_t> b(10, 0);
  expectReject(b, EINVAL, "truncated message: 10 bytes");
  expectReject({}, EINVAL, "truncated message: 0 bytes");
}

TEST(CtlCodecReject, LengthFieldLies) {
  auto good = Raw().hdr().genl(kCmdInfoGet).done();
  expectReject(Raw().hdr().genl(kCmdInfoGet).done(good.size() + 4), EINVAL,
               "exceeds the 20 bytes received");
  expectReject(Raw().hdr().genl(kCmdInfoGet).done(8), EINVAL, "smaller than the header");
  expectReject(Raw().hdr().genl(kCmdInfoGet).done(0xffffffff), EINVAL, "truncated message");
  // Shorter than the datagram: trailing bytes.
  auto two = Raw().hdr().genl(kCmdInfoGet).raw(std::string(8, 'x')).done(20);
  expectReject(two, EINVAL, "8 bytes after the message");
}

TEST(CtlCodecReject, Oversized) {
  auto b = Raw().hdr().genl(kCmdPortDel).raw(std::string(kMaxMessageSize, 'x')).done();
  expectReject(b, EMSGSIZE, "exceeds the 65536-byte limit");
  auto h = decodeHeader(b);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().err, EMSGSIZE);
}

TEST(CtlCodecReject, WrongFamilyAndFlags) {
  expectReject(Raw().hdr(0x10).genl(kCmdInfoGet).done(), EINVAL, "is not the vdev family");
  expectReject(Raw().hdr(NLMSG_ERROR).genl(kCmdInfoGet).done(), EINVAL, "not the vdev family");
  expectReject(Raw().hdr(kFamilyId, 0).genl(kCmdInfoGet).done(), EINVAL, "NLM_F_REQUEST not set");
  expectReject(Raw().hdr(kFamilyId, NLM_F_REQUEST | NLM_F_ECHO).genl(kCmdInfoGet).done(), EINVAL,
               "unsupported flags 0x8");
  expectReject(Raw().hdr(kFamilyId, NLM_F_REQUEST | NLM_F_ROOT).genl(kCmdPortGet).done(), EINVAL,
               "NLM_F_ROOT and NLM_F_MATCH");
}

TEST(CtlCodecReject, GenlHeader) {
  expectReject(Raw().hdr().raw("ab").done(), EINVAL, "truncated generic netlink header: 2 bytes");
  expectReject(Raw().hdr().done(), EINVAL, "truncated generic netlink header: 0 bytes");
  expectReject(Raw().hdr().genl(kCmdInfoGet, 0).done(), EPROTONOSUPPORT, "protocol version 0");
  expectReject(Raw().hdr().genl(kCmdInfoGet, 2).done(), EPROTONOSUPPORT, "protocol version 2");
  expectReject(Raw().hdr().genl(kCmdInfoGet, 1, 5).done(), EINVAL, "reserved");
}

TEST(CtlCodecReject, UnknownCommandAndDumpMisuse) {
  expectReject(Raw().hdr().genl(0).done(), EOPNOTSUPP, "unknown command 0");
  expectReject(Raw().hdr().genl(99).done(), EOPNOTSUPP, "unknown command 99");
  expectReject(Raw().hdr(kFamilyId, NLM_F_REQUEST | NLM_F_DUMP).genl(kCmdPortAdd).done(),
               EOPNOTSUPP, "PORT_ADD cannot be dumped");
  expectReject(Raw().hdr(kFamilyId, NLM_F_REQUEST | NLM_F_DUMP).genl(kCmdInfoGet).done(),
               EOPNOTSUPP, "INFO_GET cannot be dumped");
  expectReject(Raw().hdr().genl(kCmdFdbGet).done(), EOPNOTSUPP, "FDB_GET is a dump only");
  expectReject(Raw()
                   .hdr(kFamilyId, NLM_F_REQUEST | NLM_F_DUMP)
                   .genl(kCmdPortGet)
                   .str(kAttrPortName, "vd0")
                   .done(),
               EINVAL, "PORT_NAME is not valid in a dump");
  expectReject(Raw().hdr().genl(kCmdStatsGet).done(), EINVAL,
               "STATS_GET needs attribute PORT_NAME, or NLM_F_DUMP");
}

// ------------------------------------------------------- attribute errors

Raw portAdd(const std::string& name = "vd0", uint8_t type = 2) {
  Raw r;
  r.hdr().genl(kCmdPortAdd).str(kAttrPortName, name).u8(kAttrPortType, type);
  return r;
}

TEST(CtlCodecReject, WrongLength) {
  expectReject(portAdd().u16(kAttrQueues, 2).done(), EINVAL,
               "attribute QUEUES: payload of 2 bytes, expected 4 (u32)");
  expectReject(portAdd().u64(kAttrQueues, 2).done(), EINVAL, "QUEUES: payload of 8 bytes");
  expectReject(Raw().hdr().genl(kCmdPortAdd).str(kAttrPortName, "vd0").u32(kAttrPortType, 2).done(),
               EINVAL, "attribute PORT_TYPE: payload of 4 bytes, expected 1");
  expectReject(Raw().hdr().genl(kCmdFdbDel).bytes(kAttrMac, "abcd").done(), EINVAL,
               "attribute MAC: payload of 4 bytes, expected 6");
  expectReject(portAdd().nest(kAttrCreate).u16(kCreateMtu, 1500).end().done(), EINVAL,
               "attribute CREATE.MTU: payload of 2 bytes");
}

TEST(CtlCodecReject, Strings) {
  expectReject(Raw().hdr().genl(kCmdPortDel).bytes(kAttrPortName, "vd0").done(), EINVAL,
               "attribute PORT_NAME: string is not NUL-terminated");
  expectReject(Raw().hdr().genl(kCmdPortDel).bytes(kAttrPortName, std::string("v\0d0\0", 5)).done(),
               EINVAL, "attribute PORT_NAME: NUL byte inside the string");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "abcdefghijklmnop").done(), EINVAL,
               "attribute PORT_NAME: 16 characters, at most 15");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "").done(), EINVAL,
               "attribute PORT_NAME: empty interface name");
  expectReject(Raw().hdr().genl(kCmdPortDel).bytes(kAttrPortName, "").done(), EINVAL,
               "PORT_NAME: string is not NUL-terminated");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "a b").done(), EINVAL,
               "non-printable characters or spaces");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "a\x01").done(), EINVAL,
               "non-printable");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "a/b").done(), EINVAL,
               "not a valid interface name");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "..").done(), EINVAL,
               "not a valid interface name");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "eth0:1").done(), EINVAL,
               "not a valid interface name");
}

TEST(CtlCodecReject, Ranges) {
  expectReject(portAdd().u32(kAttrQueues, 0).done(), EINVAL,
               "attribute QUEUES: 0 out of range 1..64");
  expectReject(portAdd().u32(kAttrQueues, 65).done(), EINVAL, "QUEUES: 65 out of range 1..64");
  expectReject(portAdd().nest(kAttrCreate).u32(kCreateMtu, 67).end().done(), EINVAL,
               "attribute CREATE.MTU: 67 out of range 68..65535");
  expectReject(portAdd().nest(kAttrCreate).u32(kCreateMtu, 65536).end().done(), EINVAL,
               "CREATE.MTU: 65536 out of range");
  expectReject(portAdd().nest(kAttrCreate).u32(kCreatePeerNetnsPid, 0).end().done(), EINVAL,
               "CREATE.PEER_NETNS_PID: 0 out of range 1..4194304");
  expectReject(portAdd().nest(kAttrCreate).u32(kCreatePeerNetnsPid, 4194305).end().done(), EINVAL,
               "CREATE.PEER_NETNS_PID: 4194305 out of range");
  expectReject(portAdd("tap0", 1).nest(kAttrCreate).u32(kCreateOwnerUid, 0xffffffff).end().done(),
               EINVAL, "CREATE.OWNER_UID: 4294967295");
  expectReject(portAdd("tap0", 1).nest(kAttrCreate).u32(kCreateGroupGid, 0xffffffff).end().done(),
               EINVAL, "CREATE.GROUP_GID: 4294967295");
}

TEST(CtlCodecReject, Enums) {
  expectReject(portAdd("vd0", 0).done(), EINVAL, "attribute PORT_TYPE: 0 is not tap(1)");
  expectReject(portAdd("vd0", 4).done(), EINVAL, "attribute PORT_TYPE: 4");
  expectReject(portAdd().u8(kAttrXdpMode, 0).done(), EINVAL, "attribute XDP_MODE: 0 is not native");
  expectReject(portAdd().u8(kAttrXdpMode, 4).done(), EINVAL, "attribute XDP_MODE: 4");
  expectReject(portAdd("tap0", 1).nest(kAttrCreate).u8(kCreateMultiQueue, 2).end().done(), EINVAL,
               "attribute CREATE.MULTI_QUEUE: 2, expected 0 or 1");
  expectReject(Raw()
                   .hdr()
                   .genl(kCmdFdbAdd)
                   .mac(kAttrMac, kMac1)
                   .str(kAttrPortName, "vd0")
                   .u8(kAttrFdbStatic, 7)
                   .done(),
               EINVAL, "attribute FDB_STATIC: 7, expected 0 or 1");
}

TEST(CtlCodecReject, Macs) {
  expectReject(Raw().hdr().genl(kCmdFdbAdd).mac(kAttrMac, kMcast).str(kAttrPortName, "v").done(),
               EINVAL, "attribute MAC: 01:00:5e:00:00:01 is a multicast address");
  expectReject(Raw().hdr().genl(kCmdFdbDel).mac(kAttrMac, Mac{}).done(), EINVAL,
               "attribute MAC: 00:00:00:00:00:00 is not an address");
  expectReject(portAdd()
                   .nest(kAttrCreate)
                   .mac(kCreatePeerMac, Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
                   .end()
                   .done(),
               EINVAL, "attribute CREATE.PEER_MAC: ff:ff:ff:ff:ff:ff is a multicast address");
  expectReject(portAdd("t", 1).nest(kAttrCreate).mac(kCreateMac, kMcast).end().done(), EINVAL,
               "attribute CREATE.MAC");
}

TEST(CtlCodecReject, MissingRequired) {
  expectReject(Raw().hdr().genl(kCmdPortAdd).u8(kAttrPortType, 1).done(), EINVAL,
               "missing attribute PORT_NAME (required by PORT_ADD)");
  expectReject(Raw().hdr().genl(kCmdPortAdd).str(kAttrPortName, "x").done(), EINVAL,
               "missing attribute PORT_TYPE");
  expectReject(Raw().hdr().genl(kCmdPortDel).done(), EINVAL, "missing attribute PORT_NAME");
  expectReject(Raw().hdr().genl(kCmdFdbAdd).str(kAttrPortName, "x").done(), EINVAL,
               "missing attribute MAC (required by FDB_ADD)");
  expectReject(Raw().hdr().genl(kCmdFdbAdd).mac(kAttrMac, kMac1).done(), EINVAL,
               "missing attribute PORT_NAME (required by FDB_ADD)");
  expectReject(Raw().hdr().genl(kCmdFdbDel).done(), EINVAL, "missing attribute MAC");
  expectReject(Raw().hdr().genl(kCmdPortGet).done(), EINVAL, "PORT_GET needs attribute PORT_NAME");
}

TEST(CtlCodecReject, UnknownDuplicateAndMisplacedAttributes) {
  expectReject(portAdd().u32(99, 1).done(), EINVAL, "attribute type 99: unknown attribute");
  expectReject(portAdd().u32(0, 1).done(), EINVAL, "attribute type 0: unknown attribute");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "x").u32(kAttrMtu, 1500).done(),
               EINVAL, "attribute MTU is not valid for PORT_DEL");
  expectReject(Raw().hdr().genl(kCmdInfoGet).u32(kAttrThreads, 1).done(), EINVAL,
               "attribute THREADS is not valid for INFO_GET");
  expectReject(portAdd().u32(kAttrQueues, 1).u32(kAttrQueues, 2).done(), EINVAL,
               "attribute QUEUES: appears more than once");
  uint32_t one = 1;
  expectReject(portAdd().attr(kAttrQueues | NLA_F_NET_BYTEORDER, &one, 4).done(), EINVAL,
               "QUEUES: NLA_F_NET_BYTEORDER");
  expectReject(portAdd().attr(kAttrQueues | NLA_F_NESTED, &one, 4).done(), EINVAL,
               "QUEUES: NLA_F_NESTED set on a u32 attribute");
}

TEST(CtlCodecReject, TruncatedAttributes) {
  // 2 bytes of an attribute header.
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "x").raw("ab").done(), EINVAL,
               "truncated attribute header: 2 bytes left");
  // Length field larger than what is left.
  {
    auto b = Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "vd0").done();
    uint16_t big = 200;
    std::memcpy(&b[20], &big, 2);
    expectReject(b, EINVAL, "attribute PORT_NAME: length field 200 exceeds the 8 bytes left");
  }
  // Length field smaller than the attribute header.
  {
    auto b = Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "vd0").done();
    uint16_t tiny = 2;
    std::memcpy(&b[20], &tiny, 2);
    expectReject(b, EINVAL, "length field 2 is smaller than its header");
  }
}

TEST(CtlCodecReject, NestedGarbage) {
  expectReject(portAdd().nest(kAttrCreate).raw("abc").end().done(), EINVAL,
               "truncated attribute header: 3 bytes left at the end of CREATE");
  expectReject(portAdd().nest(kAttrCreate).u32(77, 1).end().done(), EINVAL,
               "attribute CREATE.type 77: unknown attribute");
  {
    // Inner length runs past the nest (but not past the message).
    auto b = portAdd().nest(kAttrCreate).u32(kCreateMtu, 1500).end().u32(kAttrQueues, 1).done();
    // The CREATE nest starts after hdr(16)+genl(4)+name(8)+type(8) = 36; its
    // first inner attribute at 40.
    uint16_t big = 16;
    std::memcpy(&b[40], &big, 2);
    expectReject(b, EINVAL, "attribute CREATE.MTU: length field 16 exceeds the 8 bytes left");
  }
  expectReject(portAdd().nest(kAttrCreate).nest(kCreateMtu).end().end().done(), EINVAL,
               "CREATE.MTU: NLA_F_NESTED set on a u32 attribute");
  expectReject(portAdd().u32(kAttrCreate, 5).done(), EINVAL,
               "attribute CREATE.type 0: length field 5 exceeds the 4 bytes left");
  expectReject(portAdd().nest(kAttrCreate).u32(kCreateMtu, 1500).u32(kCreateMtu, 1500).end().done(),
               EINVAL, "CREATE.MTU: appears more than once");
}

TEST(CtlCodecReject, CreateCombinations) {
  expectReject(portAdd("eth0", 3).nest(kAttrCreate).end().done(), EINVAL,
               "attribute CREATE is not valid for PORT_TYPE netdev");
  expectReject(portAdd().nest(kAttrCreate).u32(kCreateOwnerUid, 1).end().done(), EINVAL,
               "attribute CREATE.OWNER_UID is not valid for a veth");
  expectReject(portAdd().nest(kAttrCreate).u8(kCreateMultiQueue, 0).end().done(), EINVAL,
               "CREATE.MULTI_QUEUE is not valid for a veth");
  expectReject(portAdd("t0", 1).nest(kAttrCreate).str(kCreatePeerIfname, "eth0").end().done(),
               EINVAL, "attribute CREATE.PEER_IFNAME is not valid for a tap");
  expectReject(portAdd()
                   .nest(kAttrCreate)
                   .str(kCreatePeerNetnsName, "a")
                   .u32(kCreatePeerNetnsPid, 5)
                   .end()
                   .done(),
               EINVAL, "CREATE.PEER_NETNS_NAME and CREATE.PEER_NETNS_PID are mutually exclusive");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsName, "a/b").end().done(), EINVAL,
               "is not a name under /run/netns");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsName, "..").end().done(), EINVAL,
               "is not a name under /run/netns");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsName, "").end().done(), EINVAL,
               "PEER_NETNS_NAME: length 0");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsPath, "run/netns/a").end().done(),
               EINVAL, "is not an absolute path");
  expectReject(
      portAdd().nest(kAttrCreate).str(kCreatePeerNetnsPath, "/run/netns/../x").end().done(), EINVAL,
      "has a \"..\" component");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsPath, "/run/..").end().done(),
               EINVAL, "has a \"..\" component");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsPath, "/a\tb").end().done(), EINVAL,
               "non-printable");
  expectReject(
      portAdd().nest(kAttrCreate).str(kCreatePeerNetnsPath, std::string(4096, '/')).end().done(),
      EINVAL, "CREATE.PEER_NETNS_PATH: 4096 characters, at most 4095");
  expectReject(portAdd().nest(kAttrCreate).str(kCreatePeerIfname, "vd0").end().done(), EINVAL,
               "CREATE.PEER_IFNAME: \"vd0\" equals PORT_NAME in the same namespace");
  expectReject(portAdd("t0", 1).u32(kAttrQueues, 4).nest(kAttrCreate).end().done(), EINVAL,
               "4 queues need CREATE.MULTI_QUEUE for a tap");
  // Accepted: same name in another namespace, multi-queue tap, ".." inside a name.
  EXPECT_TRUE(decodeRequest(portAdd()
                                .nest(kAttrCreate)
                                .str(kCreatePeerIfname, "vd0")
                                .u32(kCreatePeerNetnsPid, 1)
                                .end()
                                .done())
                  .ok());
  EXPECT_TRUE(decodeRequest(portAdd("t0", 1)
                                .u32(kAttrQueues, 4)
                                .nest(kAttrCreate)
                                .u8(kCreateMultiQueue, 1)
                                .end()
                                .done())
                  .ok());
  EXPECT_TRUE(
      decodeRequest(portAdd().nest(kAttrCreate).str(kCreatePeerNetnsPath, "/run/a..b").end().done())
          .ok());
}

TEST(CtlCodec, ClientSideValidationMatchesDaemon) {
  auto r = encodeRequest(1, PortAddRequest{"vd0", PortType::kVeth, 0u, XdpMode::kAuto, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_EQ(r.error().what, "attribute QUEUES: 0 out of range 1..64");
  auto n = encodeRequest(1, PortDelRequest{std::string("a\0b", 3)});
  ASSERT_FALSE(n.ok());
  auto x = encodeRequest(1, PortAddRequest{"vd0", PortType::kVeth, 1u, XdpMode::kNone, {}});
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.error().what.find("XDP_MODE"), std::string::npos);
}

// ---------------------------------------------------------------- replies

TEST(CtlReply, AckAndErrorEchoSeq) {
  Request req = requestFor(PortDelRequest{"vd0"}, 555, 66);
  req.hdr.len = 28;
  auto ack = encodeAck(req.hdr);
  const auto* h = reinterpret_cast<const nlmsghdr*>(ack.data());
  EXPECT_EQ(h->nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(h->nlmsg_seq, 555u);
  EXPECT_EQ(h->nlmsg_pid, 66u);
  EXPECT_TRUE(h->nlmsg_flags & NLM_F_CAPPED);
  const auto* e = reinterpret_cast<const nlmsgerr*>(ack.data() + NLMSG_HDRLEN);
  EXPECT_EQ(e->error, 0);
  EXPECT_EQ(e->msg.nlmsg_seq, 555u);
  EXPECT_EQ(e->msg.nlmsg_len, 28u);
  auto r = decodeReply(ack, Expect{555, kCmdPortDel, false});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(std::holds_alternative<Ack>(*r));

  auto err = encodeError(req.hdr, ENODEV, "no port vd0");
  h = reinterpret_cast<const nlmsghdr*>(err.data());
  EXPECT_EQ(h->nlmsg_flags, NLM_F_CAPPED | NLM_F_ACK_TLVS);
  EXPECT_EQ(h->nlmsg_seq, 555u);
  auto d = decodeReply(err, Expect{555, kCmdPortDel, false});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(std::get<ErrorReply>(*d), (ErrorReply{ENODEV, "no port vd0"}));
  // Through encodeReply too.
  auto rr = replyRoundTrip(req, ErrorReply{EEXIST, "port vd0 exists"});
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(std::get<ErrorReply>(*rr), (ErrorReply{EEXIST, "port vd0 exists"}));
  // Errors answer GETs and dumps as well.
  auto g = replyRoundTrip(requestFor(StatsGetRequest{}), ErrorReply{EIO, "x"});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(std::get<ErrorReply>(*g).err, EIO);
}

TEST(CtlReply, ErrorMessageIsCutAndSanitised) {
  std::string longMsg(5000, 'a');
  longMsg[3] = '\n';
  auto e = encodeError(MsgHeader{}, -EINVAL, longMsg);
  auto d = decodeReply(e, Expect{0, kCmdInfoGet, false});
  ASSERT_TRUE(d.ok()) << d.error().message();
  const auto& er = std::get<ErrorReply>(*d);
  EXPECT_EQ(er.err, EINVAL);  // sign normalised
  EXPECT_EQ(er.msg.size(), kErrorMsgMax);
  EXPECT_EQ(er.msg[3], '?');
  // No message: no TLVs. Nonsense errno: EIO.
  auto n = encodeError(MsgHeader{}, 0, "");
  EXPECT_EQ(reinterpret_cast<const nlmsghdr*>(n.data())->nlmsg_flags, NLM_F_CAPPED);
  auto nd = decodeReply(n, Expect{0, kCmdInfoGet, false});
  ASSERT_TRUE(nd.ok());
  EXPECT_EQ(std::get<ErrorReply>(*nd).err, EIO);
}

TEST(CtlReply, PortGetSingleAndDump) {
  auto one = replyRoundTrip(requestFor(PortGetRequest{"vd0"}), PortList{{port("vd0", 1)}});
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(std::get<PortList>(*one), PortList{{port("vd0", 1)}});

  PortList all{{port("a", 1), port("b", 2), port("c", 3)}};
  auto dump = replyRoundTrip(requestFor(PortGetRequest{}), all);
  ASSERT_TRUE(dump.ok()) << dump.error().message();
  EXPECT_EQ(std::get<PortList>(*dump), all);

  auto none = replyRoundTrip(requestFor(PortGetRequest{}), PortList{});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(std::get<PortList>(*none).ports.empty());
}

TEST(CtlReply, StatsSingleAndDump) {
  StatsReply single{{portStats("vd0", 3)}, pool(), 17u};
  auto s = replyRoundTrip(requestFor(StatsGetRequest{"vd0"}), single);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(std::get<StatsReply>(*s), single);

  StatsReply dump{{portStats("a", 1), portStats("b", 2)}, pool(), 3u};
  std::vector<std::vector<uint8_t>> dgs;
  auto d = replyRoundTrip(requestFor(StatsGetRequest{}), dump, &dgs);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(std::get<StatsReply>(*d), dump);
  // First message: the pool alone; then one per port; then DONE.
  const auto* h = reinterpret_cast<const nlmsghdr*>(dgs[0].data());
  EXPECT_TRUE(h->nlmsg_flags & NLM_F_MULTI);

  StatsReply noPool{{portStats("a", 1)}, std::nullopt, std::nullopt};
  auto np = replyRoundTrip(requestFor(StatsGetRequest{}), noPool);
  ASSERT_TRUE(np.ok());
  EXPECT_EQ(std::get<StatsReply>(*np), noPool);

  StatsReply empty{{}, pool(), 0u};
  auto e = replyRoundTrip(requestFor(StatsGetRequest{}), empty);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(std::get<StatsReply>(*e), empty);
}

TEST(CtlReply, FdbAndInfo) {
  FdbList l{{{kMac1, "vd0", true, 0}, {kMac2, "vd1", false, 12345}}};
  auto f = replyRoundTrip(requestFor(FdbGetRequest{}), l);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(std::get<FdbList>(*f), l);

  InfoMsg i{"0.1.0", 1, SwitchMode::kXconnect, 3600, 4};
  auto r = replyRoundTrip(requestFor(InfoGetRequest{}), i);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<InfoMsg>(*r), i);

  auto ack = replyRoundTrip(requestFor(FdbAddRequest{kMac1, "vd0", true}), Ack{});
  ASSERT_TRUE(ack.ok());
  EXPECT_TRUE(std::holds_alternative<Ack>(*ack));
}

TEST(CtlReply, HandlerBugsBecomeEio) {
  auto a = encodeReply(requestFor(PortGetRequest{"x"}), Ack{});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().err, EIO);
  auto two = encodeReply(requestFor(PortGetRequest{"x"}), PortList{{port("a"), port("b")}});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().err, EIO);
  auto zero = encodeReply(requestFor(StatsGetRequest{"x"}), StatsReply{});
  ASSERT_FALSE(zero.ok());
  auto kind = encodeReply(requestFor(PortDelRequest{"x"}), InfoMsg{"1"});
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.error().err, EIO);
  auto badName = encodeReply(requestFor(PortGetRequest{}), PortList{{port("bad name")}});
  ASSERT_FALSE(badName.ok());
  EXPECT_NE(badName.error().what.find("invalid reply"), std::string::npos);
  auto badVer = encodeReply(requestFor(InfoGetRequest{}), InfoMsg{""});
  ASSERT_FALSE(badVer.ok());
}

TEST(CtlReply, DumpSplitsAcrossDatagramsNeverTruncates) {
  StatsReply big;
  for (uint32_t i = 0; i < 2000; ++i) big.ports.push_back(portStats("p" + std::to_string(i), i));
  big.pool = pool();
  big.fdb_entries = 2000;
  Request req = requestFor(StatsGetRequest{}, 4242, 9);
  auto dgs = encodeReply(req, big);
  ASSERT_TRUE(dgs.ok()) << dgs.error().message();
  ASSERT_GT(dgs->size(), 1u);
  size_t msgs = 0;
  for (const auto& d : *dgs) {
    ASSERT_LE(d.size(), kMaxMessageSize);
    // Whole messages only, every one echoing seq and pid.
    size_t off = 0;
    while (off < d.size()) {
      ASSERT_GE(d.size() - off, NLMSG_HDRLEN);
      nlmsghdr h;
      std::memcpy(&h, d.data() + off, sizeof h);
      ASSERT_LE(off + h.nlmsg_len, d.size());
      EXPECT_EQ(h.nlmsg_seq, 4242u);
      EXPECT_EQ(h.nlmsg_pid, 9u);
      EXPECT_TRUE(h.nlmsg_flags & NLM_F_MULTI);
      off += NLMSG_ALIGN(h.nlmsg_len);
      ++msgs;
    }
  }
  EXPECT_EQ(msgs, 2000u + 2);  // pool, ports, DONE
  // Datagrams are packed: all but the last are nearly full.
  for (size_t i = 0; i + 1 < dgs->size(); ++i) EXPECT_GT((*dgs)[i].size(), kMaxMessageSize - 1024);
  auto back = replyRoundTrip(req, big);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(std::get<StatsReply>(*back), big);
  // The concatenation decodes too.
  auto whole = decodeReply(concat(*dgs), Expect{4242, kCmdStatsGet, true});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(std::get<StatsReply>(*whole).ports.size(), 2000u);
}

TEST(CtlReply, FdbDumpOfManyEntries) {
  FdbList l;
  for (uint32_t i = 0; i < 10000; ++i)
    l.entries.push_back(
        {Mac{2, 0, 0, uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)}, "vd0", i % 2 == 0, i});
  std::vector<std::vector<uint8_t>> dgs;
  auto r = replyRoundTrip(requestFor(FdbGetRequest{}), l, &dgs);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<FdbList>(*r), l);
  EXPECT_GT(dgs.size(), 5u);
}

// ------------------------------------------------------- reply decoding errors

std::vector<uint8_t> dataMsg(uint8_t cmd, uint16_t flags, uint32_t seq,
                             const std::function<void(Raw&)>& attrs) {
  Raw r;
  r.hdr(kFamilyId, flags, seq).genl(cmd);
  attrs(r);
  return r.done();
}

Result<Reply> decodeBytes(const std::vector<uint8_t>& b, Expect e) { return decodeReply(b, e); }

TEST(CtlReplyReject, SeqCommandAndKind) {
  auto info = dataMsg(kCmdInfoGet, 0, 5, [](Raw& r) { r.str(kAttrVersion, "1.0"); });
  EXPECT_TRUE(decodeBytes(info, {5, kCmdInfoGet, false}).ok());
  auto bad = decodeBytes(info, {6, kCmdInfoGet, false});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().err, EPROTO);
  EXPECT_NE(bad.error().what.find("reply seq 5 does not match request seq 6"), std::string::npos);
  auto cmd = decodeBytes(info, {5, kCmdPortGet, false});
  ASSERT_FALSE(cmd.ok());
  EXPECT_NE(cmd.error().what.find("reply command INFO_GET answering PORT_GET"), std::string::npos);
  EXPECT_FALSE(decodeBytes(info, {5, kCmdPortAdd, false}).ok());  // data answering an action
  EXPECT_FALSE(decodeBytes(info, {5, kCmdInfoGet, true}).ok());   // dump without NLM_F_MULTI
  auto ack = encodeAck(MsgHeader{20, kFamilyId, 1, 5, 0});
  auto a = decodeBytes(ack, {5, kCmdPortGet, false});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().what.find("unexpected ACK"), std::string::npos);
  // A seq-0 connection-level error answers anything.
  auto busy = encodeError(MsgHeader{}, EBUSY, "too many");
  auto b = decodeBytes(busy, {5, kCmdPortGet, false});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::get<ErrorReply>(*b).err, EBUSY);
  // ...but a seq-0 data message does not.
  auto zero = dataMsg(kCmdInfoGet, 0, 0, [](Raw& r) { r.str(kAttrVersion, "1.0"); });
  EXPECT_FALSE(decodeBytes(zero, {5, kCmdInfoGet, false}).ok());
}

TEST(CtlReplyReject, DumpFraming) {
  Request req = requestFor(PortGetRequest{}, 8);
  auto dgs = encodeReply(req, PortList{{port("a"), port("b")}});
  ASSERT_TRUE(dgs.ok());
  auto all = concat(*dgs);
  // Without its DONE the reply is incomplete.
  auto doneAt = all.size() - 20;  // DONE: 16 + 4
  ReplyAssembler a(Expect{8, kCmdPortGet, true});
  ASSERT_TRUE(a.feed(std::span<const uint8_t>(all.data(), doneAt)).ok());
  EXPECT_FALSE(a.done());
  auto inc = a.finish();
  ASSERT_FALSE(inc.ok());
  EXPECT_NE(inc.error().what.find("incomplete reply"), std::string::npos);
  ASSERT_TRUE(a.feed(std::span<const uint8_t>(all.data() + doneAt, 20)).ok());
  EXPECT_TRUE(a.done());
  EXPECT_TRUE(a.finish().ok());
  // Anything after the end.
  auto more = a.feed(std::span<const uint8_t>(all.data(), 20));
  ASSERT_FALSE(more.ok());
  auto trailing = all;
  trailing.insert(trailing.end(), all.begin(), all.begin() + 20);
  EXPECT_FALSE(decodeBytes(trailing, {8, kCmdPortGet, true}).ok());
  // DONE answering a non-dump.
  auto doneOnly = std::vector<uint8_t>(all.end() - 20, all.end());
  EXPECT_FALSE(decodeBytes(doneOnly, {8, kCmdPortGet, false}).ok());
  EXPECT_TRUE(decodeBytes(doneOnly, {8, kCmdPortGet, true}).ok());
  // An error in the middle of a dump is the answer.
  auto mid = std::vector<uint8_t>(all.begin(), all.end() - 20);
  auto err = encodeError(req.hdr, ENOMEM, "out of memory");
  mid.insert(mid.end(), err.begin(), err.end());
  auto m = decodeBytes(mid, {8, kCmdPortGet, true});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<ErrorReply>(*m).err, ENOMEM);
  // A DONE carrying an error.
  auto doneErr =
      Raw().hdr(NLMSG_DONE, NLM_F_MULTI, 8).raw(std::string("\xf4\xff\xff\xff", 4)).done();
  auto de = decodeBytes(doneErr, {8, kCmdPortGet, true});
  ASSERT_TRUE(de.ok());
  EXPECT_EQ(std::get<ErrorReply>(*de).err, 12);
}

TEST(CtlReplyReject, MalformedMessages) {
  Expect e{1, kCmdInfoGet, false};
  EXPECT_FALSE(decodeBytes({}, e).ok());
  EXPECT_FALSE(decodeBytes(std::vector<uint8_t>(7, 0), e).ok());
  EXPECT_FALSE(decodeBytes(Raw().hdr(kFamilyId, 0, 1).genl(kCmdInfoGet).done(999), e).ok());
  EXPECT_FALSE(decodeBytes(Raw().hdr(kFamilyId, 0, 1).genl(kCmdInfoGet).done(3), e).ok());
  EXPECT_FALSE(decodeBytes(Raw().hdr(kFamilyId, 0, 1).raw("x").done(), e).ok());
  EXPECT_FALSE(decodeBytes(Raw().hdr(kFamilyId, 0, 1).genl(kCmdInfoGet, 0).done(), e).ok());
  EXPECT_FALSE(decodeBytes(Raw().hdr(0x33, 0, 1).done(), e).ok());
  EXPECT_FALSE(decodeBytes(Raw().hdr(NLMSG_OVERRUN, 0, 1).done(), e).ok());
  // INFO without VERSION; VERSION not a string.
  EXPECT_FALSE(
      decodeBytes(dataMsg(kCmdInfoGet, 0, 1, [](Raw& r) { r.u32(kAttrThreads, 1); }), e).ok());
  EXPECT_FALSE(
      decodeBytes(dataMsg(kCmdInfoGet, 0, 1, [](Raw& r) { r.u32(kAttrVersion, 1); }), e).ok());
  // NLMSG_ERROR: truncated; positive; INT_MIN; TLVs beyond the message.
  auto errMsg = [](int32_t err, uint16_t flags, const std::string& tail) {
    Raw r;
    r.hdr(NLMSG_ERROR, flags, 1).raw(std::string(reinterpret_cast<const char*>(&err), 4));
    r.raw(std::string(16, '\0')).raw(tail);
    return r.done();
  };
  EXPECT_FALSE(decodeBytes(Raw().hdr(NLMSG_ERROR, 0, 1).raw("abcd").done(), e).ok());
  EXPECT_FALSE(decodeBytes(errMsg(5, NLM_F_CAPPED, ""), e).ok());
  EXPECT_FALSE(decodeBytes(errMsg(INT32_MIN, NLM_F_CAPPED, ""), e).ok());
  // Uncapped: TLVs follow the echoed request (here 16 zero bytes: garbage TLVs).
  EXPECT_FALSE(decodeBytes(errMsg(-22, NLM_F_ACK_TLVS, ""), e).ok());
  auto uncapped = errMsg(-22, 0, "");
  EXPECT_TRUE(decodeBytes(uncapped, e).ok());
  EXPECT_FALSE(decodeBytes(errMsg(-22, NLM_F_CAPPED | NLM_F_ACK_TLVS, "ab"), e).ok());
  // Stats: POOL twice; a dump message with neither port nor pool.
  Expect st{1, kCmdStatsGet, true};
  auto poolMsg = dataMsg(kCmdStatsGet, NLM_F_MULTI, 1,
                         [](Raw& r) { r.nest(kAttrPool).u64(attrOf(stats::kPoolTotal), 1).end(); });
  auto twice = poolMsg;
  twice.insert(twice.end(), poolMsg.begin(), poolMsg.end());
  auto t = decodeBytes(twice, st);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().what.find("POOL sent twice"), std::string::npos);
  auto neither = dataMsg(kCmdStatsGet, NLM_F_MULTI, 1, [](Raw& r) { r.u32(kAttrMtu, 1); });
  EXPECT_FALSE(decodeBytes(neither, st).ok());
  // Nested garbage in a reply.
  auto badNest = dataMsg(kCmdStatsGet, 0, 1, [](Raw& r) {
    r.str(kAttrPortName, "a").nest(kAttrStats).raw("xy").end();
  });
  EXPECT_FALSE(decodeBytes(badNest, {1, kCmdStatsGet, false}).ok());
}

// HOOK: optional in PORT_ADD (absent = vdevd's --default-hook, and then not
// on the wire, so an older daemon still takes the request); xdp(1) or tc(2).
TEST(CtlCodec, HookInPortAddAndPortReplies) {
  PortAddRequest tc{"vm1", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  tc.hook = PortHook::kTc;
  PortAddRequest xdp = tc;
  xdp.hook = PortHook::kXdp;
  PortAddRequest absent{"vm1", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  expectRoundTrip(tc);
  expectRoundTrip(xdp);
  expectRoundTrip(absent);
  EXPECT_EQ(enc(absent).size() + 8, enc(tc).size()) << "HOOK is one u8 attribute (8 bytes)";
  auto d = decodeRequest(enc(tc));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(d->body).hook, std::optional<PortHook>(PortHook::kTc));
  auto a = decodeRequest(enc(absent));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_FALSE(std::get<PortAddRequest>(a->body).hook.has_value());
  expectReject(portAdd().u8(kAttrHook, 0).done(), EINVAL, "attribute HOOK: 0 is not xdp(1) or tc(2)");
  expectReject(portAdd().u8(kAttrHook, 3).done(), EINVAL, "attribute HOOK: 3 is not xdp(1) or tc(2)");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "vd0").u8(kAttrHook, 1).done(), EINVAL,
               "attribute HOOK is not valid for PORT_DEL");
  EXPECT_STREQ(attrName(kAttrHook), "HOOK");
  // Replies carry the port's hook.
  PortInfo p = port("vm1", 1);
  p.hook = PortHook::kTc;
  auto pl = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{p}});
  ASSERT_TRUE(pl.ok()) << pl.error().message();
  EXPECT_EQ(std::get<PortList>(*pl).ports.at(0).hook, std::optional<PortHook>(PortHook::kTc));
}

// UPLINK: in port replies only, and only when set (absent: 0); not valid
// in a request.
TEST(CtlCodec, UplinkInPortReplies) {
  PortInfo up = port("vx0", 1);
  up.uplink = true;
  const PortInfo local = port("c1", 2);
  auto pl = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{up, local}});
  ASSERT_TRUE(pl.ok()) << pl.error().message();
  EXPECT_TRUE(std::get<PortList>(*pl).ports.at(0).uplink);
  EXPECT_FALSE(std::get<PortList>(*pl).ports.at(1).uplink);
  expectReject(portAdd().u8(kAttrUplink, 1).done(), EINVAL, "attribute UPLINK is not valid for PORT_ADD");
  EXPECT_STREQ(attrName(kAttrUplink), "UPLINK");
}

// TC_ATTACH and HOOK_NOTE: in port replies only, each only when there is
// one (a port without an skb program; a port where auto put it); HOOK_NOTE
// cut to kHookNoteMax, non-printable bytes '?'. Neither is a request's.
TEST(CtlCodec, TcAttachAndHookNoteInPortReplies) {
  PortInfo tc = port("c1", 1);
  tc.hook = PortHook::kTc;
  tc.tc_attach = TcAttach::kClsact;
  PortInfo moved = port("c2", 2);
  moved.hook = PortHook::kXdp;
  moved.hook_note = "at the XDP hook, not tc: attach failed";
  const PortInfo plain = port("c3", 3);
  auto pl = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{tc, moved, plain}});
  ASSERT_TRUE(pl.ok()) << pl.error().message();
  EXPECT_EQ(std::get<PortList>(*pl).ports.at(0), tc);
  EXPECT_EQ(std::get<PortList>(*pl).ports.at(1), moved);
  EXPECT_EQ(std::get<PortList>(*pl).ports.at(2), plain);
  EXPECT_FALSE(std::get<PortList>(*pl).ports.at(2).tc_attach);
  EXPECT_TRUE(std::get<PortList>(*pl).ports.at(2).hook_note.empty());
  PortInfo longNote = port("c4", 4);
  longNote.hook_note = std::string(600, 'x') + "\n";
  longNote.hook_note[3] = '\x01';
  auto cut = replyRoundTrip(requestFor(PortGetRequest{"c4"}), PortList{{longNote}});
  ASSERT_TRUE(cut.ok()) << cut.error().message();
  const std::string& got = std::get<PortList>(*cut).ports.at(0).hook_note;
  EXPECT_EQ(got.size(), kHookNoteMax);
  EXPECT_EQ(got.substr(0, 5), "xxx?x");
  expectReject(portAdd().u8(kAttrTcAttach, 1).done(), EINVAL, "attribute TC_ATTACH is not valid for PORT_ADD");
  expectReject(portAdd().str(kAttrHookNote, "x").done(), EINVAL, "attribute HOOK_NOTE is not valid for PORT_ADD");
  EXPECT_STREQ(attrName(kAttrTcAttach), "TC_ATTACH");
  EXPECT_STREQ(attrName(kAttrHookNote), "HOOK_NOTE");
  EXPECT_STREQ(tcAttachName(TcAttach::kTcx), "tcx");
  EXPECT_STREQ(tcAttachName(TcAttach::kClsact), "clsact");
  EXPECT_STREQ(tcAttachName(static_cast<TcAttach>(9)), "unknown");
}

// ISOLATED: optional in PORT_ADD (absent = not isolated, and then not on the
// wire, so an older daemon still takes the request), in port replies when set.
TEST(CtlCodec, IsolatedInPortAddAndPortReplies) {
  PortAddRequest on{"c1", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  on.isolated = true;
  PortAddRequest absent{"c1", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  expectRoundTrip(on);
  expectRoundTrip(absent);
  EXPECT_EQ(enc(absent).size() + 8, enc(on).size()) << "ISOLATED is one u8 attribute (8 bytes)";
  auto d = decodeRequest(enc(on));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(d->body).isolated, std::optional<bool>(true));
  expectReject(portAdd().u8(kAttrIsolated, 2).done(), EINVAL, "attribute ISOLATED: 2, expected 0 or 1");
  EXPECT_STREQ(attrName(kAttrIsolated), "ISOLATED");
  PortInfo p = port("c1", 1);
  p.isolated = true;
  auto pl = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{p, port("c2", 2)}});
  ASSERT_TRUE(pl.ok()) << pl.error().message();
  EXPECT_TRUE(std::get<PortList>(*pl).ports.at(0).isolated);
  EXPECT_FALSE(std::get<PortList>(*pl).ports.at(1).isolated);
}

// STORM_* and POLICE_*: each optional in PORT_ADD (absent = vdevd's default,
// and then not on the wire, so an older daemon still takes the request; 0 =
// no limit and sent), all six in port replies; POLICE_BURST 0 refused.
TEST(CtlCodec, LimitsInPortAddAndPortReplies) {
  PortAddRequest none{"c1", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  PortAddRequest all = none;
  all.limits = {100, 0, 4294967295u, 0, 10000000000ull, 25};
  PortAddRequest some = none;
  some.limits.storm_bcast = 0;  // off: given, so on the wire
  some.limits.police_bps = 18446744073709551615ull;
  expectRoundTrip(none);
  expectRoundTrip(all);
  expectRoundTrip(some);
  EXPECT_EQ(enc(none).size() + 4 * 8 + 2 * 12, enc(all).size()) << "4 u32 and 2 u64 attributes";
  EXPECT_EQ(enc(none).size() + 8 + 12, enc(some).size()) << "only what is given";
  auto d = decodeRequest(enc(all));
  ASSERT_TRUE(d.ok()) << d.error().message();
  const LimitOptions& l = std::get<PortAddRequest>(d->body).limits;
  EXPECT_EQ(l.storm_bcast, std::optional<uint32_t>(100));
  EXPECT_EQ(l.storm_mcast, std::optional<uint32_t>(0));
  EXPECT_EQ(l.storm_unknown, std::optional<uint32_t>(4294967295u));
  EXPECT_EQ(l.police_pps, std::optional<uint64_t>(0));
  EXPECT_EQ(l.police_bps, std::optional<uint64_t>(10000000000ull));
  EXPECT_EQ(l.police_burst_ms, std::optional<uint32_t>(25));
  auto n = decodeRequest(enc(none));
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(n->body).limits, LimitOptions{});

  // A burst of 0 is refused by both sides; the rates' types are exact.
  PortAddRequest zero = none;
  zero.limits.police_burst_ms = 0;
  auto e = encodeRequest(1, zero);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().what.find("attribute POLICE_BURST: 0 ms is no burst"), std::string::npos) << e.error().what;
  expectReject(portAdd().u32(kAttrPoliceBurst, 0).done(), EINVAL, "attribute POLICE_BURST: 0 ms is no burst");
  expectReject(portAdd().u64(kAttrStormBcast, 1).done(), EINVAL,
               "attribute STORM_BCAST: payload of 8 bytes, expected 4 (u32)");
  expectReject(portAdd().u32(kAttrPoliceBps, 1).done(), EINVAL,
               "attribute POLICE_BPS: payload of 4 bytes, expected 8 (u64)");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "c1").u32(kAttrStormMcast, 1).done(), EINVAL,
               "attribute STORM_MCAST is not valid for PORT_DEL");
  EXPECT_STREQ(attrName(kAttrStormBcast), "STORM_BCAST");
  EXPECT_STREQ(attrName(kAttrStormMcast), "STORM_MCAST");
  EXPECT_STREQ(attrName(kAttrStormUnknown), "STORM_UNKNOWN");
  EXPECT_STREQ(attrName(kAttrPolicePps), "POLICE_PPS");
  EXPECT_STREQ(attrName(kAttrPoliceBps), "POLICE_BPS");
  EXPECT_STREQ(attrName(kAttrPoliceBurst), "POLICE_BURST");

  // Replies: the effective values, zeros included; a port without them (an
  // older daemon) has none.
  PortInfo p = port("c1", 1);
  p.limits = Limits{10000, 10000, 10000, 0, 100000000, 10};
  PortInfo off = port("c2", 2);
  off.limits = Limits{};
  auto pl = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{p, off, port("c3", 3)}});
  ASSERT_TRUE(pl.ok()) << pl.error().message();
  const auto& ports = std::get<PortList>(*pl).ports;
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0].limits, p.limits);
  EXPECT_EQ(ports[1].limits, std::optional<Limits>(Limits{})) << "all zeros: no limit, not absent";
  EXPECT_FALSE(ports[2].limits);
  // STATS_GET replies carry them too (the port's attributes).
  PortStatsMsg sm{p, {}};
  auto sr = replyRoundTrip(requestFor(StatsGetRequest{"c1"}), StatsReply{{sm}, std::nullopt, std::nullopt});
  ASSERT_TRUE(sr.ok()) << sr.error().message();
  EXPECT_EQ(std::get<StatsReply>(*sr).ports.at(0).port.limits, p.limits);
  // ALLOWED_MAC: in PORT_ADD when given; in replies while the port has one.
  PortAddRequest locked = none;
  locked.limits.allowed_mac = Mac{2, 1, 2, 3, 4, 5};
  expectRoundTrip(locked);
  EXPECT_EQ(enc(none).size() + 12, enc(locked).size()) << "one 6-byte attribute";
  PortInfo lp = p;
  lp.limits->allowed_mac = Mac{2, 1, 2, 3, 4, 5};
  auto lr = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{lp, p}});
  ASSERT_TRUE(lr.ok()) << lr.error().message();
  EXPECT_EQ(std::get<PortList>(*lr).ports.at(0).limits->allowed_mac, lp.limits->allowed_mac);
  EXPECT_TRUE(macIsZero(std::get<PortList>(*lr).ports.at(1).limits->allowed_mac)) << "none: any source";
  // ALLOWED_IPS: 16 bytes an address, likewise.
  PortAddRequest ips = none;
  ips.limits.allowed_ips = {*parseIp("198.18.0.2"), *parseIp("2001:db8::2")};
  expectRoundTrip(ips);
  EXPECT_EQ(enc(none).size() + 4 + 32, enc(ips).size()) << "one attribute of two addresses";
  lp.limits->allowed_ips = *ips.limits.allowed_ips;
  auto ir = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{lp, p}});
  ASSERT_TRUE(ir.ok()) << ir.error().message();
  EXPECT_EQ(std::get<PortList>(*ir).ports.at(0).limits->allowed_ips, lp.limits->allowed_ips);
  EXPECT_TRUE(std::get<PortList>(*ir).ports.at(1).limits->allowed_ips.empty());
  // RA_GUARD, DHCP_GUARD: given on or off in requests, present while on in
  // replies.
  PortAddRequest guarded = none;
  guarded.limits.ra_guard = true;
  guarded.limits.dhcp_guard = false;
  expectRoundTrip(guarded);
  EXPECT_EQ(enc(none).size() + 16, enc(guarded).size()) << "two u8 attributes";
  PortInfo gp = p;
  gp.limits->dhcp_guard = true;
  auto gr = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{gp, p}});
  ASSERT_TRUE(gr.ok()) << gr.error().message();
  EXPECT_FALSE(std::get<PortList>(*gr).ports.at(0).limits->ra_guard);
  EXPECT_TRUE(std::get<PortList>(*gr).ports.at(0).limits->dhcp_guard);
  EXPECT_FALSE(std::get<PortList>(*gr).ports.at(1).limits->dhcp_guard);
  PortSetRequest raOff{"c1"};
  raOff.limits.ra_guard = false;  // turning it off is a change
  expectRoundTrip(raOff);
  EXPECT_STREQ(attrName(kAttrRaGuard), "RA_GUARD");
  EXPECT_STREQ(attrName(kAttrDhcpGuard), "DHCP_GUARD");
}

// VLAN_PVID, VLAN_TAGGED, VLAN_UNTAGGED: the whole settings when given,
// VLAN_PVID 0 alone for none; in replies while the port has some. VLAN_ID
// on FDB entries and requests.
TEST(CtlCodec, VlansRoundTripAndBadOnesAreRefused) {
  PortAddRequest trunk{"c1", PortType::kVeth};
  VlanConfig& v = trunk.limits.vlan.emplace();
  v.tagged = *parseVidList("10,20-29");
  v.pvid = 5;
  v.untagged = *parseVidList("1,5");
  expectRoundTrip(trunk);
  PortSetRequest none{"c1"};
  none.limits.vlan = VlanConfig{};  // taking them away is a change
  expectRoundTrip(none);
  PortSetRequest iso{"c1", true};
  none.isolated = true;
  EXPECT_EQ(enc(none).size(), enc(iso).size() + 8) << "VLAN_PVID alone";
  PortInfo p;
  p.name = "c1";
  p.limits = Limits{};
  p.limits->vlan = v;
  PortInfo q = p;
  q.limits->vlan = {};
  auto r = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{p, q}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<PortList>(*r).ports.at(0).limits->vlan, v);
  EXPECT_FALSE(std::get<PortList>(*r).ports.at(1).limits->vlan.configured());
  FdbAddRequest fa{Mac{2, 0, 0, 0, 0, 1}, "c1", true, 20};
  expectRoundTrip(fa);
  expectRoundTrip(FdbDelRequest{Mac{2, 0, 0, 0, 0, 1}, 4094});
  auto fl = replyRoundTrip(requestFor(FdbGetRequest{}), FdbList{{FdbEntryMsg{Mac{2, 0, 0, 0, 0, 1}, "c1", false, 7, 20}}});
  ASSERT_TRUE(fl.ok()) << fl.error().message();
  EXPECT_EQ(std::get<FdbList>(*fl).entries.at(0).vid, 20);
  // Refused before the wire: both tagged and untagged, a PVID not untagged, VID 0.
  PortSetRequest both{"c1"};
  both.limits.vlan = v;
  both.limits.vlan->untagged.set(10);
  EXPECT_NE(encodeRequest(1, both).error().what.find("VLAN 10 both tagged and untagged"), std::string::npos);
  PortSetRequest pvid{"c1"};
  pvid.limits.vlan.emplace().pvid = 7;
  EXPECT_NE(encodeRequest(1, pvid).error().what.find("the native VLAN 7 is not among the untagged ones"),
            std::string::npos);
  EXPECT_NE(encodeRequest(1, FdbDelRequest{Mac{2, 0, 0, 0, 0, 1}, 0}).error().what.find("attribute VLAN_ID: 0"),
            std::string::npos);
  // On the wire: a range out of order or out of bounds, a payload not whole ranges.
  const std::pair<std::string, const char*> wire[] = {
      {std::string("\x0a\x00\x05\x00", 4), "range 10-5"},
      {std::string("\x00\x00\x05\x00", 4), "range 0-5"},
      {std::string("\x01\x00\xff\x0f", 4), "range 1-4095"},
      {std::string("\x01\x00\x02", 3), "payload of 3 bytes"},
  };
  for (const auto& [bytes, what] : wire) {
    auto m = Raw()
                 .hdr(kFamilyId, NLM_F_REQUEST | NLM_F_ACK)
                 .genl(kCmdPortSet)
                 .str(kAttrPortName, "c1")
                 .bytes(kAttrVlanTagged, bytes)
                 .done();
    auto d = decodeRequest(m);
    ASSERT_FALSE(d.ok()) << what;
    EXPECT_NE(d.error().what.find(std::string("attribute VLAN_TAGGED: ") + what), std::string::npos) << d.error().what;
  }
  EXPECT_STREQ(attrName(kAttrVlanPvid), "VLAN_PVID");
  EXPECT_STREQ(attrName(kAttrVlanId), "VLAN_ID");
}

// ALLOWED_IPS: none unspecified, multicast, reserved or repeated; at most
// four of each family; a payload that is not whole addresses is malformed.
TEST(CtlCodecReject, AllowedIps) {
  PortSetRequest set{"c1"};
  set.limits.allowed_ips = std::vector<IpAddr>{};  // any: a change
  expectRoundTrip(set);
  const std::pair<std::vector<const char*>, const char*> bad[] = {
      {{"0.0.0.0"}, "0.0.0.0 is not an address a port sends from"},
      {{"::"}, ":: is not an address a port sends from"},
      {{"224.0.0.1"}, "224.0.0.1 is not an address"},
      {{"255.255.255.255"}, "255.255.255.255 is not an address"},
      {{"ff02::1"}, "ff02::1 is not an address"},
      {{"198.18.0.2", "198.18.0.2"}, "198.18.0.2 appears more than once"},
      {{"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4", "198.18.0.5"},
       "5 IPv4 and 0 IPv6 addresses, at most 4 of each"},
  };
  for (const auto& [addrs, what] : bad) {
    PortSetRequest r{"c1"};
    auto& v = r.limits.allowed_ips.emplace();
    for (const char* a : addrs) v.push_back(*parseIp(a));
    auto e = encodeRequest(1, r);
    ASSERT_FALSE(e.ok()) << what;
    EXPECT_NE(e.error().what.find(std::string("attribute ALLOWED_IPS: ") + what), std::string::npos)
        << e.error().what;
  }
  // Four of each is the most.
  PortSetRequest eight{"c1"};
  auto& v = eight.limits.allowed_ips.emplace();
  for (const char* a : {"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4", "2001:db8::1", "2001:db8::2",
                        "2001:db8::3", "2001:db8::4"})
    v.push_back(*parseIp(a));
  expectRoundTrip(eight);
  EXPECT_STREQ(attrName(kAttrAllowedIps), "ALLOWED_IPS");
  // On the wire: 17 bytes, and nine addresses, are refused by the decoder.
  for (size_t len : {size_t(17), size_t(16 * 9)}) {
    auto m = Raw()
                 .hdr(kFamilyId, NLM_F_REQUEST | NLM_F_ACK)
                 .genl(kCmdPortSet)
                 .str(kAttrPortName, "c1")
                 .bytes(kAttrAllowedIps, std::string(len, '\x20'))
                 .done();
    auto d = decodeRequest(m);
    ASSERT_FALSE(d.ok()) << len;
    EXPECT_NE(d.error().what.find("attribute ALLOWED_IPS: payload of " + std::to_string(len) + " bytes"),
              std::string::npos)
        << d.error().what;
  }
}

// PORT_SET: PORT_NAME and at least one of ISOLATED, STORM_*, POLICE_*;
// each given one on the wire, nothing else allowed; answered with an ACK.
TEST(CtlCodec, PortSetCarriesOnlyWhatChanges) {
  PortSetRequest iso{"c1", true};
  PortSetRequest lim{"c1"};
  lim.limits = {0, std::nullopt, 5000, std::nullopt, 10000000000ull, 100};
  PortSetRequest both = lim;
  both.isolated = false;
  expectRoundTrip(iso);
  expectRoundTrip(lim);
  expectRoundTrip(both);
  EXPECT_EQ(enc(iso).size() - 8 + 3 * 8 + 12, enc(lim).size()) << "no ISOLATED (u8); 3 u32 and 1 u64 limits";
  auto d = decodeRequest(enc(both));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(cmdOf(d->body), kCmdPortSet);
  const auto& b = std::get<PortSetRequest>(d->body);
  EXPECT_EQ(b.isolated, std::optional<bool>(false));
  EXPECT_EQ(b.limits.storm_bcast, std::optional<uint32_t>(0)) << "0: no limit, given";
  EXPECT_FALSE(b.limits.storm_mcast);
  EXPECT_EQ(b.limits.police_bps, std::optional<uint64_t>(10000000000ull));
  EXPECT_STREQ(cmdName(kCmdPortSet), "PORT_SET");
  // ALLOWED_MAC alone is a change; all zeros (any source) too; a group
  // address is refused.
  PortSetRequest mac{"c1"};
  mac.limits.allowed_mac = Mac{2, 0, 0, 0, 0, 9};
  expectRoundTrip(mac);
  mac.limits.allowed_mac = Mac{};
  expectRoundTrip(mac);
  mac.limits.allowed_mac = Mac{1, 0, 0x5e, 0, 0, 1};
  auto group = encodeRequest(1, mac);
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().what.find("attribute ALLOWED_MAC: 01:00:5e:00:00:01 is a multicast address"),
            std::string::npos)
      << group.error().what;
  EXPECT_STREQ(attrName(kAttrAllowedMac), "ALLOWED_MAC");
  auto setMsg = [] { return Raw().hdr(kFamilyId, NLM_F_REQUEST | NLM_F_ACK).genl(kCmdPortSet); };
  // Nothing to change, a bad burst, an attribute a running port cannot change.
  auto empty = encodeRequest(1, PortSetRequest{"c1"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().what.find("changes nothing"), std::string::npos) << empty.error().what;
  expectReject(setMsg().str(kAttrPortName, "c1").done(), EINVAL, "PORT_SET of c1 changes nothing");
  expectReject(setMsg().u8(kAttrIsolated, 1).done(), EINVAL, "missing attribute PORT_NAME (required by PORT_SET)");
  expectReject(setMsg().str(kAttrPortName, "c1").u32(kAttrPoliceBurst, 0).done(), EINVAL,
               "attribute POLICE_BURST: 0 ms is no burst");
  expectReject(setMsg().str(kAttrPortName, "c1").u8(kAttrIsolated, 1).u32(kAttrQueues, 2).done(), EINVAL,
               "attribute QUEUES is not valid for PORT_SET");
  expectReject(setMsg().str(kAttrPortName, "c1").u8(kAttrIsolated, 1).u8(kAttrFastRx, 0).done(), EINVAL,
               "attribute FAST_RX is not valid for PORT_SET");
  expectReject(Raw().hdr(kFamilyId, NLM_F_REQUEST | NLM_F_DUMP).genl(kCmdPortSet).done(), EOPNOTSUPP,
               "PORT_SET cannot be dumped");
  // The answer is an ACK, nothing else.
  auto ack = replyRoundTrip(requestFor(iso), Ack{});
  ASSERT_TRUE(ack.ok()) << ack.error().message();
  EXPECT_TRUE(std::holds_alternative<Ack>(*ack));
  EXPECT_FALSE(encodeReply(requestFor(iso), PortList{}).ok());
}

// FAST_RX: optional in PORT_ADD (absent = on, and then not on the wire),
// always in port replies; strictly 0 or 1 both ways.
TEST(CtlCodec, FastRxInPortAddAndPortReplies) {
  PortAddRequest off{"tap-vm1", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}, false};
  PortAddRequest on{"tap-vm1", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}, true};
  PortAddRequest absent{"tap-vm1", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  expectRoundTrip(off);
  expectRoundTrip(on);
  expectRoundTrip(absent);
  auto d = decodeRequest(enc(off));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(d->body).fast_rx, std::optional<bool>(false));
  // Absent stays absent: an older daemon, which would refuse the attribute,
  // still takes a request that does not ask for fast-rx off.
  EXPECT_EQ(enc(absent).size() + 8, enc(off).size()) << "FAST_RX is one u8 attribute (8 bytes)";
  auto a = decodeRequest(enc(absent));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_FALSE(std::get<PortAddRequest>(a->body).fast_rx.has_value());
  // Hand-made: 0 and 1 decode, anything else is refused by name.
  auto raw0 = decodeRequest(portAdd().u8(kAttrFastRx, 0).done());
  ASSERT_TRUE(raw0.ok()) << raw0.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(raw0->body).fast_rx, std::optional<bool>(false));
  auto raw1 = decodeRequest(portAdd().u8(kAttrFastRx, 1).done());
  ASSERT_TRUE(raw1.ok()) << raw1.error().message();
  EXPECT_EQ(std::get<PortAddRequest>(raw1->body).fast_rx, std::optional<bool>(true));
  expectReject(portAdd().u8(kAttrFastRx, 2).done(), EINVAL, "attribute FAST_RX: 2, expected 0 or 1");
  expectReject(portAdd().u8(kAttrFastRx, 255).done(), EINVAL, "attribute FAST_RX: 255, expected 0 or 1");
  expectReject(portAdd().u32(kAttrFastRx, 0).done(), EINVAL,
               "attribute FAST_RX: payload of 4 bytes, expected 1 (u8 0|1)");
  expectReject(portAdd().u8(kAttrFastRx, 0).u8(kAttrFastRx, 0).done(), EINVAL,
               "attribute FAST_RX: appears more than once");
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "vd0").u8(kAttrFastRx, 0).done(),
               EINVAL, "attribute FAST_RX is not valid for PORT_DEL");
  EXPECT_STREQ(attrName(kAttrFastRx), "FAST_RX");

  // Replies: the port's value both ways, in PORT_GET and STATS_GET.
  PortInfo slow = port("vm1", 1), fast = port("vd0", 3);
  slow.fast_rx = false;
  ASSERT_TRUE(fast.fast_rx);
  auto pl = replyRoundTrip(requestFor(PortGetRequest{}), PortList{{slow, fast}});
  ASSERT_TRUE(pl.ok()) << pl.error().message();
  ASSERT_EQ(std::get<PortList>(*pl).ports.size(), 2u);
  EXPECT_FALSE(std::get<PortList>(*pl).ports[0].fast_rx);
  EXPECT_TRUE(std::get<PortList>(*pl).ports[1].fast_rx);
  PortStatsMsg st = portStats("vm1", 5);
  st.port.fast_rx = false;
  auto sr = replyRoundTrip(requestFor(StatsGetRequest{"vm1"}), StatsReply{{st}, pool(), 1u});
  ASSERT_TRUE(sr.ok()) << sr.error().message();
  EXPECT_FALSE(std::get<StatsReply>(*sr).ports.at(0).port.fast_rx);
  // An older daemon sends no FAST_RX: its ports have the fast path for what they receive.
  auto old = decodeBytes(dataMsg(kCmdPortGet, 0, 3, [](Raw& r) { r.str(kAttrPortName, "vd0"); }),
                         {3, kCmdPortGet, false});
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_TRUE(std::get<PortList>(*old).ports.at(0).fast_rx);
  auto zero = decodeBytes(
      dataMsg(kCmdPortGet, 0, 3, [](Raw& r) { r.str(kAttrPortName, "vd0").u8(kAttrFastRx, 0); }),
      {3, kCmdPortGet, false});
  ASSERT_TRUE(zero.ok()) << zero.error().message();
  EXPECT_FALSE(std::get<PortList>(*zero).ports.at(0).fast_rx);
  auto bad = decodeBytes(
      dataMsg(kCmdPortGet, 0, 3, [](Raw& r) { r.str(kAttrPortName, "vd0").u8(kAttrFastRx, 2); }),
      {3, kCmdPortGet, false});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("attribute FAST_RX: 2, expected 0 or 1"), std::string::npos)
      << bad.error().what;
}

TEST(CtlReply, UnknownAttributesAndEnumValuesAreIgnored) {
  // A newer daemon: an unknown top-level attribute, an unknown STATS counter,
  // an XDP mode this client does not know.
  auto msg = dataMsg(kCmdStatsGet, 0, 3, [](Raw& r) {
    r.str(kAttrPortName, "vd0")
        .u8(kAttrXdpMode, 9)
        .u32(200, 1)
        .nest(kAttrStats)
        .u64(attrOf(stats::kRxPackets), 5)
        .u64(stats::kPortAttrMax + 1, 1)
        .end()
        .nest(300)
        .u32(1, 1)
        .end();
  });
  auto r = decodeBytes(msg, {3, kCmdStatsGet, false});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const auto& s = std::get<StatsReply>(*r);
  ASSERT_EQ(s.ports.size(), 1u);
  EXPECT_EQ(s.ports[0].counters[stats::kRxPackets], 5u);
  EXPECT_EQ(static_cast<int>(s.ports[0].port.xdp_mode), 9);
  EXPECT_STREQ(xdpModeName(s.ports[0].port.xdp_mode), "unknown");
  // Known attributes are still checked.
  auto bad =
      dataMsg(kCmdStatsGet, 0, 3, [](Raw& r) { r.str(kAttrPortName, "vd0").u16(kAttrMtu, 1); });
  EXPECT_FALSE(decodeBytes(bad, {3, kCmdStatsGet, false}).ok());
}

// ---------------------------------------------------------------- counters

// The u64 attributes inside the nest `nest` of the first message of `dg`, in
// order: (type, value).
std::vector<std::pair<uint16_t, uint64_t>> nestedU64s(const std::vector<uint8_t>& dg, uint16_t nest) {
  std::vector<std::pair<uint16_t, uint64_t>> out;
  const auto attrAt = [&](size_t o) {
    nlattr a;
    std::memcpy(&a, dg.data() + o, sizeof a);
    return a;
  };
  nlmsghdr h;
  std::memcpy(&h, dg.data(), sizeof h);
  for (size_t off = NLMSG_HDRLEN + GENL_HDRLEN; off + NLA_HDRLEN <= h.nlmsg_len;) {
    const nlattr a = attrAt(off);
    if ((a.nla_type & NLA_TYPE_MASK) == nest) {
      for (size_t in = off + NLA_HDRLEN; in + NLA_HDRLEN <= off + a.nla_len;) {
        const nlattr b = attrAt(in);
        EXPECT_EQ(b.nla_len, NLA_HDRLEN + 8) << "attribute " << b.nla_type << " is not a u64";
        uint64_t v = 0;
        std::memcpy(&v, dg.data() + in + NLA_HDRLEN, sizeof v);
        out.emplace_back(b.nla_type, v);
        in += NLA_ALIGN(b.nla_len);
      }
    }
    off += NLA_ALIGN(a.nla_len);
  }
  return out;
}

// Every counter of the table, each with a value of its own, goes through
// encode and decode: one u64 attribute per row, in row order, and back.
TEST(CtlCounters, RoundTripCarriesEveryCounterOfTheTable) {
  PortStatsMsg st;
  st.port = port("vd0", 1);
  std::set<uint64_t> distinct;
  for (const stats::CounterDef& c : stats::kPortCounters) {
    st.counters[c] = counterValue(c, 7);
    distinct.insert(st.counters[c]);
  }
  ASSERT_EQ(distinct.size(), std::size(stats::kPortCounters));
  PoolMsg pl;
  for (const stats::CounterDef& c : stats::kPoolCounters) pl[c] = counterValue(c, 9);
  const StatsReply reply{{st}, pl, 5u};

  std::vector<std::vector<uint8_t>> dgs;
  auto back = replyRoundTrip(requestFor(StatsGetRequest{"vd0"}), reply, &dgs);
  ASSERT_TRUE(back.ok()) << back.error().message();
  const StatsReply& r = std::get<StatsReply>(*back);
  ASSERT_EQ(r.ports.size(), 1u);
  for (const stats::CounterDef& c : stats::kPortCounters)
    EXPECT_EQ(r.ports[0].counters[c], st.counters[c]) << c.path;
  ASSERT_TRUE(r.pool);
  for (const stats::CounterDef& c : stats::kPoolCounters) EXPECT_EQ((*r.pool)[c], pl[c]) << c.path;
  EXPECT_EQ(r, reply);

  ASSERT_EQ(dgs.size(), 1u);
  const auto statsAttrs = nestedU64s(dgs[0], kAttrStats);
  ASSERT_EQ(statsAttrs.size(), std::size(stats::kPortCounters));
  for (size_t i = 0; i < statsAttrs.size(); ++i) {
    const stats::CounterDef& c = stats::kPortCounters[i];
    EXPECT_EQ(statsAttrs[i].first, c.attr) << c.path;
    EXPECT_EQ(statsAttrs[i].second, st.counters[c]) << c.path;
  }
  const auto poolAttrs = nestedU64s(dgs[0], kAttrPool);
  ASSERT_EQ(poolAttrs.size(), std::size(stats::kPoolCounters));
  for (size_t i = 0; i < poolAttrs.size(); ++i) {
    EXPECT_EQ(poolAttrs[i].first, stats::kPoolCounters[i].attr) << stats::kPoolCounters[i].path;
    EXPECT_EQ(poolAttrs[i].second, pl[stats::kPoolCounters[i]]) << stats::kPoolCounters[i].path;
  }
}

// A vdevd from before the later counters sends only the attributes of the
// first protocol version (1..23, up to DEV_TX_DROPPED) and a shorter POOL:
// what it sent decodes, every other counter is 0. A port without STATS at
// all has every counter 0.
TEST(CtlCounters, OlderPeersReplyDecodesTheLaterCountersAsZero) {
  constexpr uint16_t kFirstVersionMax = 23;
  constexpr uint16_t kOldPoolMax = 5;
  auto msg = dataMsg(kCmdStatsGet, 0, 3, [](Raw& r) {
    r.str(kAttrPortName, "vd0").nest(kAttrStats);
    for (const stats::CounterDef& c : stats::kPortCounters)
      if (c.attr <= kFirstVersionMax) r.u64(c.attr, counterValue(c, 1));
    r.end().nest(kAttrPool);
    for (const stats::CounterDef& c : stats::kPoolCounters)
      if (c.attr <= kOldPoolMax) r.u64(c.attr, counterValue(c, 2));
    r.end();
  });
  auto d = decodeBytes(msg, {3, kCmdStatsGet, false});
  ASSERT_TRUE(d.ok()) << d.error().message();
  const StatsReply& s = std::get<StatsReply>(*d);
  ASSERT_EQ(s.ports.size(), 1u);
  size_t later = 0;
  for (const stats::CounterDef& c : stats::kPortCounters) {
    EXPECT_EQ(s.ports[0].counters[c], c.attr <= kFirstVersionMax ? counterValue(c, 1) : 0u) << c.path;
    later += c.attr > kFirstVersionMax;
  }
  EXPECT_GE(later, 6u);  // bad_type .. fast_xmit, xdp_prog.fast
  ASSERT_TRUE(s.pool);
  for (const stats::CounterDef& c : stats::kPoolCounters)
    EXPECT_EQ((*s.pool)[c], c.attr <= kOldPoolMax ? counterValue(c, 2) : 0u) << c.path;

  auto bare = decodeBytes(dataMsg(kCmdStatsGet, 0, 4, [](Raw& r) { r.str(kAttrPortName, "vd0"); }),
                          {4, kCmdStatsGet, false});
  ASSERT_TRUE(bare.ok()) << bare.error().message();
  EXPECT_EQ(std::get<StatsReply>(*bare).ports.at(0).counters, stats::PortValues{});
}

// The attribute numbers are the protocol's ABI (protocol.h): those of the
// counters that exist never change, whatever is added. The lists pin them;
// the checks below hold them against the table at compile time, row by row,
// both ways: a new counter that is not listed (with its number, which is then
// fixed), a listed one that is gone, renamed or renumbered, or a number
// listed twice does not build.
struct PinnedAttr {
  std::string_view path;
  uint16_t attr;
};
constexpr PinnedAttr kPinnedPort[] = {
    {"rx_packets", 1},
    {"rx_bytes", 2},
    {"tx_packets", 3},
    {"tx_bytes", 4},
    {"tx_outstanding", 5},
    {"drops.ring_full", 6},
    {"drops.tx_ring_full", 7},
    {"drops.no_route", 8},
    {"drops.port_down", 9},
    {"drops.oversize", 10},
    {"drops.runt", 11},
    {"drops.pool_empty", 12},
    {"drops.invalid_src", 13},
    {"xdp_stats.rx_dropped", 14},
    {"xdp_stats.rx_invalid_descs", 15},
    {"xdp_stats.tx_invalid_descs", 16},
    {"xdp_stats.rx_ring_full", 17},
    {"xdp_stats.rx_fill_ring_empty_descs", 18},
    {"xdp_stats.tx_ring_empty_descs", 19},
    {"xdp_prog.pass", 20},
    {"xdp_prog.redirect", 21},
    {"xdp_prog.no_socket", 22},
    {"dev.tx_dropped", 23},
    {"drops.bad_type", 24},
    {"drops.mac_limit", 25},
    {"drops.mac_locked", 26},
    {"drops.inflight_limit", 27},
    {"drops.fast_xmit", 28},
    {"xdp_prog.fast", 29},
    {"link.flap_waits", 30},
    {"drops.link_local", 31},
    {"drops.isolated", 32},
    {"drops.storm_bcast", 33},
    {"drops.storm_mcast", 34},
    {"drops.storm_unknown", 35},
    {"drops.police", 36},
    {"drops.spoof_mac", 37},
    {"drops.spoof_ip", 38},
    {"drops.ra_guard", 39},
    {"drops.dhcp_guard", 40},
    {"drops.vlan_filtered", 41},
};
constexpr PinnedAttr kPinnedPool[] = {
    {"total", 1},   {"free", 2},       {"fill_ring", 3}, {"kernel_rx", 4},  {"rx_ring", 5},
    {"rx_burst", 6}, {"port_rings", 7}, {"tx_ring", 8},   {"kernel_tx", 9}, {"comp_ring", 10},
    {"kernel_held", 11},
};

// Every row of `rows` is pinned with its number, every pin is a row, and
// no path is pinned twice (so the counts match row for row).
template <size_t N>
constexpr bool pinsMatch(const PinnedAttr (&pins)[N], std::span<const stats::CounterDef> rows) {
  if (rows.size() != N) return false;
  for (const stats::CounterDef& c : rows) {
    size_t found = 0;
    for (const PinnedAttr& p : pins)
      if (p.path == c.path) found += p.attr == c.attr ? 1 : 2;
    if (found != 1) return false;
  }
  return true;
}
static_assert(pinsMatch(kPinnedPort, stats::kPortCounters),
              "kPinnedPort and stats::kPortCounters differ: pin a new counter's attribute here");
static_assert(pinsMatch(kPinnedPool, stats::kPoolCounters),
              "kPinnedPool and stats::kPoolCounters differ: pin a new counter's attribute here");

// The same at run time, naming the counter that differs.
TEST(CtlCounters, AttributeNumbersNeverChange) {
  for (const auto& [path, attr] : kPinnedPort) {
    const auto id = stats::findPortCounter(path);
    ASSERT_TRUE(id) << path;
    EXPECT_EQ(stats::portCounter(*id).attr, attr) << path;
  }
  for (const auto& [path, attr] : kPinnedPool) {
    const auto id = stats::findPoolCounter(path);
    ASSERT_TRUE(id) << path;
    EXPECT_EQ(stats::poolCounter(*id).attr, attr) << path;
  }
  auto listed = [](const auto& list, const char* path) {
    return std::any_of(std::begin(list), std::end(list), [&](const PinnedAttr& e) { return e.path == path; });
  };
  for (const stats::CounterDef& c : stats::kPortCounters)
    EXPECT_TRUE(listed(kPinnedPort, c.path)) << c.path << " (attribute " << c.attr << ") is not in kPinnedPort";
  for (const stats::CounterDef& c : stats::kPoolCounters)
    EXPECT_TRUE(listed(kPinnedPool, c.path)) << c.path << " (attribute " << c.attr << ") is not in kPinnedPool";
  EXPECT_EQ(std::size(kPinnedPort), std::size(stats::kPortCounters));
  EXPECT_EQ(std::size(kPinnedPool), std::size(stats::kPoolCounters));
}

// ------------------------------------------------------------------ names

TEST(CtlNames, MacsAndEnums) {
  EXPECT_EQ(formatMac(kMac2), "02:aa:bb:cc:dd:ee");
  EXPECT_EQ(parseMac("02:AA:bb:cc:dd:ee"), kMac2);
  EXPECT_FALSE(parseMac("02:aa:bb:cc:dd"));
  EXPECT_FALSE(parseMac("02-aa-bb-cc-dd-ee"));
  EXPECT_FALSE(parseMac("0g:aa:bb:cc:dd:ee"));
  EXPECT_EQ(parsePortType("veth"), PortType::kVeth);
  EXPECT_FALSE(parsePortType("bridge"));
  EXPECT_EQ(parseXdpMode("generic"), XdpMode::kGeneric);
  EXPECT_FALSE(parseXdpMode("none"));
  EXPECT_STREQ(cmdName(kCmdFdbDel), "FDB_DEL");
  EXPECT_STREQ(attrName(kAttrNumPorts), "NUM_PORTS");
  EXPECT_STREQ(bindModeName(BindMode::kZerocopy), "zerocopy");
  EXPECT_STREQ(switchModeName(SwitchMode::kXconnect), "xconnect");
  EXPECT_STREQ(portTypeName(static_cast<PortType>(9)), "unknown");
}

TEST(CtlNames, PeekHeader) {
  auto b = enc(InfoGetRequest{}, 31);
  EXPECT_EQ(peekHeader(b).seq, 31u);
  EXPECT_EQ(peekHeader(std::span<const uint8_t>(b.data(), 15)).seq, 0u);
}

// ---------------------------------------------------------------- hardening

// '%' makes the kernel take a name as a pattern ("vd%d" -> "vd0"): refused
// in every name, by the client before sending and by the daemon.
TEST(CtlHardening, PercentInAnyNameIsRefused) {
  expectReject(Raw().hdr().genl(kCmdPortDel).str(kAttrPortName, "vd%d").done(), EINVAL,
               "not a valid interface name");
  PortAddRequest veth{"vd%d", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  auto st = validate(veth);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("'%'"), std::string::npos) << st.error().what;
  PortAddRequest peer{"vd0", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  peer.create->peer_ifname = "vp%d";
  EXPECT_FALSE(validate(peer).ok());
  EXPECT_FALSE(encodeRequest(1, peer).ok()) << "the client sends what the daemon refuses";
  EXPECT_FALSE(validate(FdbAddRequest{kMac1, "a%s", true}).ok());
  for (const char* bad : {"a b", "a\tb", "a/b", "a:b", ".", ".."})
    EXPECT_FALSE(validateIfname(bad, "X").ok()) << bad;
  EXPECT_TRUE(validateIfname("vd-0_x.y", "X").ok());
}

// FDB_STATIC=0 used to be accepted and ignored (a static entry was made).
TEST(CtlHardening, FdbStaticZeroIsRefusedWithAClearError) {
  auto st = validate(FdbAddRequest{kMac2, "vd1", false});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().err, EINVAL);
  EXPECT_NE(st.error().what.find("FDB_STATIC: 0 is not supported"), std::string::npos) << st.error().what;
  expectReject(Raw().hdr().genl(kCmdFdbAdd).mac(kAttrMac, kMac2).str(kAttrPortName, "vd1").u8(kAttrFdbStatic, 0).done(),
               EINVAL, "FDB_STATIC: 0 is not supported");
  expectRoundTrip(FdbAddRequest{kMac2, "vd1", true});
}

// PORT_TYPE netkit (5): appended, never renumbered; only with CREATE (an
// existing device is netdev), with a veth's CREATE attributes and not a
// tap's.
TEST(CtlCodec, NetkitPortTypeTakesAVethsCreateOptionsOnly) {
  EXPECT_EQ(static_cast<int>(PortType::kNetkit), 5);
  EXPECT_EQ(parsePortType("netkit"), PortType::kNetkit);
  EXPECT_STREQ(portTypeName(PortType::kNetkit), "netkit");
  CreateOptions c;
  c.peer_netns_name = "web1";
  c.peer_ifname = "eth0";
  c.peer_mac = kMac2;
  c.mtu = 1500;
  expectRoundTrip(PortAddRequest{"nk0", PortType::kNetkit, std::nullopt, XdpMode::kAuto, c});
  const auto st = validate(PortAddRequest{"nk0", PortType::kNetkit, std::nullopt, XdpMode::kAuto, std::nullopt});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("netkit needs CREATE"), std::string::npos) << st.error().what;
  c.owner_uid = 1000;
  const auto tap = validate(PortAddRequest{"nk0", PortType::kNetkit, std::nullopt, XdpMode::kAuto, c});
  ASSERT_FALSE(tap.ok());
  EXPECT_NE(tap.error().what.find("CREATE.OWNER_UID is not valid for a netkit"), std::string::npos) << tap.error().what;
}

TEST(CtlHardening, PortTagOwnerAndInfoAttributesRoundTrip) {
  PortAddRequest r{"vd0", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  r.tag = "cni:net1";
  expectRoundTrip(r);
  r.tag = "has space";
  EXPECT_FALSE(validate(r).ok());
  r.tag = std::string(kPortTagMax + 1, 'x');
  EXPECT_FALSE(validate(r).ok());
  r.tag = "";
  EXPECT_FALSE(validate(r).ok());

  PortInfo p = port("vd0", 1);
  p.owner_uid = 1000;
  p.tag = "cni:net1";
  auto one = replyRoundTrip(requestFor(PortGetRequest{"vd0"}), PortList{{p}});
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(std::get<PortList>(*one).ports[0], p);

  InfoMsg i{"0.1.0", 1, SwitchMode::kSwitch, 5, 2};
  i.fd_limit = 524288;
  i.ports_fd_left = 32000;
  i.ports_pool_left = 250;
  i.ports_map_left = 0;  // present, and zero: the maps are full
  i.start_issues = "state file x: line 3: unknown key 'colour'\nport vd9 not restored";
  i.uid_caps = InfoMsg::UidCaps{64, 1024, 256ull << 20, 100, 200};
  i.uid_use = {{1000, 3, 17, 0, 42, 7}, {65534, 64, 1024, 5ull << 30}, {65533, 0, 0, 0, 1ull << 40, 0}};
  auto info = replyRoundTrip(requestFor(InfoGetRequest{}), i);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(std::get<InfoMsg>(*info), i);
  // An older daemon sends none of them.
  auto old = replyRoundTrip(requestFor(InfoGetRequest{}), InfoMsg{"0.1.0", 1, SwitchMode::kSwitch, 5, 2});
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(std::get<InfoMsg>(*old).fd_limit);
  EXPECT_FALSE(std::get<InfoMsg>(*old).ports_pool_left);
  EXPECT_FALSE(std::get<InfoMsg>(*old).ports_map_left);
  EXPECT_TRUE(std::get<InfoMsg>(*old).start_issues.empty());
  EXPECT_FALSE(std::get<InfoMsg>(*old).tc_attach);
  EXPECT_FALSE(std::get<InfoMsg>(*old).kernel_features);
  EXPECT_FALSE(std::get<InfoMsg>(*old).uid_caps);
  EXPECT_TRUE(std::get<InfoMsg>(*old).uid_use.empty());
}

// The caps per uid and each uid's use in the Prometheus text of `vdevctl
// stats --prometheus` and GET /metrics: a family per resource, a sample per
// uid; none without UID_CAPS (an older daemon).
TEST(CtlCodec, UidUseIsInThePrometheusText) {
  InfoMsg i{"0.1.0", 1, SwitchMode::kSwitch, 5, 2};
  i.uid_caps = InfoMsg::UidCaps{64, 1024, 256ull << 20, 100, 200};
  i.uid_use = {{1000, 3, 17, 4096, 42, 7}, {65534, 1, 0, 0, 0, 0}};
  const std::string text = prometheusText(StatsReply{}, &i);
  for (const char* line :
       {"# TYPE vdev_uid_cap gauge\n", "vdev_uid_cap{resource=\"ports\"} 64\n",
        "vdev_uid_cap{resource=\"fdb_entries\"} 1024\n", "vdev_uid_cap{resource=\"capture_bytes\"} 268435456\n",
        "vdev_uid_cap{resource=\"requests_per_second\"} 100\n", "vdev_uid_cap{resource=\"request_burst\"} 200\n",
        "# TYPE vdev_uid_ports gauge\n", "vdev_uid_ports{uid=\"1000\"} 3\n", "vdev_uid_ports{uid=\"65534\"} 1\n",
        "vdev_uid_fdb_entries{uid=\"1000\"} 17\n", "vdev_uid_capture_bytes{uid=\"1000\"} 4096\n",
        "# TYPE vdev_uid_requests_total counter\n", "vdev_uid_requests_total{uid=\"1000\"} 42\n",
        "vdev_uid_requests_total{uid=\"65534\"} 0\n", "# TYPE vdev_uid_requests_refused_total counter\n",
        "vdev_uid_requests_refused_total{uid=\"1000\"} 7\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  i.uid_caps.reset();
  EXPECT_EQ(prometheusText(StatsReply{}, &i).find("vdev_uid_"), std::string::npos);
}

// INFO's TC_ATTACH and KERNEL_FEATURES: round trip, bits a client does not
// know kept (a newer daemon's); every KernelFeature has a name of its own.
TEST(CtlCodec, InfoTellsHowTheKernelIsUsed) {
  InfoMsg i{"0.1.0", 1, SwitchMode::kSwitch, 5, 2};
  i.tc_attach = TcAttach::kClsact;
  i.kernel_features = (uint64_t(1) << kKfClsact) | (uint64_t(1) << kKfXdpFrags) | (uint64_t(1) << 40);
  auto info = replyRoundTrip(requestFor(InfoGetRequest{}), i);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(std::get<InfoMsg>(*info), i);
  i.kernel_features = 0;  // present, and none in use
  info = replyRoundTrip(requestFor(InfoGetRequest{}), i);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(std::get<InfoMsg>(*info).kernel_features, std::optional<uint64_t>(0));
  std::set<std::string> names;
  for (uint8_t b = 0; b < kKfCount; b++) {
    ASSERT_NE(kernelFeatureName(b), nullptr) << int(b);
    EXPECT_TRUE(names.insert(kernelFeatureName(b)).second) << kernelFeatureName(b);
  }
  EXPECT_EQ(kernelFeatureName(kKfCount), nullptr);
  EXPECT_STREQ(attrName(kAttrKernelFeatures), "KERNEL_FEATURES");
  expectReject(Raw().hdr().genl(kCmdInfoGet).u64(kAttrKernelFeatures, 1).done(), EINVAL,
               "attribute KERNEL_FEATURES is not valid for INFO_GET");
}

// Capture filters: every field through the codec; the nest's own checks
// (an empty one, one IP of 16 bytes, unknown fields); the combinations
// validation refuses; and a request with one, as a vdevd without filters
// decodes it: refused (an unknown attribute), never a capture of all.
TEST(CtlCapture, FilterRoundTripsAndIsValidated) {
  CaptureStartRequest r{"vd0"};
  r.filter = CaptureFilter{Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 4094, 0x86dd,
                           *vdev::parseIp("2001:db8::1"), 58, std::nullopt};
  expectRoundTrip(r);
  r.filter = CaptureFilter{std::nullopt, std::nullopt, std::nullopt, *vdev::parseIp("198.18.0.1"), 6, 443};
  expectRoundTrip(r);
  r.filter = CaptureFilter{};
  r.filter->port = 0;
  expectRoundTrip(r);

  auto bad = [](CaptureFilter f) {
    CaptureStartRequest q{"vd0"};
    q.filter = f;
    return validate(q);
  };
  EXPECT_NE(bad(CaptureFilter{}).error().what.find("CAPTURE_FILTER: empty"), std::string::npos);
  EXPECT_FALSE(bad(CaptureFilter{.vlan = 0}).ok());
  EXPECT_FALSE(bad(CaptureFilter{.vlan = 4095}).ok());
  EXPECT_FALSE(bad(CaptureFilter{.ethertype = 0x05dc}).ok());
  EXPECT_FALSE(bad(CaptureFilter{.ip = IpAddr{}}).ok());
  EXPECT_FALSE(bad(CaptureFilter{.proto = 1, .port = 80}).ok());
  EXPECT_TRUE(bad(CaptureFilter{.proto = 17, .port = 80}).ok());
  EXPECT_FALSE(bad(CaptureFilter{.ethertype = 0x0806, .proto = 6}).ok());
  EXPECT_TRUE(bad(CaptureFilter{.ethertype = 0x0800, .proto = 6}).ok());

  // The nest on the wire (attribute headers: u16 length, u16 type).
  CaptureStartRequest q{"vd0"};
  q.filter = CaptureFilter{.proto = 1};
  const std::vector<uint8_t> wire = enc(q);
  auto find = [&](std::vector<uint8_t> pattern) {
    auto it = std::search(wire.begin(), wire.end(), pattern.begin(), pattern.end());
    EXPECT_NE(it, wire.end());
    return size_t(it - wire.begin());
  };
  // PROTO (length 5, type 5, value 1) made type 7, which the filter's space
  // does not know.
  std::vector<uint8_t> unknown = wire;
  unknown[find({5, 0, kCapFilterProto, 0, 1}) + 2] = 7;
  expectReject(unknown, EINVAL, "CAPTURE_FILTER.type 7: unknown attribute");
  // A vdevd from before the filter has no attribute 62: its strict walk
  // refuses the request, as it refuses any top-level type it does not know
  // (here 63, unknown to this one), rather than capture everything.
  std::vector<uint8_t> old = wire;
  old[find({kAttrCaptureFilter, 0x80}) ] = kAttrCaptureFilter + 1;
  expectReject(old, EINVAL, "type 63: unknown attribute");

  EXPECT_EQ(parseCaptureEthertype("arp"), 0x0806);
  EXPECT_EQ(parseCaptureEthertype("ipv6"), 0x86dd);
  EXPECT_EQ(parseCaptureEthertype("0x0800"), 0x0800);
  EXPECT_EQ(parseCaptureEthertype("2054"), 0x0806);
  EXPECT_FALSE(parseCaptureEthertype("0x05ff"));
  EXPECT_FALSE(parseCaptureEthertype("0x10000"));
  EXPECT_FALSE(parseCaptureEthertype("ip"));
  EXPECT_EQ(parseCaptureProto("icmpv6"), 58);
  EXPECT_EQ(parseCaptureProto("255"), 255);
  EXPECT_FALSE(parseCaptureProto("256"));
  EXPECT_FALSE(parseCaptureProto("sctp"));
}

// Capture: requests, replies with frame records, and records a peer
// could get wrong.
TEST(CtlCapture, RequestsRepliesAndFrameRecordsRoundTrip) {
  expectRoundTrip(CaptureStartRequest{"vd0"});
  expectRoundTrip(CaptureStartRequest{"vd0", CaptureDir::kRx, 128u, 16u});
  expectRoundTrip(CaptureReadRequest{7});
  expectRoundTrip(CaptureStopRequest{7});
  EXPECT_FALSE(validate(CaptureReadRequest{0}).ok());
  EXPECT_FALSE(validate(CaptureStartRequest{"vd0", CaptureDir::kBoth, 63u}).ok());
  EXPECT_FALSE(validate(CaptureStartRequest{"vd0", CaptureDir::kBoth, 65536u}).ok());
  EXPECT_FALSE(validate(CaptureStartRequest{"vd0", CaptureDir::kBoth, std::nullopt, kCaptureBufferMax + 1}).ok());
  EXPECT_FALSE(validate(CaptureStartRequest{"vd0", static_cast<CaptureDir>(4)}).ok());
  EXPECT_EQ(parseCaptureDir("tx"), CaptureDir::kTx);
  EXPECT_FALSE(parseCaptureDir("in"));

  CaptureMsg m{.id = 3, .taken = 10, .drops = 2, .ended = true};
  const std::vector<uint8_t> a(60, 0xaa), b(7, 0xbb);
  appendCaptureRecord(m.frames, 1'700'000'000'000'000'001ull, 60, CaptureDir::kRx, a);
  appendCaptureRecord(m.frames, 1'700'000'000'000'000'002ull, 1514, CaptureDir::kTx, b);
  EXPECT_EQ(m.frames.size(), 16u + 60 + 16 + 8) << "each record 4-byte aligned";
  auto r = replyRoundTrip(requestFor(CaptureReadRequest{3}), m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<CaptureMsg>(*r), m);
  auto fs = parseCaptureFrames(m.frames);
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  ASSERT_EQ(fs->size(), 2u);
  EXPECT_EQ((*fs)[1].time_ns, 1'700'000'000'000'000'002ull);
  EXPECT_EQ((*fs)[1].wire_len, 1514u);
  EXPECT_EQ((*fs)[1].dir, CaptureDir::kTx);
  EXPECT_EQ(std::vector<uint8_t>((*fs)[1].data.begin(), (*fs)[1].data.end()), b);
  // A reply to a capture request is a CaptureMsg and nothing else.
  EXPECT_EQ(replyRoundTrip(requestFor(CaptureStartRequest{"vd0"}), Ack{}).error().err, EIO);

  // Broken records: cut short, kept bytes beyond the length, a direction.
  std::vector<uint8_t> bad = m.frames;
  bad.resize(20);
  EXPECT_EQ(parseCaptureFrames(bad).error().err, EINVAL);
  bad.resize(10);
  EXPECT_EQ(parseCaptureFrames(bad).error().err, EINVAL);
  bad = m.frames;
  bad[8] = 1;  // wire_len 1 < kept 60
  bad[9] = bad[10] = bad[11] = 0;
  EXPECT_NE(parseCaptureFrames(bad).error().what.find("keeps 60 bytes of 1"), std::string::npos);
  bad = m.frames;
  bad[14] = 3;  // both: not a frame's direction
  EXPECT_EQ(parseCaptureFrames(bad).error().err, EINVAL);
  EXPECT_TRUE(parseCaptureFrames({}).ok());
}

}  // namespace
}  // namespace vdev::proto
