#include "testkit/frame.h"

#include <array>
#include <cstring>

namespace vdev::testkit {

namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// splitmix64: a cheap, well-mixed generator for the filler bytes.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t seedOf(const TestFrameSpec& s) {
  uint64_t h = 0;
  for (uint8_t b : s.dst) h = mix(h ^ b);
  for (uint8_t b : s.src) h = mix(h ^ b);
  h = mix(h ^ (uint64_t(s.flow) << 32 | s.seq));
  return mix(h ^ (uint64_t(s.size) << 8 | uint8_t(s.kind)));
}

}  // namespace

uint32_t checksumAdd(uint32_t sum, const uint8_t* p, size_t len) {
  for (; len > 1; p += 2, len -= 2) sum += get16(p);
  if (len) sum += uint32_t(p[0]) << 8;
  return sum;
}

uint16_t checksumFold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

bool writeUdpHeaders(const UdpFrameSpec& spec, std::span<uint8_t> frame) {
  if (frame.size() < kUdpPayloadOffset || frame.size() - kEthHeaderLen > 0xffff) return false;
  uint8_t* f = frame.data();
  std::memcpy(f, spec.dst.data(), 6);
  std::memcpy(f + 6, spec.src.data(), 6);
  put16(f + 12, kEtherTypeIpv4);
  uint8_t* ip = f + kEthHeaderLen;
  const size_t ipLen = frame.size() - kEthHeaderLen;
  ip[0] = 0x45;  // version 4, IHL 5
  ip[1] = 0;     // TOS
  put16(ip + 2, uint16_t(ipLen));
  put16(ip + 4, spec.ip_id);
  put16(ip + 6, 0x4000);  // DF
  ip[8] = 64;             // TTL
  ip[9] = 17;             // UDP
  put16(ip + 10, 0);
  put32(ip + 12, spec.src_ip);
  put32(ip + 16, spec.dst_ip);
  put16(ip + 10, checksumFold(checksumAdd(0, ip, kIpv4HeaderLen)));
  uint8_t* udp = ip + kIpv4HeaderLen;
  put16(udp, spec.src_port);
  put16(udp + 2, spec.dst_port);
  put16(udp + 4, uint16_t(ipLen - kIpv4HeaderLen));
  put16(udp + 6, 0);
  return true;
}

void setUdpChecksum(std::span<uint8_t> frame) {
  if (frame.size() < kUdpPayloadOffset) return;
  uint8_t* ip = frame.data() + kEthHeaderLen;
  uint8_t* udp = ip + kIpv4HeaderLen;
  const size_t udpLen = frame.size() - kEthHeaderLen - kIpv4HeaderLen;
  put16(udp + 6, 0);
  uint32_t sum = checksumAdd(0, ip + 12, 8);  // pseudo header: addresses,
  sum += 17 + uint32_t(udpLen);               // protocol and UDP length
  const uint16_t c = checksumFold(checksumAdd(sum, udp, udpLen));
  put16(udp + 6, c == 0 ? 0xffff : c);  // 0 means "no checksum" in UDP/IPv4
}

std::vector<uint8_t> buildUdpFrame(const UdpFrameSpec& spec, std::span<const uint8_t> payload) {
  if (spec.size < kUdpPayloadOffset + payload.size()) return {};
  std::vector<uint8_t> f(spec.size, 0);
  if (!writeUdpHeaders(spec, f)) return {};
  if (!payload.empty()) std::memcpy(f.data() + kUdpPayloadOffset, payload.data(), payload.size());
  if (spec.udp_checksum) setUdpChecksum(f);
  return f;
}

size_t buildTestFrame(const TestFrameSpec& spec, std::span<uint8_t> out) {
  if (spec.size < testFrameMinSize(spec.kind) || spec.size > kTestFrameMaxSize || out.size() < spec.size)
    return 0;
  const std::span<uint8_t> frame = out.first(spec.size);
  uint8_t* f = frame.data();
  if (spec.kind == FrameKind::kIpv4Udp) {
    // 198.18.0.0/15: flow picks the third octet, seq the fourth.
    const uint32_t host = uint32_t(uint8_t(spec.flow)) << 8 | (1 + spec.seq % 250);
    const UdpFrameSpec udp{.dst = spec.dst,
                           .src = spec.src,
                           .src_ip = 0xc6120000u | host,  // 198.18.<flow>.<seq>
                           .dst_ip = 0xc6130000u | host,  // 198.19.<flow>.<seq>
                           .src_port = kTestFrameUdpPort,
                           .dst_port = kTestFrameUdpPort,
                           .ip_id = uint16_t(spec.seq)};
    writeUdpHeaders(udp, frame);
  } else {
    std::memcpy(f, spec.dst.data(), 6);
    std::memcpy(f + 6, spec.src.data(), 6);
    put16(f + 12, kEtherTypeExperimental);
  }
  const size_t off = testFramePayloadOffset(spec.kind);
  uint8_t* pl = f + off;
  put32(pl, kTestFrameMagic);
  put32(pl + 4, spec.flow);
  put32(pl + 8, spec.seq);
  put16(pl + 12, uint16_t(spec.size));
  pl[14] = uint8_t(spec.kind);
  pl[15] = 0;
  uint64_t state = seedOf(spec);
  for (size_t i = off + kTestFrameHeaderLen; i < spec.size; i += 8) {
    state = mix(state);
    const size_t n = spec.size - i < 8 ? spec.size - i : 8;
    std::memcpy(f + i, &state, n);
  }
  if (spec.kind == FrameKind::kIpv4Udp) setUdpChecksum(frame);
  return spec.size;
}

