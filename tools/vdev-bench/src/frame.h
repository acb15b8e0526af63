// frame.h - the frames vdev-bench sends: Ethernet + IPv4 + UDP, built by
// testkit (testkit/frame.h), whose payload starts with a vb_payload
// (bpf/bench_shared.h), padded to the requested size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "testkit/frame.h"

namespace vdev::bench {

// Frame sizes follow RFC 2544: the size of an Ethernet frame on the wire,
// including the 4-byte FCS that a NIC appends. A 64-byte frame is therefore
// 60 bytes in the buffer handed to the kernel (ETH_ZLEN), 1518 is 1514.
constexpr size_t kFcsLen = 4;
constexpr size_t kMinFrameSize = 64;
constexpr size_t kMaxFrameSize = 1518;

// A frame of `frameSize` bytes on the wire (with FCS, 64..1518;
// frameSize - kFcsLen in the buffer) with the Ethernet, IPv4 and UDP headers
// of `headers` (whose size is set from frameSize): IPv4 header checksum
// computed, UDP checksum 0 ("none", legal for IPv4, so a generator may
// rewrite the ports without fixing it up), DF set, TTL 64. The payload is a
// vb_payload, with VB_MAGIC when `magic` (the sink counts only those), then
// zeros.
std::vector<uint8_t> buildFrame(testkit::UdpFrameSpec headers, size_t frameSize, bool magic = true);

}  // namespace vdev::bench
