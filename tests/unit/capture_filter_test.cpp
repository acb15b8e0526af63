// The capture filter's matcher (vdev/datapath/bpf/vdev_capture_filter.h), the
// one the XDP and skb programs and vdevd's own copies share, compiled here
// as C++ and run on hostile frames: each field alone and together, through
// no, one, two and three VLAN tags, IPv4 with options and in fragments,
// IPv6, ARP, malformed IP headers, and every frame cut at every length.
// A cut frame sits at the very end of a readable page, before one that is
// not: a read past its end faults in any build, not only under ASan.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/mac.h"
#include "datapath/capture_filter.h"

namespace {

using Bytes = std::vector<uint8_t>;
using vdev::datapath::CaptureFilter;

const vdev::Mac kDst{0x02, 0, 0, 0, 0, 0x02};
const vdev::Mac kSrc{0x02, 0, 0, 0, 0, 0x01};

void put16(Bytes& b, uint16_t v) {
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}

// Ethernet header with `tags` (TPID, VID) before the type.
Bytes eth(uint16_t type, std::vector<std::pair<uint16_t, uint16_t>> tags = {}) {
  Bytes b(kDst.begin(), kDst.end());
  b.insert(b.end(), kSrc.begin(), kSrc.end());
  for (auto [tpid, vid] : tags) {
    put16(b, tpid);
    put16(b, vid);
  }
  put16(b, type);
  return b;
}

// An IPv4 header of ihl words (options zero) and an L4 header's ports.
Bytes ipv4(uint8_t proto, const char* src, const char* dst, uint16_t sport, uint16_t dport, uint8_t ihl = 5,
           uint16_t frag_off = 0) {
  Bytes b(size_t(ihl) * 4, 0);
  b[0] = uint8_t(0x40 | ihl);
  b[6] = uint8_t(frag_off >> 8);
  b[7] = uint8_t(frag_off);
  b[8] = 64;
  b[9] = proto;
  auto s = vdev::parseIp(src), d = vdev::parseIp(dst);
  std::memcpy(&b[12], s->data() + 12, 4);
  std::memcpy(&b[16], d->data() + 12, 4);
  put16(b, sport);
  put16(b, dport);
  b.resize(b.size() + 4, 0);
  return b;
}

Bytes ipv6(uint8_t next, const char* src, const char* dst, uint16_t sport, uint16_t dport) {
  Bytes b(40, 0);
  b[0] = 0x60;
  b[6] = next;
  b[7] = 64;
  auto s = vdev::parseIp(src), d = vdev::parseIp(dst);
  std::memcpy(&b[8], s->data(), 16);
  std::memcpy(&b[24], d->data(), 16);
  put16(b, sport);
  put16(b, dport);
  b.resize(b.size() + 4, 0);
  return b;
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Two pages, the second unreadable: a frame copied to the end of the first
// has nothing readable after it.
class GuardedBuffer {
 public:
  GuardedBuffer() {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) std::abort();
    base_ = static_cast<uint8_t*>(m);
    if (mprotect(base_ + page_, page_, PROT_NONE)) std::abort();
  }
  ~GuardedBuffer() { munmap(base_, 2 * page_); }
  int match(const CaptureFilter& f, const Bytes& frame, size_t len, uint32_t untagged_vid) {
    uint8_t* at = base_ + page_ - len;
    std::memcpy(at, frame.data(), len);
    return vdev_capture_match(&f, at, at + len, untagged_vid);
  }

 private:
  size_t page_ = 0;
  uint8_t* base_ = nullptr;
};

CaptureFilter filterOf(uint32_t fields) {
  CaptureFilter f{};
  f.fields = fields;
  return f;
}
CaptureFilter withIp(CaptureFilter f, const char* ip) {
  auto a = vdev::parseIp(ip);
  std::memcpy(f.ip, a->data(), 16);
  f.fields |= VDEV_CAPF_IP;
  return f;
}

// Whole: `want`. Cut at any length below `needed`: no match; at or above
// it: `want` -- and never a read past the cut.
void expectEveryCut(const CaptureFilter& f, const Bytes& frame, size_t needed, int want, uint32_t vid = 1) {
  GuardedBuffer g;
  EXPECT_EQ(g.match(f, frame, frame.size(), vid), want);
  for (size_t len = 0; len < frame.size(); len++)
    EXPECT_EQ(g.match(f, frame, len, vid), len < needed ? 0 : want) << "cut at " << len << " of " << frame.size();
}

TEST(CaptureFilter, NoFieldsMatchesEverythingEvenEmpty) {
  GuardedBuffer g;
  const Bytes runt{1, 2, 3};
  EXPECT_EQ(g.match(filterOf(0), runt, 0, 1), 1);
  EXPECT_EQ(g.match(filterOf(0), runt, 3, 1), 1);
}

TEST(CaptureFilter, MacIsSourceOrDestination) {
  const Bytes f = cat(eth(0x0806), Bytes(28, 0));
  CaptureFilter m = filterOf(VDEV_CAPF_MAC);
  std::memcpy(m.mac, kSrc.data(), 6);
  expectEveryCut(m, f, 14, 1);
  std::memcpy(m.mac, kDst.data(), 6);
  expectEveryCut(m, f, 14, 1);
  m.mac[5] = 0x33;
  expectEveryCut(m, f, 14, 0);
}

TEST(CaptureFilter, VlanIsOuterTagOrThePortsUntaggedVlan) {
  CaptureFilter v = filterOf(VDEV_CAPF_VLAN);
  v.vid = 10;
  const Bytes untagged = cat(eth(0x0800), ipv4(17, "198.18.0.1", "198.18.0.2", 1, 2));
  expectEveryCut(v, untagged, 14, 1, 10);
  expectEveryCut(v, untagged, 14, 0, 1);
  // A trunk without a PVID: untagged frames are in no VLAN.
  v.vid = 1;
  expectEveryCut(v, untagged, 14, 0, 0);
  v.vid = 10;
  const Bytes one = cat(eth(0x0800, {{0x8100, 0x2000 | 10}}), ipv4(17, "198.18.0.1", "198.18.0.2", 1, 2));
  expectEveryCut(v, one, 18, 1, 1);  // the priority bits are not the VID
  const Bytes two = cat(eth(0x0800, {{0x88a8, 10}, {0x8100, 20}}), ipv4(17, "198.18.0.1", "198.18.0.2", 1, 2));
  expectEveryCut(v, two, 22, 1, 1);
  v.vid = 20;
  expectEveryCut(v, two, 22, 0, 1);  // the inner tag is not the frame's VLAN
}

TEST(CaptureFilter, EthertypeLooksThroughTwoTagsNotThree) {
  CaptureFilter t = filterOf(VDEV_CAPF_ETHERTYPE);
  t.ethertype = 0x0806;
  expectEveryCut(t, cat(eth(0x0806), Bytes(28, 0)), 14, 1);
  expectEveryCut(t, cat(eth(0x0806, {{0x8100, 5}}), Bytes(28, 0)), 18, 1);
  expectEveryCut(t, cat(eth(0x0806, {{0x88a8, 5}, {0x8100, 6}}), Bytes(28, 0)), 22, 1);
  const Bytes three = cat(eth(0x0806, {{0x88a8, 5}, {0x8100, 6}, {0x8100, 7}}), Bytes(28, 0));
  expectEveryCut(t, three, 22, 0);
  t.ethertype = 0x8100;  // what a third tag leaves as the type
  expectEveryCut(t, three, 22, 1);
}

TEST(CaptureFilter, Ipv4AddressesProtoAndPortsThroughTags) {
  for (size_t tags = 0; tags <= 2; tags++) {
    std::vector<std::pair<uint16_t, uint16_t>> t;
    if (tags >= 1) t.push_back({tags == 2 ? 0x88a8 : 0x8100, 7});
    if (tags == 2) t.push_back({0x8100, 8});
    const size_t l3 = 14 + 4 * tags;
    const Bytes udp = cat(eth(0x0800, t), ipv4(17, "198.18.0.1", "198.18.0.2", 40000, 53));
    SCOPED_TRACE("tags " + std::to_string(tags));
    expectEveryCut(withIp(filterOf(0), "198.18.0.1"), udp, l3 + 20, 1);
    expectEveryCut(withIp(filterOf(0), "198.18.0.2"), udp, l3 + 20, 1);
    expectEveryCut(withIp(filterOf(0), "198.18.0.3"), udp, l3 + 20, 0);
    // The IPv6 address with the same last four bytes is another address.
    expectEveryCut(withIp(filterOf(0), "2001:db8::c612:1"), udp, l3 + 20, 0);
    CaptureFilter p = filterOf(VDEV_CAPF_PROTO);
    p.proto = 17;
    expectEveryCut(p, udp, l3 + 20, 1);
    p.proto = 6;
    expectEveryCut(p, udp, l3 + 20, 0);
    CaptureFilter port = filterOf(VDEV_CAPF_PORT);
    port.port = 53;
    expectEveryCut(port, udp, l3 + 24, 1);
    port.port = 40000;
    expectEveryCut(port, udp, l3 + 24, 1);
    port.port = 54;
    expectEveryCut(port, udp, l3 + 24, 0);
    // Everything at once.
    CaptureFilter all = withIp(filterOf(VDEV_CAPF_PROTO | VDEV_CAPF_PORT | VDEV_CAPF_ETHERTYPE | VDEV_CAPF_MAC |
                                        VDEV_CAPF_VLAN),
                               "198.18.0.2");
    all.proto = 17;
    all.port = 53;
    all.ethertype = 0x0800;
    all.vid = tags ? 7 : 1;
    std::memcpy(all.mac, kSrc.data(), 6);
    expectEveryCut(all, udp, l3 + 24, 1);
    all.port = 80;
    expectEveryCut(all, udp, l3 + 24, 0);
  }
}

TEST(CaptureFilter, Ipv4OptionsFragmentsAndMalformedHeaders) {
  CaptureFilter port = filterOf(VDEV_CAPF_PORT);
  port.port = 80;
  // IHL 15: the ports are 60 bytes in.
  const Bytes opts = cat(eth(0x0800), ipv4(6, "198.18.0.1", "198.18.0.2", 1234, 80, 15));
  expectEveryCut(port, opts, 14 + 60 + 4, 1);
  // A fragment past the first carries no ports; its protocol still counts.
  const Bytes frag = cat(eth(0x0800), ipv4(6, "198.18.0.1", "198.18.0.2", 1234, 80, 5, 185));
  expectEveryCut(port, frag, 14 + 20, 0);
  CaptureFilter proto = filterOf(VDEV_CAPF_PROTO);
  proto.proto = 6;
  expectEveryCut(proto, frag, 14 + 20, 1);
  // The first fragment (more fragments set, offset 0) has them.
  const Bytes first = cat(eth(0x0800), ipv4(6, "198.18.0.1", "198.18.0.2", 1234, 80, 5, 0x2000));
  expectEveryCut(port, first, 14 + 24, 1);
  // ICMP has no ports, even where its bytes would be 80.
  const Bytes icmp = cat(eth(0x0800), ipv4(1, "198.18.0.1", "198.18.0.2", 80, 80));
  expectEveryCut(port, icmp, 14 + 24, 0);
  // IHL below 5, a version that is not 4: nothing matches.
  Bytes bad = cat(eth(0x0800), ipv4(6, "198.18.0.1", "198.18.0.2", 1234, 80));
  bad[14] = 0x43;
  expectEveryCut(proto, bad, 14, 0);
  bad[14] = 0x65;
  expectEveryCut(proto, bad, 14, 0);
  // ARP is no IP frame: --ip does not match it, whatever its addresses.
  expectEveryCut(withIp(filterOf(0), "198.18.0.1"), cat(eth(0x0806), Bytes(28, 0)), 14, 0);
}

TEST(CaptureFilter, Ipv6) {
  const Bytes tcp = cat(eth(0x86dd, {{0x8100, 3}}), ipv6(6, "2001:db8::1", "2001:db8::2", 40000, 443));
  expectEveryCut(withIp(filterOf(0), "2001:db8::2"), tcp, 18 + 40, 1);
  expectEveryCut(withIp(filterOf(0), "2001:db8::3"), tcp, 18 + 40, 0);
  expectEveryCut(withIp(filterOf(0), "198.18.0.1"), tcp, 18 + 40, 0);
  CaptureFilter port = filterOf(VDEV_CAPF_PORT | VDEV_CAPF_PROTO);
  port.proto = 6;
  port.port = 443;
  expectEveryCut(port, tcp, 18 + 44, 1);
  const Bytes icmp6 = cat(eth(0x86dd), ipv6(58, "fe80::1", "ff02::1", 0x8600, 0));
  CaptureFilter proto = filterOf(VDEV_CAPF_PROTO);
  proto.proto = 58;
  expectEveryCut(proto, icmp6, 14 + 40, 1);
  proto.proto = 1;  // icmp is IPv4's
  expectEveryCut(proto, icmp6, 14 + 40, 0);
  // Version 4 inside an IPv6 EtherType.
  Bytes bad = tcp;
  bad[18] = 0x45;
  proto.proto = 6;
  expectEveryCut(proto, bad, 18, 0);
}

TEST(CaptureFilter, RandomBytesNeverReadPastTheEnd) {
  // Any bytes, any length up to 128, every field asked for: the matcher
  // returns without touching the guard page.
  GuardedBuffer g;
  uint32_t x = 12345;
  CaptureFilter all = withIp(filterOf(VDEV_CAPF_ALL), "198.18.0.1");
  all.port = 1;
  all.proto = 6;
  all.ethertype = 0x0800;
  for (int round = 0; round < 20000; round++) {
    Bytes b(size_t(round % 129));
    for (auto& c : b) {
      x = x * 1103515245 + 12345;
      c = uint8_t(x >> 16);
    }
    if (b.size() > 13 && round % 3 == 0) {
      b[12] = 0x81;  // tags, then IP, more often than chance
      b[13] = 0x00;
    }
    if (b.size() > 17 && round % 2 == 0) {
      b[16] = round % 4 ? 0x08 : 0x86;
      b[17] = round % 4 ? 0x00 : 0xdd;
    }
    (void)g.match(all, b, b.size(), 1);
  }
}

}  // namespace
