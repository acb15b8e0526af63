// FastPath: the kernel fast path for learned unicast (--fast-path).
//
// vdevd mirrors its MAC table into a BPF hash map that every port's XDP
// program reads: a frame whose source MAC vdevd learned on the ingress port
// and whose destination MAC it learned on another fast-path port is
// redirected by the kernel through a devmap (the destination device's bulk
// ndo_xdp_xmit: one producer lock per flush of up to 16 frames) and never
// reaches vdevd. Everything else -- unknown, broadcast, multicast, new or
// moving stations, spoofed sources, 802.3 frames -- still goes through vdevd,
// which learns, checks and counts as before.
//
// Counters stay exact: the XDP program counts what it redirects (rx at the
// ingress port, tx at the destination), and two tracepoint programs count
// what the kernel then drops (xdp_devmap_xmit: the device refused frames;
// xdp_redirect_err: the redirect failed -- device down, frame over its MTU).
// vdevd adds these to the port counters: rx += fast rx, tx += fast tx -
// fast drops, drops.fast_xmit += fast drops.
//
// Destination ports: taps (tun's ndo_xdp_xmit queues into the VM's ring) and
// veths. A veth transmits redirected frames only if its peer (the
// container's end) has NAPI: GRO on, or an XDP program. vdevd turns GRO on
// for the veths it creates; a veth whose peer refuses (-ENXIO) is detected
// from the first refused frames (counted as fast_xmit drops) and taken off
// the fast path (FastSync, fast_sync.h, decides; XdpFeatures,
// xdp_features.h, asks the device, or before Linux 6.3 goes by its driver).
//
// Ports are named by their index (Port::index()), which is also their key in
// the devmap and their row in the counters map.
//
// Ownership: the object owns the BPF skeleton (its maps) and the tracepoint
// links; the links go first. Thread safety: owned by the datapath thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/result.h"
#include "base/vlan.h"

struct vdev_fast;
struct vdev_capture_filter;
struct bpf_link;
struct perf_buffer;

namespace vdev::datapath {

// Ports the fast path's maps have rows for (VDEV_FAST_MAX_PORTS): the
// devmap, the counters, the skb path's port table. A port with a higher
// index never takes the fast path, as a source or as a destination: its
// unicast goes through vdevd, counted there (its program is loaded with the
// fast path off, the devmap refuses it, the skb path leaves it to XDP).
inline constexpr uint16_t kFastPathPorts = 1024;

struct FastPortStats {
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0, drops = 0, refused = 0;
  // Of the drops, those the device's queue refused although it took the
  // bulk (no error): tun and veth count them in their tx_dropped too.
  uint64_t queue_full = 0;
  // skb fast path: frames longer than the destination's MTU, dropped.
  uint64_t oversize = 0;
};

class FastPath {
 public:
  // Loads the maps (fdb_capacity entries) and attaches the tracepoints.
  static Result<std::unique_ptr<FastPath>> create(uint32_t fdb_capacity);
  ~FastPath();
  FastPath(const FastPath&) = delete;
  FastPath& operator=(const FastPath&) = delete;

  // Map fds for the port programs (bpf_map__reuse_fd before load).
  int fdbFd() const;
  int portsFd() const;
  int statsFd() const;
  int ifindexFd() const;
  int captureFd() const;
  int captureEventsFd() const;
  int captureMissedFd() const;
  int vlansFd() const;

