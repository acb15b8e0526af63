// Frames and the frame pool.
//
// A FramePool owns one UMEM area: `total` chunks of `frame_size` bytes in an
// anonymous mapping, plus a Frame descriptor per chunk. Datapath code moves
// Frame pointers, never bytes: unicast forwarding hands the same chunk from
// the RX ring of one socket to the TX ring of another (both sockets share the
// UMEM).
//
// Every frame is always in exactly one place. The pool itself knows "free" and
// "taken"; each Frame also carries an owner tag so that the frames held by a
// socket that died (device deleted) can be found and returned. The pool hands
// out the sockets' tags (SocketTags) and takes each back when its socket is
// closed and every frame carrying it has been returned, so a tag is reused
// and vdevd can open and close sockets forever (ports added and removed,
// links flapping), with at most kMaxSocketTags open at once.
//
// Ownership: the pool owns its UMEM mapping (MmapRegion, unmapped with it);
// every socket that registers or shares the UMEM must be closed first.
//
// Thread safety: a FramePool belongs to one datapath thread; none of its
// methods may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "base/mmap.h"
#include "base/result.h"

namespace vdev::datapath {

// Where a frame is. Socket-owned frames carry the socket's tag
// (XskSocket::tag(), 0 .. kMaxSocketTags - 1).
inline constexpr uint16_t kOwnerPool = 0xffff;  // free, in the pool
inline constexpr uint16_t kOwnerApp = 0xfffe;   // in vdevd's hands: RX burst or a port ring
inline constexpr uint16_t kMaxSocketTags = 0xfff0;

// Data offset used for frames vdevd fills itself (flood copies), mirroring
// the kernel's XDP_PACKET_HEADROOM on received frames.
inline constexpr uint32_t kTxHeadroom = 256;

// The most chunks one frame may take (a chain): the kernel's limit on an
// xdp_buff's fragments (MAX_SKB_FRAGS, 17) and its head.
inline constexpr uint32_t kMaxChain = 18;

class FramePool;

// The owner tags of one pool's sockets: 0 .. capacity - 1, each held by at
// most one open socket at a time. A tag given back is taken again (the most
// recently given first), so the tags in use stay as many as the sockets
// open. Giving back a tag that is not taken is a bug: it aborts.
class SocketTags {
 public:
  explicit SocketTags(uint32_t capacity = kMaxSocketTags);
  // A free tag, or -1 when all capacity() are taken.
  int take() noexcept;
  void give(uint16_t tag) noexcept;
  uint32_t inUse() const noexcept { return in_use_; }
  uint32_t capacity() const noexcept { return uint32_t(taken_.size()); }

 private:
  std::vector<bool> taken_;     // by tag
  std::vector<uint16_t> free_;  // tags given back, taken again last in first out
  uint32_t next_ = 0;           // tags from here up were never taken
  uint32_t in_use_ = 0;
};

// A frame longer than one chunk (AF_XDP multi-buffer, XDP_USE_SG) is a
// chain: its head, the Frame that is switched, counted and handed over,
// and the chunks after it through `next`, in order. `len` is each chunk's
// own bytes; the head's `more` the bytes of the chunks after it, so the
// frame's length is wireLen(). Every chunk is charged (in-flight counts
// UMEM frames: a port's jumbo frames take as much of the pool as they
// hold). A chain is always whole in vdevd's hands: freeing the head
// frees every chunk of it, and putting it on a TX ring dissolves it (the
// kernel completes each chunk by itself). A chunk the kernel holds (fill,
// RX, TX ring) is never linked.
struct Frame {
  uint64_t addr = 0;         // UMEM offset of the first data byte
  uint32_t len = 0;          // data length in bytes, in this chunk
  uint32_t more = 0;         // the head of a chain: data bytes in the chunks after it
  Frame* next = nullptr;     // the next chunk of a chain
  uint16_t in_port_index = 0;  // the ingress port's index (switching)
  uint16_t owner = kOwnerPool;  // kOwnerPool, kOwnerApp or a socket's tag
  bool charged = false;       // counted in the pool's in-flight count of in_port_index
  FramePool* pool = nullptr;  // the pool the chunk returns to
};

// The frame's length: every chunk's bytes.
inline uint32_t wireLen(const Frame* f) noexcept { return f->len + f->more; }
// The chunks a frame takes (1 unless it is a chain).
inline uint32_t chunks(const Frame* f) noexcept {
  uint32_t n = 1;
  for (f = f->next; f; f = f->next) n++;
  return n;
}

class FramePool {
 public:
  // Maps nframes * frame_size bytes. frame_size must be a power of two between
  // 2048 and the page size (AF_XDP aligned mode).
  static Result<std::unique_ptr<FramePool>> create(uint32_t nframes, uint32_t frame_size);
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  char* area() const { return area_.get(); }
  size_t areaSize() const { return size_t(total_) * frame_size_; }
  uint32_t frameSize() const { return frame_size_; }
  uint32_t total() const { return total_; }
  uint32_t available() const { return top_; }

