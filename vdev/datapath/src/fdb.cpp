#include "datapath/fdb.h"

#include <sys/random.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace vdev::datapath {

FdbKey FdbKey::random() {
  uint64_t k[2];
  size_t got = 0;
  while (got < sizeof k) {
    const ssize_t n = ::getrandom(reinterpret_cast<char*>(k) + got, sizeof k - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // getrandom() has existed since Linux 3.17 and blocks only before the
      // kernel's generator is seeded; a table keyed by a guess would be
      // unkeyed: refuse to go on.
      std::perror("vdev: getrandom for the MAC table's hash key");
      std::abort();
    }
    got += size_t(n);
  }
  return {k[0], k[1]};
}

// Probe chains never have holes: a bucket, once used, stays "used" and is
// only marked not live on removal or reused when it has aged out. A lookup
// can therefore stop at the first never-used bucket.

Fdb::Fdb(uint32_t capacity, uint64_t ageing_ns, uint32_t max_per_port, uint64_t hold_ns, const FdbKey& key)
    : key_(key),
      buckets_(std::bit_ceil(capacity < 16 ? 16u : capacity)),
      mask_(uint32_t(buckets_.size() - 1)),
      ageing_ns_(ageing_ns),
      max_per_port_(max_per_port),
      hold_ns_(hold_ns),
      per_port_(size_t(UINT16_MAX) + 1, 0),
      group_of_(size_t(UINT16_MAX) + 1, 0),
      per_group_(kMaxGroups, 0) {}

void Fdb::setPortGroup(uint16_t port_index, uint16_t group) {
  if (group >= kMaxGroups) group = 0;
  per_group_[group_of_[port_index]] -= per_port_[port_index];
  group_of_[port_index] = group;
  per_group_[group] += per_port_[port_index];
}

int Fdb::lookup(uint64_t mac, uint64_t now_ns) const noexcept {
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    const Entry& e = buckets_[i];
    if (!e.used) return kNone;
    if (e.live && e.mac == mac) return expired(e, now_ns) ? kNone : e.port_index;
  }
  return kNone;
}

Fdb::Learn Fdb::learn(uint64_t mac, uint16_t port_index, uint64_t now_ns) noexcept {
  const bool full = max_per_port_ && per_port_[port_index] >= max_per_port_;
  uint32_t i = home(mac);
  Entry* reuse = nullptr;
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = buckets_[i];
    if (e.used && e.live && e.mac == mac) {
      if (e.port_index == port_index) {
        if (!e.is_static) e.seen_ns = now_ns;
        return Learn::kOk;
      }
      if (e.is_static) return Learn::kLocked;
      // Held by another port: it moves only once silent there for hold_ns
      // (an aged-out entry is free to take).
      if (!expired(e, now_ns) && now_ns - e.seen_ns < hold_ns_) return Learn::kLocked;
      // The owner may talk only through the kernel (the fast path), whose
      // last-seen time is newer than ours by up to a second: read it now.
      if (seen_fn_ && hold_ns_) {
        const uint64_t seen = std::min(seen_fn_(seen_ctx_, mac, e.port_index), now_ns);
        if (seen > e.seen_ns) {
          e.seen_ns = seen;
          if (now_ns - seen < hold_ns_) return Learn::kLocked;
        }
      }
      if (full) return Learn::kPortLimit;
      // A move between two ports of the group keeps its count.
      if (group_of_[e.port_index] != group_of_[port_index] && groupFull(port_index)) return Learn::kGroupLimit;
      countLearned(e.port_index, -1);
      countLearned(port_index, +1);
      e.port_index = port_index;
      e.seen_ns = now_ns;
      note(mac);
      return Learn::kOk;
    }
    if (!e.used) {
      if (!reuse) reuse = &e;
      break;
    }
    if (!reuse && reusable(e, now_ns)) reuse = &e;
  }
  if (full) return Learn::kPortLimit;
  if (groupFull(port_index)) return Learn::kGroupLimit;
  if (!reuse) reuse = evictable(home(mac), port_index);
  if (!reuse) return Learn::kTableFull;
  kill(*reuse);  // an aged-out or evicted entry gives its bucket and its port's count back
  *reuse = Entry{mac, now_ns, port_index, true, true, false};
  countLearned(port_index, +1);
  note(mac);
  return Learn::kOk;
}

Fdb::Entry* Fdb::evictable(uint32_t first, uint16_t port_index) noexcept {
  // Every bucket of the window is live here (learn() found none reusable).
  Entry* own = nullptr;
  uint16_t ports[kMaxProbe];
  uint32_t counts[kMaxProbe], nports = 0;
  uint32_t i = first;
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = buckets_[i];
    if (e.is_static) continue;
    if (e.port_index == port_index && (!own || e.seen_ns < own->seen_ns)) own = &e;
    uint32_t k = 0;
    while (k < nports && ports[k] != e.port_index) k++;
    if (k == nports) ports[nports] = e.port_index, counts[nports++] = 0;
    counts[k]++;
  }
  if (own) return own;
  // No entry of its own: a port that holds most of the window gives way.
  uint32_t top = 0;
  for (uint32_t k = 1; k < nports; k++)
    if (counts[k] > counts[top]) top = k;
  if (nports == 0 || counts[top] <= kMaxProbe / 2) return nullptr;
  Entry* oldest = nullptr;
  i = first;
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = buckets_[i];
    if (!e.is_static && e.port_index == ports[top] && (!oldest || e.seen_ns < oldest->seen_ns)) oldest = &e;
  }
  return oldest;
}

void Fdb::touch(uint64_t mac, uint16_t port_index, uint64_t seen_ns) noexcept {
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = buckets_[i];
    if (!e.used) return;
    if (e.live && e.mac == mac) {
      if (e.port_index == port_index && !e.is_static && seen_ns > e.seen_ns) e.seen_ns = seen_ns;
      return;
    }
  }
}

void Fdb::enableJournal(uint32_t capacity) {
  journal_on_ = true;
  journal_.clear();
  journal_.reserve(capacity);
}

bool Fdb::addStatic(uint64_t mac, uint16_t port_index) {
  remove(mac);
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = buckets_[i];
    if (!e.used || !e.live) {
      e = Entry{mac, 0, port_index, true, true, true};
      note(mac);
      return true;
    }
  }
  return false;
}

bool Fdb::remove(uint64_t mac) {
  uint32_t i = home(mac);
  for (uint32_t p = 0; p < kMaxProbe; p++, i = (i + 1) & mask_) {
    Entry& e = buckets_[i];
    if (!e.used) return false;
    if (e.live && e.mac == mac) {
      kill(e);
      return true;
    }
  }
  return false;
}

void Fdb::flushPort(uint16_t port_index) {
  for (auto& e : buckets_)
    if (e.live && e.port_index == port_index) kill(e);
}

void Fdb::notePort(uint16_t port_index) {
  for (const auto& e : buckets_)
    if (e.live && e.port_index == port_index) note(e.mac);
}

void Fdb::expire(uint64_t now_ns) {
  for (auto& e : buckets_)
    if (e.live && expired(e, now_ns)) kill(e);
}

std::vector<Fdb::Entry> Fdb::dump(uint64_t now_ns) const {
  std::vector<Entry> out;
  for (const auto& e : buckets_)
    if (e.live && !expired(e, now_ns)) out.push_back(e);
  return out;
}

uint64_t Fdb::liveEntries(uint64_t now_ns) const noexcept {
  uint64_t n = 0;
  for (const auto& e : buckets_) n += e.live && !expired(e, now_ns);
  return n;
}

}  // namespace vdev::datapath
