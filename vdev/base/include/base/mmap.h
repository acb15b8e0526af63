// MmapRegion: a move-only owner of an mmap()ed region, unmapped on
// destruction. The deleter carries the length, so the region is one pointer
// and one size, like seastar's mmap_area: get() is the base address (a plain
// load on the hot path), size() what munmap() will be given.
#pragma once

#include <sys/mman.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>

namespace vdev {

struct MunmapDeleter {
  size_t size = 0;
  void operator()(char* p) const noexcept { ::munmap(p, size); }
};

class MmapRegion {
 public:
  MmapRegion() = default;  // owns nothing
  MmapRegion(MmapRegion&&) noexcept = default;
  MmapRegion& operator=(MmapRegion&&) noexcept = default;
  MmapRegion(const MmapRegion&) = delete;
  MmapRegion& operator=(const MmapRegion&) = delete;

  // mmap(nullptr, size, prot, flags, fd, offset). On failure the region is
  // empty (!valid()) and errno says why.
  static MmapRegion map(size_t size, int prot, int flags, int fd, off_t offset) noexcept {
    void* p = ::mmap(nullptr, size, prot, flags, fd, offset);
    if (p == MAP_FAILED) return MmapRegion();
    return MmapRegion(static_cast<char*>(p), size);
  }

  char* get() const noexcept { return p_.get(); }
  size_t size() const noexcept { return p_.get_deleter().size; }
  bool valid() const noexcept { return p_ != nullptr; }
  void reset() noexcept { p_.reset(); }

 private:
  MmapRegion(char* p, size_t size) noexcept : p_(p, MunmapDeleter{size}) {}
  std::unique_ptr<char, MunmapDeleter> p_;
};

}  // namespace vdev
