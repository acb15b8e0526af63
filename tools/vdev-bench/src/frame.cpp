// frame.cpp - see frame.h.
#include "frame.h"

#include <arpa/inet.h>

#include <cassert>

#include "../bpf/bench_shared.h"

namespace vdev::bench {

static_assert(sizeof(struct vb_payload) == 16, "vb_payload layout is shared with BPF");
static_assert(sizeof(struct vb_counters) == 32, "vb_counters layout is shared with BPF");
// The smallest frame must hold every header plus the payload header the sink
// checks, or the sink would count 64-byte frames as "other".
static_assert(testkit::kUdpPayloadOffset + sizeof(vb_payload) <= kMinFrameSize - kFcsLen);

std::vector<uint8_t> buildFrame(testkit::UdpFrameSpec headers, size_t frameSize, bool magic) {
  assert(frameSize >= kMinFrameSize && frameSize <= kMaxFrameSize);
  headers.size = frameSize - kFcsLen;
  vb_payload pl = {};
  pl.magic = magic ? htonl(VB_MAGIC) : 0;
  return testkit::buildUdpFrame(headers, {reinterpret_cast<const uint8_t*>(&pl), sizeof pl});
}

}  // namespace vdev::bench