  // The frame whose chunk contains UMEM offset addr; nullptr if out of range.
  Frame* frameAt(uint64_t addr) {
    uint64_t idx = addr >> shift_;
    return idx < total_ ? &frames_[idx] : nullptr;
  }
  // UMEM offset of the frame's chunk start (what the fill ring takes).
  uint64_t chunkAddr(const Frame* f) const { return uint64_t(f - frames_.data()) << shift_; }
  uint8_t* data(const Frame* f) const { return reinterpret_cast<uint8_t*>(area_.get() + f->addr); }
  // Bytes available to a frame's data from its current offset to the chunk end.
  uint32_t room(const Frame* f) const {
    return frame_size_ - uint32_t(f->addr & (frame_size_ - 1));
  }

  // Takes up to out.size() frames (owner set to kOwnerApp, addr to the chunk
  // start + kTxHeadroom, len 0). Returns how many were taken.
  uint32_t allocBulk(std::span<Frame*> out) noexcept;
  // A copy of frame f (a chain if it does not fit one chunk after
  // kTxHeadroom), owned by vdevd; null when the pool has too few frames
  // (nothing taken then).
  Frame* copyOf(const Frame* f) noexcept;
  // Returns frames (each a single chunk or a chain's head: all its
  // chunks) to the pool. Aborts on a double free: that is a bug that
  // would otherwise corrupt traffic silently.
  void freeBulk(std::span<Frame* const> frames) noexcept;
  void free(Frame* f) noexcept { freeBulk(std::span<Frame* const>(&f, 1)); }

  // In-flight accounting by ingress port: a frame charged to a port counts
  // against it until it returns to the pool (fair share: one port's frames
  // cannot take the whole pool), each chunk of a chain until that chunk
  // does (a TX ring completes them one by one).
  void charge(Frame* f, uint16_t port_index) noexcept {
    for (; f; f = f->next) {
      f->in_port_index = port_index;
      f->charged = true;
      inflight_[port_index]++;
    }
  }
  uint32_t inflight(uint16_t port_index) const noexcept { return inflight_[port_index]; }

  // The owner tags of the sockets on this pool's UMEM (XskSocket takes one
  // when it is created and gives it back once closed and swept).
  SocketTags& tags() noexcept { return tags_; }
  const SocketTags& tags() const noexcept { return tags_; }

  // Counts frames by owner tag (not a hot-path call): for accounting checks.
  uint32_t countOwned(uint16_t owner) const;
  // A closed socket's tag: every frame still tagged with it back to the pool
  // (nothing touches them any more), then the tag given back. Returns the
  // frames returned.
  uint32_t releaseTag(uint16_t tag) noexcept;
  // Calls fn(frame) for every frame tagged with owner.
  template <typename Fn>
  void forEachOwned(uint16_t owner, Fn&& fn) {
    for (auto& f : frames_)
      if (f.owner == owner) fn(&f);
  }

 private:
  FramePool(MmapRegion area, uint32_t nframes, uint32_t frame_size);

  MmapRegion area_;  // the UMEM: total_ chunks of frame_size_ bytes
  uint32_t total_;
  uint32_t frame_size_;
  uint32_t shift_;
  std::vector<Frame> frames_;
  std::vector<uint32_t> free_;  // stack of free chunk indices
  uint32_t top_ = 0;           // number of entries in free_
  std::vector<uint32_t> inflight_;  // charged frames by port index
  SocketTags tags_;
};

}  // namespace vdev::datapath
