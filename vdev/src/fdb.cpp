#include "vdev/fdb.h"

#include <bit>

namespace vdev {

// Probe chains never have holes: a slot, once used, stays "used" and is only
// marked not live on removal or reused when it has aged out. A lookup can
// therefore stop at the first never-used slot.

Fdb::Fdb(uint32_t capacity, uint64_t ageing_ns)
    : slots_(std::bit_ceil(capacity < 16 ? 16u : capacity)),
      mask_(uint32_t(slots_.size() - 1)),
      ageing_ns_(ageing_ns) {}

int Fdb::lookup(uint64_t mac, uint64_t now_ns) const noexcept {
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    const Entry& e = slots_[i];
    if (!e.used) return kNone;
    if (e.live && e.mac == mac) return expired(e, now_ns) ? kNone : e.port;
  }
  return kNone;
}

bool Fdb::learn(uint64_t mac, uint16_t port, uint64_t now_ns) noexcept {
  uint32_t i = home(mac);
  Entry* reuse = nullptr;
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.used && e.live && e.mac == mac) {
      if (e.is_static) return true;
      e.port = port;
      e.seen_ns = now_ns;
      return true;
    }
    if (!e.used) {
      if (!reuse) reuse = &e;
      break;
    }
    if (!reuse && reusable(e, now_ns)) reuse = &e;
  }
  if (!reuse) return false;
  *reuse = Entry{mac, now_ns, port, true, true, false};
  return true;
}

bool Fdb::addStatic(uint64_t mac, uint16_t port) {
  remove(mac);
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (!e.used || !e.live) {
      e = Entry{mac, 0, port, true, true, true};
      return true;
    }
  }
  return false;
}

bool Fdb::remove(uint64_t mac) {
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (!e.used) return false;
    if (e.live && e.mac == mac) {
      e.live = false;
      e.is_static = false;
      return true;
    }
  }
  return false;
}

void Fdb::flushPort(uint16_t port) {
  for (auto& e : slots_)
    if (e.live && e.port == port) {
      e.live = false;
      e.is_static = false;
    }
}

std::vector<Fdb::Entry> Fdb::dump(uint64_t now_ns) const {
  std::vector<Entry> out;
  for (const auto& e : slots_)
    if (e.live && !expired(e, now_ns)) out.push_back(e);
  return out;
}

}  // namespace vdev
