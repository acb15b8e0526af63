#include "datapath/frame_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdio>

namespace vdev::datapath {

Result<std::unique_ptr<FramePool>> FramePool::create(uint32_t nframes, uint32_t frame_size) {
  const long page = sysconf(_SC_PAGESIZE);
  if (nframes == 0) return makeError(EINVAL, "frame pool: zero frames");
  if (!std::has_single_bit(frame_size) || frame_size < 2048 || frame_size > uint32_t(page))
    return makeError(EINVAL, "frame pool: frame size " + std::to_string(frame_size) +
                                 " must be a power of two from 2048 to the page size");
  size_t size = size_t(nframes) * frame_size;
  MmapRegion area =
      MmapRegion::map(size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (!area.valid()) return errnoError("frame pool: mmap " + std::to_string(size) + " bytes");
  return std::unique_ptr<FramePool>(new FramePool(std::move(area), nframes, frame_size));
}

FramePool::FramePool(MmapRegion area, uint32_t nframes, uint32_t frame_size)
    : area_(std::move(area)),
      total_(nframes),
      frame_size_(frame_size),
      shift_(uint32_t(std::countr_zero(frame_size))),
      frames_(nframes),
      free_(nframes),
      inflight_(size_t(UINT16_MAX) + 1, 0) {
  // Fill the stack so that low chunk indices are handed out first.
  for (uint32_t i = 0; i < nframes; i++) {
    frames_[i].addr = uint64_t(i) << shift_;
    frames_[i].pool = this;
    frames_[i].owner = kOwnerPool;
    free_[i] = nframes - 1 - i;
  }
  top_ = nframes;
}

FramePool::~FramePool() = default;  // area_ unmaps the UMEM

uint32_t FramePool::allocBulk(std::span<Frame*> out) noexcept {
  uint32_t n = uint32_t(out.size()) < top_ ? uint32_t(out.size()) : top_;
  for (uint32_t i = 0; i < n; i++) {
    Frame* f = &frames_[free_[--top_]];
    f->owner = kOwnerApp;
    f->addr = (uint64_t(f - frames_.data()) << shift_) + kTxHeadroom;
    f->len = 0;
    f->more = 0;
    f->next = nullptr;
    out[i] = f;
  }
  return n;
}

Frame* FramePool::copyOf(const Frame* f) noexcept {
  const uint32_t room = frame_size_ - kTxHeadroom;
  const uint32_t total = wireLen(f);
  const uint32_t n = total <= room ? 1 : (total + room - 1) / room;
  Frame* out[kMaxChain];
  if (n > kMaxChain || n > top_) [[unlikely]]
    return nullptr;
  (void)allocBulk(std::span<Frame*>(out, n));
  // The source's bytes, in order, each new chunk filled to `room`.
  uint32_t di = 0, doff = 0;
  for (const Frame* s = f; s; s = s->next) {
    const uint8_t* src = data(s);
    for (uint32_t left = s->len; left;) {
      if (doff == room) {
        out[di++]->len = room;
        doff = 0;
      }
      const uint32_t k = std::min(left, room - doff);
      std::memcpy(data(out[di]) + doff, src, k);
      src += k;
      left -= k;
      doff += k;
    }
  }
  out[di]->len = doff;
  for (uint32_t i = 0; i + 1 < n; i++) out[i]->next = out[i + 1];
  out[0]->more = total - out[0]->len;
  return out[0];
}

void FramePool::freeBulk(std::span<Frame* const> frames) noexcept {
  for (Frame* head : frames) {
    for (Frame* f = head; f;) {
      if (f->owner == kOwnerPool || f->pool != this) [[unlikely]] {
        std::fprintf(stderr, "vdev: BUG: frame %lu freed twice or to the wrong pool\n",
                     static_cast<unsigned long>(f->addr));
        std::abort();
      }
      f->owner = kOwnerPool;
      if (f->charged) {
        inflight_[f->in_port_index]--;
        f->charged = false;
      }
      free_[top_++] = uint32_t(f - frames_.data());
      Frame* next = f->next;
      f->next = nullptr;
      f->more = 0;
      f = next;
    }
  }
}

SocketTags::SocketTags(uint32_t capacity) : taken_(capacity > kMaxSocketTags ? kMaxSocketTags : capacity, false) {
  free_.reserve(taken_.size());
}

int SocketTags::take() noexcept {
  uint32_t t;
  if (!free_.empty()) {
    t = free_.back();
    free_.pop_back();
  } else if (next_ < taken_.size()) {
    t = next_++;
  } else {
    return -1;
  }
  taken_[t] = true;
  in_use_++;
  return int(t);
}

void SocketTags::give(uint16_t tag) noexcept {
  if (tag >= taken_.size() || !taken_[tag]) [[unlikely]] {
    std::fprintf(stderr, "vdev: BUG: socket tag %u given back but not taken\n", unsigned(tag));
    std::abort();
  }
  taken_[tag] = false;
  in_use_--;
  free_.push_back(tag);  // reserved: never allocates
}

uint32_t FramePool::releaseTag(uint16_t tag) noexcept {
  uint32_t returned = 0;
  forEachOwned(tag, [&](Frame* f) {
    free(f);
    returned++;
  });
  tags_.give(tag);
  return returned;
}

uint32_t FramePool::countOwned(uint16_t owner) const {
  uint32_t n = 0;
  for (const auto& f : frames_) n += f.owner == owner;
  return n;
}

}  // namespace vdev::datapath
