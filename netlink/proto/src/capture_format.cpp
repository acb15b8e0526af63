// CAPTURE_FRAMES' record format: a header and the kept bytes, padded to 4.
#include "codec_attrs.h"

namespace vdev::proto {

using namespace codec_detail;

// --------------------------------------------------------------- capture

void appendCaptureRecord(std::vector<uint8_t>& out, uint64_t time_ns, uint32_t wire_len, CaptureDir dir,
                         std::span<const uint8_t> kept) {
  CaptureRecordHeader h{time_ns, wire_len, static_cast<uint16_t>(kept.size()), static_cast<uint8_t>(dir), 0};
  const size_t at = out.size();
  out.resize(at + sizeof h + ((kept.size() + 3) & ~size_t{3}), 0);
  std::memcpy(out.data() + at, &h, sizeof h);
  if (!kept.empty()) std::memcpy(out.data() + at + sizeof h, kept.data(), kept.size());
}

Result<std::vector<CapturedFrame>> parseCaptureFrames(std::span<const uint8_t> frames) {
  std::vector<CapturedFrame> out;
  size_t at = 0;
  while (at < frames.size()) {
    const std::string which = "CAPTURE_FRAMES: record " + std::to_string(out.size() + 1);
    CaptureRecordHeader h;
    if (frames.size() - at < sizeof h) return invalid(which + ": truncated header");
    std::memcpy(&h, frames.data() + at, sizeof h);
    at += sizeof h;
    if (h.kept > h.wire_len) return invalid(which + ": keeps " + std::to_string(h.kept) + " bytes of " +
                                            std::to_string(h.wire_len));
    if (h.dir != uint8_t(CaptureDir::kRx) && h.dir != uint8_t(CaptureDir::kTx))
      return invalid(which + ": direction " + std::to_string(h.dir));
    const size_t padded = (size_t{h.kept} + 3) & ~size_t{3};
    if (frames.size() - at < h.kept) return invalid(which + ": truncated frame");
    out.push_back({h.time_ns, h.wire_len, static_cast<CaptureDir>(h.dir), frames.subspan(at, h.kept)});
    at += std::min(padded, frames.size() - at);
  }
  return out;
}

}  // namespace vdev::proto