  // Capture on the fast path (capture.h): the programs copy the frames
  // they carry from (dirs & 1, Capture::kRx) and to (dirs & 2, kTx) the
  // port, at most snaplen bytes each, to the reader below; dirs 0: none.
  // Only the frames `filter` matches (null or no fields: all).
  Status setCapture(uint16_t port_index, uint8_t dirs, uint32_t snaplen, const vdev_capture_filter* filter = nullptr);
  // The port's copies the per-CPU buffers had no room for, since the fast
  // path was made (a mmapped map row: any thread, no syscall).
  const volatile uint64_t* captureMissedRow(uint16_t port_index) const noexcept;
  // The reader is woken every kCaptureWakeup copies; the datapath thread
  // sleeps at most kCaptureIdleMs while a capture takes copies, so a lone
  // one waits no longer than that.
  static constexpr uint32_t kCaptureWakeup = 32;
  static constexpr int kCaptureIdleMs = 10;
  // The copies' reader, made once (its per-CPU buffers) before the first
  // capture: each copy goes to fn(ctx, port_index, dir, time_ns
  // (CLOCK_MONOTONIC), wire_len, bytes, kept). Control thread, before the
  // datapath thread consumes.
  using CaptureFn = void (*)(void* ctx, uint16_t port_index, uint8_t dir, uint64_t time_ns, uint32_t wire_len,
                             const uint8_t* bytes, uint32_t kept);
  Status openCaptureReader(CaptureFn fn, void* ctx);
  // The reader's fd to wait on (an epoll set of the buffers), -1 before.
  int captureReaderFd() const;
  // Hands every copy waiting to fn: memory reads, no syscall. Datapath
  // thread.
  void consumeCaptures();

  // The port may receive fast-path frames, on device ifindex: its devmap key
  // (the port index) names the device. ENOSPC: an index beyond the devmap.
  Status enablePort(uint16_t port_index, int ifindex);
  void disablePort(uint16_t port_index, int ifindex);
  // A port's fast-path counters: read, and zeroed when an index gets a new
  // port.
  // Map lookups with a buffer of the caller's: any thread (Datapath::stats
  // reads it on the control thread).
  FastPortStats read(uint16_t port_index) const;
  void reset(uint16_t port_index);

  // The VLANs the programs may carry to and from the port (vdev_fast_vlan):
  // untagged, its untagged VLAN (0: none); tagged, those it carries with
  // their tag. ENOSPC: an index beyond the programs' maps.
  Status setVlans(uint16_t port_index, uint16_t untagged, const VidSet& tagged);

  // MAC table mirror. set(): mac lives behind the port (seen = now).
  // isolated: the port is (PortConfig::isolated; VDEV_FAST_ISOLATED).
  Status set(uint64_t mac, uint16_t port_index, uint64_t now_ns, bool isolated = false);
  void erase(uint64_t mac);
  // When the kernel last saw mac as a source behind the port (the entry's
  // seen time: refreshed by the programs at most every VDEV_FAST_SEEN_NS);
  // 0 if the map has no entry of mac on that port. One map lookup.
  uint64_t seen(uint64_t mac, uint16_t port_index) const noexcept;
  void clear();
  // Calls fn(mac, port_index, seen_ns) for every entry (housekeeping).
  void forEach(const std::function<void(uint64_t, uint16_t, uint64_t)>& fn) const;

 private:
  FastPath() = default;
  struct SkelDeleter {
    void operator()(struct ::vdev_fast* s) const noexcept;
  };
  struct LinkDeleter {
    void operator()(struct ::bpf_link* l) const noexcept;
  };
  // Declared in this order: the links are destroyed before the object.
  std::unique_ptr<struct ::vdev_fast, SkelDeleter> skel_;
  std::vector<std::unique_ptr<struct ::bpf_link, LinkDeleter>> links_;
  int ncpu_ = 1;
  mutable std::vector<uint64_t> percpu_;
  struct PerfBufferDeleter {
    void operator()(struct ::perf_buffer* pb) const noexcept;
  };
  std::unique_ptr<struct ::perf_buffer, PerfBufferDeleter> capture_reader_;
  CaptureFn capture_fn_ = nullptr;
  void* capture_ctx_ = nullptr;
  const volatile uint64_t* capture_missed_ = nullptr;  // mmapped fast_capture_missed
  size_t capture_missed_len_ = 0;
};

}  // namespace vdev::datapath
