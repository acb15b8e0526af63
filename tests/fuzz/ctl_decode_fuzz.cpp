// libFuzzer target: the control protocol decoders (vdevd's request parser and
// the client's reply parser) on arbitrary bytes.
//
// Besides "no crash, no UB" (ASan + UBSan), two properties:
//  - a request the daemon accepts is re-encoded by the client encoder (which
//    validates with the same rules) into one that decodes to the same request;
//  - a reply the client accepts, encoded again by the daemon's encoder,
//    decodes to the same reply.
//
// Input: the whole buffer is one request datagram; the same buffer minus its
// first byte is a reply, the first byte choosing what it answers (command
// 1 + (b & 7), dump if b & 0x10 and the command can be dumped).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "proto/codec.h"

namespace {

using namespace vdev::proto;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "ctl_decode_fuzz: property violated: %s\n", what);
  std::abort();
}

void fuzzRequest(std::span<const uint8_t> in) {
  (void)peekHeader(in);
  auto h = decodeHeader(in);
  auto r = decodeRequest(in);
  if (!r) {
    if (r.error().what.empty() || r.error().err <= 0) fail("request error without message/errno");
    return;
  }
  if (!h) fail("decodeRequest accepted what decodeHeader refused");
  auto again = encodeRequest(r->hdr.seq, r->body);
  if (!again) fail("client encoder refuses a request the daemon accepts");
  auto back = decodeRequest(*again);
  if (!back || !(back->body == r->body)) fail("request round trip differs");
  if (back->hdr.seq != r->hdr.seq) fail("request seq lost");
  // Every accepted request can be answered.
  if (!encodeReply(*r, ErrorReply{EINVAL, "fuzz"})) fail("error reply does not encode");
}

bool dumpable(Cmd c) { return c == kCmdPortGet || c == kCmdStatsGet || c == kCmdFdbGet; }

// A request the reply could answer.
Request requestFor(Cmd cmd, bool dump, uint32_t seq) {
  Request r;
  r.hdr.seq = seq;
  switch (cmd) {
    case kCmdPortAdd: r.body = PortAddRequest{"x"}; break;
    case kCmdPortDel: r.body = PortDelRequest{"x"}; break;
    case kCmdPortGet: r.body = PortGetRequest{dump ? "" : "x"}; break;
    case kCmdStatsGet: r.body = StatsGetRequest{dump ? "" : "x"}; break;
    case kCmdFdbGet: r.body = FdbGetRequest{}; break;
    case kCmdFdbAdd: r.body = FdbAddRequest{}; break;
    case kCmdFdbDel: r.body = FdbDelRequest{}; break;
    case kCmdPortSet: r.body = PortSetRequest{"x", true}; break;
    case kCmdCaptureStart: r.body = CaptureStartRequest{"x"}; break;
    case kCmdCaptureRead: r.body = CaptureReadRequest{1}; break;
    case kCmdCaptureStop: r.body = CaptureStopRequest{1}; break;
    default: r.body = InfoGetRequest{}; break;
  }
  return r;
}

void fuzzReply(std::span<const uint8_t> in) {
  if (in.empty()) return;
  const uint8_t sel = in[0];
  in = in.subspan(1);
  Expect e;
  e.cmd = static_cast<Cmd>(1 + (sel & 0x0f) % kCmdMax);
  e.dump = e.cmd == kCmdFdbGet || (dumpable(e.cmd) && (sel & 0x10));
  // No seq expectation: the first message's is taken (else the fuzzer would
  // rarely get past the seq check).
  auto r = decodeReply(in, e);
  if (!r) {
    if (r.error().what.empty() || r.error().err <= 0) fail("reply error without message/errno");
    return;
  }
  uint32_t seq = 0;
  if (in.size() >= 16) std::memcpy(&seq, in.data() + 8, 4);
  auto dgs = encodeReply(requestFor(e.cmd, e.dump, seq), *r);
  if (!dgs) fail("daemon encoder refuses a reply the client accepts");
  ReplyAssembler a(Expect{seq, e.cmd, e.dump});
  for (const auto& d : *dgs) {
    if (d.size() > kMaxMessageSize) fail("reply datagram too large");
    if (!a.feed(d)) fail("re-encoded reply does not decode");
  }
  auto back = a.finish();
  if (!back || !(*back == *r)) fail("reply round trip differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  fuzzRequest(in);
  fuzzReply(in);
  return 0;
}
