// Fdb: the learning switch's MAC table (fixed size, no allocation after
// construction, open addressing with linear probing: a MAC's home bucket and
// the next kMaxProbe - 1 buckets are its probe window).
//
// Ports are named by their index (Port::index()).
//
// Entries age out `ageing_ns` after they were last seen; static entries never
// age and are never moved by learning. Time is passed in by the caller (the
// datapath reads a coarse clock once per burst).
//
// Against hostile guests: a port may hold at most `max_per_port` learned
// entries (a MAC flood from one guest cannot fill the table), a static entry
// never moves, and a learned entry moves to another port only once it has
// been silent on its own port for `hold_ns` (a guest cannot take over
// another's MAC while that one is talking). Ports may be put in a group
// (setPortGroup: vdevd's group is the uid that added them), whose ports
// together hold at most the group limit of learned entries
// (setGroupLimit): many ports of one tenant, each within max_per_port,
// cannot fill the table either.
//
// A MAC's home bucket is a keyed hash of it (SipHash-1-3) under a key drawn
// at random for each table (getrandom), so a guest cannot choose MACs
// offline that share a victim's probe window. And a new MAC whose window is
// full takes the bucket of the learning port's own oldest entry there, never
// another port's -- unless one port holds more than half of the window, whose
// oldest entry then gives way -- so no set of MACs from one port can push a
// victim's entry out, or keep the victim from being learned (its unicast
// would then be flooded to every port, the attacker's included).
//
// Thread safety: owned by one datapath thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace vdev::datapath {

// The key of the table's hash (SipHash's two 64-bit halves).
struct FdbKey {
  uint64_t k0 = 0, k1 = 0;
  // 16 random bytes from the kernel (getrandom).
  static FdbKey random();
};

// SipHash-C-D of a MAC key (macKey(): the 6 address bytes, first byte
// lowest) as the 6-byte message it is, or (Len 8) of a table key
// (fdbKey(): the MAC and its VLAN) as the 8-byte message it is. The table
// uses SipHash-1-3, the variant hash tables use against flooding (Rust's
// HashMap, CPython); SipHash-2-4 is the reference's, whose published
// vectors check this code.
template <int C, int D, int Len = 6>
constexpr uint64_t sipHashMac(const FdbKey& key, uint64_t mac) noexcept {
  static_assert(Len == 6 || Len == 8);
  uint64_t v0 = key.k0 ^ 0x736f6d6570736575ull, v1 = key.k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = key.k0 ^ 0x6c7967656e657261ull, v3 = key.k1 ^ 0x7465646279746573ull;
  const auto rotl = [](uint64_t x, int b) { return (x << b) | (x >> (64 - b)); };
  const auto round = [&] {
    v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32);
    v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;
    v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;
    v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32);
  };
  if constexpr (Len == 8) {
    // One whole block, then the last: the length alone.
    v3 ^= mac;
    for (int i = 0; i < C; i++) round();
    v0 ^= mac;
  }
  // Len 6: no whole 8-byte block: the last block is the 6 bytes and the length.
  const uint64_t b = Len == 8 ? uint64_t(8) << 56 : (uint64_t(6) << 56) | (mac & 0xffffffffffffull);
  v3 ^= b;
  for (int i = 0; i < C; i++) round();
  v0 ^= b;
  v2 ^= 0xff;
  for (int i = 0; i < D; i++) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// A MAC address packed into the low 48 bits (byte 0 lowest), as the XDP
// program's host_macs key.
inline uint64_t macKey(const uint8_t* m) {
  uint64_t k = 0;
  std::memcpy(&k, m, 6);
  return k;
}
// The table's key: a MAC (macKey()) in a VLAN (1..4094; vlan.h), the VID
// in the top 16 bits. Stations are told apart by both: the same MAC may
// live in two VLANs, on two ports.
inline uint64_t fdbKey(uint64_t mac, uint16_t vid) { return (mac & 0xffffffffffffull) | uint64_t(vid) << 48; }
inline uint64_t fdbKeyMac(uint64_t key) { return key & 0xffffffffffffull; }
inline uint16_t fdbKeyVid(uint64_t key) { return uint16_t(key >> 48); }
inline bool macIsMulticast(const uint8_t* m) { return m[0] & 1; }  // includes broadcast
inline bool macIsZero(const uint8_t* m) {
  static const uint8_t z[6] = {};
  return std::memcmp(m, z, 6) == 0;
}

