// Test frames shared by vdev-vm and the end-to-end harness (tests/e2e).
//
// A test frame is an Ethernet frame whose payload starts with a small header
// (magic, flow id, sequence number, length) followed by filler bytes derived
// from every header field, the MAC addresses included. A receiver rebuilds the
// frame from what it parsed and compares byte for byte, so a frame that was
// truncated, padded, re-addressed or corrupted anywhere is recognised, and
// frames that are not ours (no magic) are told apart from corrupted ones.
//
// Two encapsulations:
//   kExperimental  ethertype 0x88B5 (IEEE 802 local experimental), payload at 14
//   kIpv4Udp       IPv4/UDP 198.18.<flow>.x -> 198.19.<flow>.x (RFC 2544 range),
//                  valid IPv4 header checksum and UDP checksum, payload at 42
//
// Header only, standard library only: vdev-vm is one file plus this one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace vdev::testframe {

using Mac = std::array<uint8_t, 6>;

inline constexpr uint16_t kEtherTypeExperimental = 0x88B5;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kUdpPort = 47001;        // source and destination port
inline constexpr uint32_t kMagic = 0x76644532;     // "vdE2"
inline constexpr size_t kEthHeader = 14;
inline constexpr size_t kIpv4Header = 20;
inline constexpr size_t kUdpHeader = 8;
inline constexpr size_t kPayloadHeader = 16;       // magic, flow, seq, length, kind, pad
inline constexpr size_t kMaxSize = 9216;           // jumbo; tests mostly use 60..1514

inline constexpr Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

enum class Kind : uint8_t { kExperimental = 0, kIpv4Udp = 1 };

struct Spec {
  Mac dst{};
  Mac src{};
  Kind kind = Kind::kExperimental;
  uint32_t flow = 0;
  uint32_t seq = 0;
  size_t size = 60;  // whole frame without FCS
};

// Smallest frame that carries the payload header for `kind`.
constexpr size_t minSize(Kind kind) {
  return kind == Kind::kIpv4Udp ? kEthHeader + kIpv4Header + kUdpHeader + kPayloadHeader
                                : kEthHeader + kPayloadHeader;
}

constexpr size_t payloadOffset(Kind kind) {
  return kind == Kind::kIpv4Udp ? kEthHeader + kIpv4Header + kUdpHeader : kEthHeader;
}

namespace detail {

inline void put16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
inline void put32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24); p[1] = uint8_t(v >> 16); p[2] = uint8_t(v >> 8); p[3] = uint8_t(v);
}
inline uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// One's complement sum over big-endian 16-bit words (RFC 1071), not folded.
inline uint32_t csumAdd(uint32_t sum, const uint8_t* p, size_t len) {
  for (; len > 1; p += 2, len -= 2) sum += get16(p);
  if (len) sum += uint32_t(p[0]) << 8;
  return sum;
}
inline uint16_t csumFold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

// splitmix64: a cheap, well-mixed generator for the filler bytes.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t seedOf(const Spec& s) {
  uint64_t h = 0;
  for (uint8_t b : s.dst) h = mix(h ^ b);
  for (uint8_t b : s.src) h = mix(h ^ b);
  h = mix(h ^ (uint64_t(s.flow) << 32 | s.seq));
  return mix(h ^ (uint64_t(s.size) << 8 | uint8_t(s.kind)));
}

}  // namespace detail

