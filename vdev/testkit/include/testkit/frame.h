// Frames that tests and benchmarks send: one builder for every header they
// carry, and the test frame format that receivers check byte for byte.
//
// Ethernet / IPv4 / UDP (buildUdpFrame): IPv4 with DF, TTL 64 and its header
// checksum; UDP with its checksum or 0 ("none", legal for IPv4, so that a
// generator may rewrite the ports without fixing it up). vdev-bench's frames
// are these, with its own payload.
//
// A test frame (buildTestFrame, parseTestFrame) is an Ethernet frame whose
// payload starts with a small header (magic, flow id, sequence number,
// length, kind) followed by filler bytes derived from every header field,
// the MAC addresses included. A receiver rebuilds the frame from what it
// parsed and compares byte for byte, so a frame that was truncated, padded,
// re-addressed or corrupted anywhere is recognised, and frames that are not
// ours (no magic) are told apart from corrupted ones. Two encapsulations:
//   kExperimental  ethertype 0x88B5 (IEEE 802 local experimental), payload at 14
//   kIpv4Udp       IPv4/UDP 198.18.<flow>.x -> 198.19.<flow>.x (RFC 2544 range),
//                  UDP port 47001 both ways, valid IPv4 and UDP checksums,
//                  payload at 42
// vdev-vm (the VM stand-in) and the e2e tests speak this format.
//
// Pure functions of their arguments: thread safe, no allocation except where
// a std::vector is returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/mac.h"

namespace vdev::testkit {

inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kIpv4HeaderLen = 20;  // no options
inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr size_t kUdpPayloadOffset = kEthHeaderLen + kIpv4HeaderLen + kUdpHeaderLen;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeExperimental = 0x88B5;
inline constexpr Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// One's complement sum over big-endian 16-bit words (RFC 1071), not folded;
// an odd last byte counts as the high byte of a word.
uint32_t checksumAdd(uint32_t sum, const uint8_t* p, size_t len);
// Folds and complements a sum: the checksum field's value (host order).
uint16_t checksumFold(uint32_t sum);

// ---------------------------------------------------------------------------
// Ethernet + IPv4 + UDP

struct UdpFrameSpec {
  Mac dst{};
  Mac src{};
  uint32_t src_ip = 0;  // host byte order
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint16_t ip_id = 0;         // IPv4 identification
  size_t size = 60;           // the whole frame, without FCS; at least kUdpPayloadOffset
  bool udp_checksum = false;  // false: UDP checksum 0
};

// Writes the Ethernet, IPv4 and UDP headers of a frame of frame.size()
// bytes (lengths from it, spec.size is not used) with UDP checksum 0.
// Returns false if the frame cannot hold them or is longer than IPv4 allows.
bool writeUdpHeaders(const UdpFrameSpec& spec, std::span<uint8_t> frame);
// Sets the UDP checksum of a frame written by writeUdpHeaders over its
// pseudo header, UDP header and everything after it (0 is sent as 0xffff).
void setUdpChecksum(std::span<uint8_t> frame);
// The frame: headers, then `payload`, then zeros up to spec.size. Empty if
// spec.size cannot hold the headers and the payload.
std::vector<uint8_t> buildUdpFrame(const UdpFrameSpec& spec, std::span<const uint8_t> payload);

// ---------------------------------------------------------------------------
// Test frames

inline constexpr uint16_t kTestFrameUdpPort = 47001;  // source and destination
inline constexpr uint32_t kTestFrameMagic = 0x76644532;  // "vdE2"
inline constexpr size_t kTestFrameHeaderLen = 16;  // magic, flow, seq, length, kind, pad
inline constexpr size_t kTestFrameMaxSize = 9216;  // jumbo; tests mostly use 60..1514

enum class FrameKind : uint8_t { kExperimental = 0, kIpv4Udp = 1 };

struct TestFrameSpec {
  Mac dst{};
  Mac src{};
  FrameKind kind = FrameKind::kExperimental;
  uint32_t flow = 0;
  uint32_t seq = 0;
  size_t size = 60;  // whole frame without FCS
};

// Where the test frame header starts.
constexpr size_t testFramePayloadOffset(FrameKind kind) {
  return kind == FrameKind::kIpv4Udp ? kUdpPayloadOffset : kEthHeaderLen;
}
// Smallest frame that carries the test frame header for `kind`.
constexpr size_t testFrameMinSize(FrameKind kind) {
  return testFramePayloadOffset(kind) + kTestFrameHeaderLen;
}

// Writes the frame described by `spec` to the front of `out`. Returns
// spec.size, or 0 if spec.size is outside [testFrameMinSize(kind),
// kTestFrameMaxSize] or `out` is too small.
size_t buildTestFrame(const TestFrameSpec& spec, std::span<uint8_t> out);

enum class FrameVerdict {
  kOk,       // one of ours, byte for byte as built
  kForeign,  // not a test frame (no magic where one would be)
  kCorrupt,  // carries the magic but differs from what was sent
};

struct ParsedTestFrame {
  FrameVerdict verdict = FrameVerdict::kForeign;
  TestFrameSpec spec;  // what the frame claims to be; valid unless kForeign
};

// Classifies a received frame. Never reads outside `frame`.
ParsedTestFrame parseTestFrame(std::span<const uint8_t> frame);

// A guest's side of ARP and ping, as a VM stand-in answers them: if `f`
// (len bytes) is an ARP request for `ip` or an ICMP echo request to `mac`
// and `ip`, rewrites it in place into the reply `mac`/`ip` sends back and
// returns true; else false, `f` untouched.
bool makeArpOrEchoReply(const Mac& mac, const uint8_t ip[4], uint8_t* f, size_t len);

}  // namespace vdev::testkit