class Fdb {
 public:
  static constexpr int kNone = -1;

  enum class Learn : uint8_t {
    kOk,         // learned, refreshed or moved (or took the bucket of the port's own oldest entry)
    kTableFull,  // the MAC's probe window is full of other ports' entries: not learned
    kPortLimit,  // the port already holds max_per_port learned entries
    kGroupLimit, // the port's group already holds the group limit of learned entries
    kLocked,     // static on another port, or held by another port (hold time)
  };

  // Every `mac` below is a table key (fdbKey(): the MAC and its VLAN).
  struct Entry {
    uint64_t mac = 0;  // fdbKey()
    uint64_t seen_ns = 0;
    uint16_t port_index = 0;
    bool used = false;       // the bucket is part of a probe chain (never reset: no holes)
    bool live = false;       // holds an address (false: free or removed)
    bool is_static = false;
  };

  // capacity: rounded up to a power of two (at least 16). max_per_port 0:
  // no per-port limit. hold_ns 0: a learned MAC moves at once. key: the
  // hash's (tests choose one; a random one otherwise).
  Fdb(uint32_t capacity, uint64_t ageing_ns, uint32_t max_per_port = 0, uint64_t hold_ns = 0,
      const FdbKey& key = FdbKey::random());

  // The port index of mac, or kNone if unknown or aged out.
  int lookup(uint64_t mac, uint64_t now_ns) const noexcept;
  // Learns (or refreshes, or moves) mac -> port_index. Static entries are
  // not changed. A new MAC whose probe window is full takes the bucket of
  // the oldest learned entry there of port_index itself, or else of a port
  // holding more than half of the window.
  Learn learn(uint64_t mac, uint16_t port_index, uint64_t now_ns) noexcept;
  bool addStatic(uint64_t mac, uint16_t port_index);
  bool remove(uint64_t mac);
  // Forgets every entry pointing at the port (port removed).
  void flushPort(uint16_t port_index);
  // Notes every entry pointing at the port in the journal, so that the
  // kernel's copy rewrites them (the port's isolation changed).
  void notePort(uint16_t port_index);
  // Forgets entries that aged out, so they no longer count against their
  // port's limit (housekeeping; not a hot-path call).
  void expire(uint64_t now_ns);
  // Learned (not static) entries held for the port, aged-out ones included
  // until expire() or reuse.
  uint32_t learnedOn(uint16_t port_index) const { return per_port_[port_index]; }
  // Groups of ports (0: none, the default; 1..kMaxGroups - 1). A port's
  // learned entries count for its group from here on (those it holds now
  // move with it); flushPort() leaves the port in its group. limit 0: no
  // group limit. learnedInGroup: the group's learned entries, as
  // learnedOn().
  static constexpr uint32_t kMaxGroups = 1024;
  void setPortGroup(uint16_t port_index, uint16_t group);
  void setGroupLimit(uint32_t limit) noexcept { group_limit_ = limit; }
  uint32_t groupLimit() const noexcept { return group_limit_; }
  uint32_t learnedInGroup(uint16_t group) const { return per_group_[group]; }
  // A learned entry of mac on the port was seen at seen_ns elsewhere (the
  // kernel fast path): keeps it from ageing and holds it for the hold time.
  void touch(uint64_t mac, uint16_t port_index, uint64_t seen_ns) noexcept;
  // Where a station may have been seen more recently than the table knows:
  // the kernel fast path's map, whose last-seen times reach the table only
  // once a second (touch()). learn() asks it, for the owner's port, before
  // it lets another port take a MAC that the table's own time says was
  // silent for the hold time; fn returns when the MAC was last seen there
  // behind that port (monotonic ns), 0 if not. A reply that keeps the entry
  // held is kept, so further tries within the hold ask again only once it
  // has run out: at most one call per MAC and hold time.
  using SeenElsewhere = uint64_t (*)(void* ctx, uint64_t mac, uint16_t port_index) noexcept;
  void setSeenElsewhere(SeenElsewhere fn, void* ctx) noexcept {
    seen_fn_ = fn;
    seen_ctx_ = ctx;
  }