// Writes the frame described by `spec` to the front of `out`.
// Returns spec.size, or 0 if spec.size is outside [minSize(kind), kMaxSize] or
// `out` is too small.
inline size_t build(const Spec& spec, std::span<uint8_t> out) {
  using namespace detail;
  if (spec.size < minSize(spec.kind) || spec.size > kMaxSize || out.size() < spec.size) return 0;
  uint8_t* f = out.data();
  std::memcpy(f, spec.dst.data(), 6);
  std::memcpy(f + 6, spec.src.data(), 6);
  const size_t off = payloadOffset(spec.kind);
  if (spec.kind == Kind::kIpv4Udp) {
    put16(f + 12, kEtherTypeIpv4);
    uint8_t* ip = f + kEthHeader;
    const size_t ipLen = spec.size - kEthHeader;
    ip[0] = 0x45;  // version 4, IHL 5
    ip[1] = 0;
    put16(ip + 2, uint16_t(ipLen));
    put16(ip + 4, uint16_t(spec.seq));  // identification
    put16(ip + 6, 0x4000);              // DF
    ip[8] = 64;                         // TTL
    ip[9] = 17;                         // UDP
    put16(ip + 10, 0);
    // 198.18.0.0/15: flow picks the third octet, seq the fourth.
    const uint8_t srcIp[4] = {198, 18, uint8_t(spec.flow), uint8_t(1 + spec.seq % 250)};
    const uint8_t dstIp[4] = {198, 19, uint8_t(spec.flow), uint8_t(1 + spec.seq % 250)};
    std::memcpy(ip + 12, srcIp, 4);
    std::memcpy(ip + 16, dstIp, 4);
    put16(ip + 10, csumFold(csumAdd(0, ip, kIpv4Header)));
    uint8_t* udp = ip + kIpv4Header;
    put16(udp, kUdpPort);
    put16(udp + 2, kUdpPort);
    put16(udp + 4, uint16_t(ipLen - kIpv4Header));
    put16(udp + 6, 0);  // filled in below, once the payload is written
  } else {
    put16(f + 12, kEtherTypeExperimental);
  }
  uint8_t* pl = f + off;
  put32(pl, kMagic);
  put32(pl + 4, spec.flow);
  put32(pl + 8, spec.seq);
  put16(pl + 12, uint16_t(spec.size));
  pl[14] = uint8_t(spec.kind);
  pl[15] = 0;
  uint64_t state = seedOf(spec);
  for (size_t i = off + kPayloadHeader; i < spec.size; i += 8) {
    state = mix(state);
    const size_t n = spec.size - i < 8 ? spec.size - i : 8;
    std::memcpy(f + i, &state, n);
  }
  if (spec.kind == Kind::kIpv4Udp) {
    uint8_t* ip = f + kEthHeader;
    uint8_t* udp = ip + kIpv4Header;
    const size_t udpLen = spec.size - kEthHeader - kIpv4Header;
    uint32_t sum = csumAdd(0, ip + 12, 8);  // pseudo header: addresses,
    sum += 17 + uint32_t(udpLen);           // protocol and UDP length
    uint16_t c = csumFold(csumAdd(sum, udp, udpLen));
    put16(udp + 6, c == 0 ? 0xffff : c);  // 0 means "no checksum" in UDP/IPv4
  }
  return spec.size;
}

enum class Verdict {
  kOk,       // one of ours, byte for byte as built
  kForeign,  // not a test frame (no magic where one would be)
  kCorrupt,  // carries the magic but differs from what was sent
};

struct Parsed {
  Verdict verdict = Verdict::kForeign;
  Spec spec;  // valid when verdict != kForeign
};

// Classifies a received frame. Never reads outside `frame`.
inline Parsed parse(std::span<const uint8_t> frame) {
  using namespace detail;
  Parsed r;
  if (frame.size() < kEthHeader) return r;
  const uint8_t* f = frame.data();
  const uint16_t type = get16(f + 12);
  Kind kind;
  if (type == kEtherTypeExperimental) {
    kind = Kind::kExperimental;
  } else if (type == kEtherTypeIpv4 && frame.size() >= minSize(Kind::kIpv4Udp) &&
             f[kEthHeader] == 0x45 && f[kEthHeader + 9] == 17 &&
             get16(f + kEthHeader + kIpv4Header + 2) == kUdpPort) {
    kind = Kind::kIpv4Udp;
  } else {
    return r;
  }
  if (frame.size() < minSize(kind)) return r;
  const uint8_t* pl = f + payloadOffset(kind);
  if (get32(pl) != kMagic) return r;
  r.verdict = Verdict::kCorrupt;
  std::memcpy(r.spec.dst.data(), f, 6);
  std::memcpy(r.spec.src.data(), f + 6, 6);
  r.spec.kind = kind;
  r.spec.flow = get32(pl + 4);
  r.spec.seq = get32(pl + 8);
  r.spec.size = get16(pl + 12);
  if (r.spec.size != frame.size() || pl[14] != uint8_t(kind)) return r;
  std::array<uint8_t, kMaxSize> expect;
  if (build(r.spec, expect) != frame.size()) return r;
  if (std::memcmp(expect.data(), f, frame.size()) == 0) r.verdict = Verdict::kOk;
  return r;
}

// "02:00:5e:10:00:01" <-> Mac. parseMac returns false on anything else.
inline bool parseMac(std::string_view s, Mac& out) {
  if (s.size() != 17) return false;
  for (size_t i = 0; i < 6; ++i) {
    unsigned v = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = s[i * 3 + j];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else return false;
    }
    if (i < 5 && s[i * 3 + 2] != ':') return false;
    out[i] = uint8_t(v);
  }
  return true;
}

inline std::string formatMac(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

inline bool isMulticast(const Mac& m) { return m[0] & 1; }

}  // namespace vdev::testframe