ParsedTestFrame parseTestFrame(std::span<const uint8_t> frame) {
  ParsedTestFrame r;
  if (frame.size() < kEthHeaderLen) return r;
  const uint8_t* f = frame.data();
  const uint16_t type = get16(f + 12);
  FrameKind kind;
  if (type == kEtherTypeExperimental) {
    kind = FrameKind::kExperimental;
  } else if (type == kEtherTypeIpv4 && frame.size() >= testFrameMinSize(FrameKind::kIpv4Udp) &&
             f[kEthHeaderLen] == 0x45 && f[kEthHeaderLen + 9] == 17 &&
             get16(f + kEthHeaderLen + kIpv4HeaderLen + 2) == kTestFrameUdpPort) {
    kind = FrameKind::kIpv4Udp;
  } else {
    return r;
  }
  if (frame.size() < testFrameMinSize(kind)) return r;
  const uint8_t* pl = f + testFramePayloadOffset(kind);
  if (get32(pl) != kTestFrameMagic) return r;
  r.verdict = FrameVerdict::kCorrupt;
  std::memcpy(r.spec.dst.data(), f, 6);
  std::memcpy(r.spec.src.data(), f + 6, 6);
  r.spec.kind = kind;
  r.spec.flow = get32(pl + 4);
  r.spec.seq = get32(pl + 8);
  r.spec.size = get16(pl + 12);
  if (r.spec.size != frame.size() || pl[14] != uint8_t(kind)) return r;
  std::array<uint8_t, kTestFrameMaxSize> expect;
  if (buildTestFrame(r.spec, expect) != frame.size()) return r;
  if (std::memcmp(expect.data(), f, frame.size()) == 0) r.verdict = FrameVerdict::kOk;
  return r;
}

bool makeArpOrEchoReply(const Mac& mac, const uint8_t ip4[4], uint8_t* f, size_t len) {
  if (len < 42) return false;
  const uint16_t type = uint16_t(f[12] << 8 | f[13]);
  if (type == 0x0806) {  // ARP, Ethernet/IPv4 request for our address
    uint8_t* a = f + 14;
    if (a[0] != 0 || a[1] != 1 || a[2] != 8 || a[3] != 0 || a[7] != 1) return false;
    if (std::memcmp(a + 24, ip4, 4) != 0) return false;
    uint8_t sha[6], spa[4];
    std::memcpy(sha, a + 8, 6);
    std::memcpy(spa, a + 14, 4);
    a[7] = 2;  // reply
    std::memcpy(a + 8, mac.data(), 6);
    std::memcpy(a + 14, ip4, 4);
    std::memcpy(a + 18, sha, 6);
    std::memcpy(a + 24, spa, 4);
    std::memcpy(f, sha, 6);
    std::memcpy(f + 6, mac.data(), 6);
    return true;
  }
  if (type != 0x0800 || std::memcmp(f, mac.data(), 6) != 0) return false;
  uint8_t* ip = f + 14;
  const size_t ihl = size_t(ip[0] & 0x0f) * 4;
  if ((ip[0] >> 4) != 4 || ihl < 20 || len < 14 + ihl + 8 || ip[9] != 1) return false;
  if (std::memcmp(ip + 16, ip4, 4) != 0) return false;
  uint8_t* icmp = ip + ihl;
  if (icmp[0] != 8) return false;
  // Swap addresses (the IPv4 checksum covers their sum: unchanged), make it
  // an echo reply and adjust the ICMP checksum for type 8 -> 0 (RFC 1624).
  uint8_t tmp[6];
  std::memcpy(tmp, ip + 12, 4);
  std::memcpy(ip + 12, ip + 16, 4);
  std::memcpy(ip + 16, tmp, 4);
  icmp[0] = 0;
  uint32_t sum = uint32_t(icmp[2] << 8 | icmp[3]) + 0x0800;
  sum = (sum & 0xffff) + (sum >> 16);
  icmp[2] = uint8_t(sum >> 8);
  icmp[3] = uint8_t(sum);
  std::memcpy(f, f + 6, 6);
  std::memcpy(f + 6, mac.data(), 6);
  return true;
}

}  // namespace vdev::testkit