  // Journal of changed MACs (added, moved, removed), for mirroring the table
  // (the kernel fast path). Off by default. Bounded: past its capacity it
  // only says "overflowed" and the mirror must be rebuilt from dump().
  void enableJournal(uint32_t capacity);
  const std::vector<uint64_t>& journal() const { return journal_; }
  bool journalOverflowed() const { return journal_overflow_; }
  bool journalPending() const { return !journal_.empty() || journal_overflow_; }
  void clearJournal() {
    journal_.clear();
    journal_overflow_ = false;
  }

  // The entries dump(now_ns) would return, counted without a copy: a walk
  // of the table, no allocation (the statistics take it between bursts).
  uint64_t liveEntries(uint64_t now_ns) const noexcept;
  uint32_t capacity() const { return uint32_t(buckets_.size()); }
  uint64_t ageingNs() const { return ageing_ns_; }
  uint32_t maxPerPort() const { return max_per_port_; }
  uint64_t holdNs() const { return hold_ns_; }
  std::vector<Entry> dump(uint64_t now_ns) const;  // live entries

  // A MAC's probe window: its home bucket and the kMaxProbe - 1 after it.
  static constexpr uint32_t kMaxProbe = 16;
  uint32_t home(uint64_t mac) const noexcept { return uint32_t(sipHashMac<1, 3, 8>(key_, mac)) & mask_; }

 private:
  // The entry a new MAC of port_index takes in the full window at `first`:
  // the port's own oldest learned one, else the oldest of a port holding
  // more than half of the window; null if neither.
  Entry* evictable(uint32_t first, uint16_t port_index) noexcept;
  bool expired(const Entry& e, uint64_t now) const noexcept {
    return !e.is_static && now - e.seen_ns > ageing_ns_;
  }
  bool reusable(const Entry& e, uint64_t now) const noexcept { return !e.live || expired(e, now); }
  // Takes e out of the table (keeps it "used": probe chains have no holes).
  void kill(Entry& e) noexcept {
    if (e.live && !e.is_static) countLearned(e.port_index, -1);
    if (e.live) note(e.mac);
    e.live = false;
    e.is_static = false;
  }
  void countLearned(uint16_t port_index, int d) noexcept {
    per_port_[port_index] += uint32_t(d);
    per_group_[group_of_[port_index]] += uint32_t(d);
  }
  bool groupFull(uint16_t port_index) const noexcept {
    const uint16_t g = group_of_[port_index];
    return g && group_limit_ && per_group_[g] >= group_limit_;
  }
  void note(uint64_t mac) noexcept {
    if (!journal_on_) return;
    if (journal_.size() < journal_.capacity())
      journal_.push_back(mac);
    else
      journal_overflow_ = true;
  }

  FdbKey key_;
  SeenElsewhere seen_fn_ = nullptr;
  void* seen_ctx_ = nullptr;
  std::vector<Entry> buckets_;
  uint32_t mask_;
  uint64_t ageing_ns_;
  uint32_t max_per_port_;
  uint64_t hold_ns_;
  std::vector<uint32_t> per_port_;  // learned entries by port index
  std::vector<uint16_t> group_of_;  // group by port index (0: none)
  std::vector<uint32_t> per_group_; // learned entries by group (group 0: uncounted use)
  uint32_t group_limit_ = 0;
  bool journal_on_ = false;
  bool journal_overflow_ = false;
  std::vector<uint64_t> journal_;  // capacity reserved once: no allocation when noting
};

}  // namespace vdev::datapath
