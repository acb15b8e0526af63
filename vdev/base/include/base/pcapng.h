// pcapng blocks (the format of tcpdump -w and Wireshark, IETF
// draft-ietf-opsawg-pcapng): what vdevctl capture writes. A few blocks in
// host byte order -- the byte-order magic tells readers which -- built
// into byte vectors: a Section Header, one Interface Description per
// captured port (nanosecond timestamps), an Enhanced Packet per frame with
// its direction in epb_flags, and an Interface Statistics block at the end
// with the frames the capture missed (isb_ifdrop).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace vdev::pcapng {

inline constexpr uint32_t kSectionHeader = 0x0A0D0D0A, kInterfaceDescription = 1,
                          kInterfaceStatistics = 5, kEnhancedPacket = 6;
inline constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
inline constexpr uint16_t kLinktypeEthernet = 1;
// epb_flags, bits 0-1: the direction.
inline constexpr uint32_t kInbound = 1, kOutbound = 2;

namespace detail {

class Block {
 public:
  explicit Block(uint32_t type) {
    u32(type);
    u32(0);  // the length, filled in by finish()
  }
  void u16(uint16_t v) { put(&v, 2); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  // Bytes, then zeros to a multiple of 4.
  void padded(const void* p, size_t n) {
    put(p, n);
    b_.resize((b_.size() + 3) & ~size_t{3}, 0);
  }
  void option(uint16_t code, const void* p, size_t n) {
    u16(code);
    u16(uint16_t(n));
    padded(p, n);
  }
  void timestamp(uint64_t ns) {  // in the interface's unit: ns (if_tsresol 9)
    u32(uint32_t(ns >> 32));
    u32(uint32_t(ns));
  }
  std::vector<uint8_t> finish() {
    option(0, nullptr, 0);  // opt_endofopt
    const uint32_t len = uint32_t(b_.size() + 4);
    u32(len);
    std::memcpy(b_.data() + 4, &len, 4);
    return std::move(b_);
  }

 private:
  void put(const void* p, size_t n) {
    const size_t at = b_.size();
    b_.resize(at + n);
    if (n) std::memcpy(b_.data() + at, p, n);
  }
  std::vector<uint8_t> b_;
};

}  // namespace detail

// The file's start: a section of unknown length, written by `app`.
inline std::vector<uint8_t> sectionHeader(std::string_view app) {
  detail::Block b(kSectionHeader);
  b.u32(kByteOrderMagic);
  b.u16(1);  // major
  b.u16(0);  // minor
  b.u64(~uint64_t{0});  // section length: not given
  b.option(4, app.data(), app.size());  // shb_userappl
  return b.finish();
}

// Interface `name` (its id: the order of these blocks, from 0), Ethernet,
// frames cut at snaplen, timestamps in nanoseconds.
inline std::vector<uint8_t> interfaceDescription(std::string_view name, uint32_t snaplen) {
  detail::Block b(kInterfaceDescription);
  b.u16(kLinktypeEthernet);
  b.u16(0);
  b.u32(snaplen);
  b.option(2, name.data(), name.size());  // if_name
  const uint8_t tsresol = 9;              // 10^-9 s
  b.option(9, &tsresol, 1);               // if_tsresol
  return b.finish();
}

// One frame: the bytes kept of wire_len, seen at time_ns (since the
// epoch), kInbound or kOutbound.
inline std::vector<uint8_t> enhancedPacket(uint32_t interface, uint64_t time_ns, std::span<const uint8_t> kept,
                                           uint32_t wire_len, uint32_t direction) {
  detail::Block b(kEnhancedPacket);
  b.u32(interface);
  b.timestamp(time_ns);
  b.u32(uint32_t(kept.size()));
  b.u32(wire_len);
  b.padded(kept.data(), kept.size());
  b.option(2, &direction, 4);  // epb_flags
  return b.finish();
}

// At the end: frames the interface's capture saw (received) and missed
// (dropped), at time_ns.
inline std::vector<uint8_t> interfaceStatistics(uint32_t interface, uint64_t time_ns, uint64_t received,
                                                uint64_t dropped) {
  detail::Block b(kInterfaceStatistics);
  b.u32(interface);
  b.timestamp(time_ns);
  b.option(4, &received, 8);  // isb_ifrecv
  b.option(5, &dropped, 8);   // isb_ifdrop
  return b.finish();
}

}  // namespace vdev::pcapng
