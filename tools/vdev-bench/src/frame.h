// frame.h - the frames vdev-bench sends: Ethernet + IPv4 + UDP, built by
// testkit (testkit/frame.h), whose payload starts with a vb_payload
// (bpf/bench_shared.h), padded to the requested size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/mac.h"

namespace vdev::bench {

// Frame sizes follow RFC 2544: the size of an Ethernet frame on the wire,
// including the 4-byte FCS that a NIC appends. A 64-byte frame is therefore
// 60 bytes in the buffer handed to the kernel (ETH_ZLEN), 1518 is 1514.
constexpr size_t kFcsLen = 4;
constexpr size_t kMinFrameSize = 64;
constexpr size_t kMaxFrameSize = 1518;

struct FrameSpec {
  Mac src{};
  Mac dst{};
  uint32_t srcIp = 0;  // host byte order
  uint32_t dstIp = 0;
  uint16_t srcPort = 0;
  uint16_t dstPort = 0;
  size_t frameSize = kMinFrameSize;  // on the wire, with FCS
  bool magic = true;  // put VB_MAGIC in the payload (the sink counts only those)
};

// The frame (frameSize - kFcsLen bytes): IPv4 header checksum computed, UDP
// checksum 0 ("none", legal for IPv4, so a generator may rewrite the ports
// without fixing it up), DF set, TTL 64, payload zero after the vb_payload
// header. frameSize must be within [64, 1518].
std::vector<uint8_t> buildFrame(const FrameSpec& spec);

}  // namespace vdev::bench
