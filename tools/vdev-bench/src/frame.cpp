// frame.cpp - see frame.h.
#include "frame.h"

#include <arpa/inet.h>

#include <cassert>

#include "../bpf/bench_shared.h"
#include "testkit/frame.h"

namespace vdev::bench {

static_assert(sizeof(struct vb_payload) == 16, "vb_payload layout is shared with BPF");
static_assert(sizeof(struct vb_counters) == 32, "vb_counters layout is shared with BPF");
// The smallest frame must hold every header plus the payload header the sink
// checks, or the sink would count 64-byte frames as "other".
static_assert(testkit::kUdpPayloadOffset + sizeof(vb_payload) <= kMinFrameSize - kFcsLen);

std::vector<uint8_t> buildFrame(const FrameSpec& spec) {
  assert(spec.frameSize >= kMinFrameSize && spec.frameSize <= kMaxFrameSize);
  vb_payload pl = {};
  pl.magic = spec.magic ? htonl(VB_MAGIC) : 0;
  return testkit::buildUdpFrame({.dst = spec.dst,
                                 .src = spec.src,
                                 .src_ip = spec.srcIp,
                                 .dst_ip = spec.dstIp,
                                 .src_port = spec.srcPort,
                                 .dst_port = spec.dstPort,
                                 .size = spec.frameSize - kFcsLen},
                                {reinterpret_cast<const uint8_t*>(&pl), sizeof pl});
}

}  // namespace vdev::bench
