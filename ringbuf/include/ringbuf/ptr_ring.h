// SPDX-License-Identifier: Apache-2.0
//
// ringbuf::PtrRing<T> — a bounded ring of T*, many producers, one consumer,
// built for bulk transfer: a producer takes the producer lock once per batch,
// the consumer takes no lock and publishes its index once per batch.
//
// Design
// ------
// * Storage is a power-of-two array of T* (>= capacity). Producer and consumer
//   indices are free-running uint32_t counters, masked (`idx & mask_`) only
//   when a slot is accessed. The number of items is `prod - cons` computed in
//   uint32_t arithmetic.
//   Why overflow is safe: unsigned arithmetic is modulo 2^32 and the storage
//   size is a power of two that divides 2^32, so (a) `idx & mask_` stays
//   continuous when an index wraps from UINT32_MAX to 0, and (b) `prod - cons`
//   is the true distance as long as it is < 2^32, which holds because it never
//   exceeds capacity <= kMaxCapacity = 2^31.
// * Capacity is exact: a producer sees "full" after exactly `capacity` items,
//   for every capacity including 1 and non-powers of two. The rounding up to
//   a power of two is an internal storage detail, never visible.
// * Why indices and not the kernel's ptr_ring NULL-slot scheme: the kernel's
//   ptr_ring marks a slot free by storing NULL in it, so the ring capacity is
//   the array size and "full" is "next slot non-NULL". To avoid cache-line
//   ping-pong the kernel consumer zeroes consumed slots lazily, in batches and
//   in reverse order, which makes the capacity observed by a producer inexact
//   (up to a batch fewer slots) and needs NULL to be an invalid item. Explicit
//   indices give exact capacity and allow any pointer value; the cached
//   opposite index on each side (producer caches the consumer index, consumer
//   caches the producer index) serves the same purpose as the kernel's
//   batched zeroing: a side touches the other side's cache line only when its
//   cached view says it has run out of room / items, i.e. about once per batch.
// * Memory layout: producer state (lock, producer index, cached consumer
//   index), consumer state (consumer index, cached producer index), the
//   doorbell, and the read-mostly configuration each live on their own
//   cache line; the slot array is a separate cache-line-aligned allocation.
//
// Memory ordering (pairs are named at each atomic operation)
// ----------------------------------------------------------
//   P1 (producer, release store of prod_idx_) pairs with C0 (consumer,
//       acquire load of prod_idx_): slot writes are visible before the
//       consumer reads the slots.
//   C1 (consumer, release store of cons_idx_) pairs with P0 (producer,
//       acquire load of cons_idx_): the consumer has finished reading slots
//       before a producer overwrites them.
//   L1 (lock acquire) pairs with U1 (unlock release): producers are serialised
//       and each sees the previous holder's prod_idx_ / cons_cache_.
//   D0, F0, F1 and W0: the doorbell (see below).
//
// Doorbell (consumer sleep without lost wake-ups)
// -----------------------------------------------
//   Consumer:  if (ring.armDoorbell()) { sleep; }  ring.disarmDoorbell();
//     armDoorbell():  store doorbell_ = kArmed;  seq_cst fence (D0);
//                     load prod_idx_;  not empty -> disarm, return false.
//   Producer:  produceBulk(...) (stores prod_idx_);  flush():
//                     seq_cst fence (F0);  load doorbell_;
//                     if kArmed: CAS kArmed -> kRung (F1) and wake.
//   This is the store-fence-load pattern on both sides. The two seq_cst fences
//   are totally ordered. If D0 comes first, the producer's load after F0 sees
//   kArmed (or a later value, see below) and wakes the consumer. If F0 comes
//   first, the consumer's load after D0 sees the producer's new prod_idx_ and
//   does not sleep. Either way no wake-up is lost. Later values the producer
//   may see instead of kArmed: kRung (another producer already issued the
//   wake-up for this sleep: only one wake per sleep, no thundering syscalls)
//   or kIdle (written by the consumer's disarm, i.e. it is already awake).
//   The wake is "sticky": the built-in waiter sleeps on doorbell_ itself (futex
//   compare kArmed), so a wake issued before the consumer actually blocks makes
//   the wait return at once; an eventfd notifier is sticky by nature.
//   Consumers must tolerate spurious wake-ups (e.g. the eventfd may have been
//   written for an arm that armDoorbell() then cancelled).
//
// Cost model
// ----------
//   The producer lock is a locked instruction; on x86 it waits for the store
//   buffer to drain, i.e. for the previous batch's slot and index stores to
//   reach the other core. flush() pays the same drain for its fence. Two
//   consequences: (1) at least one cross-core round trip per produceBulk,
//   which dominates at batch size 1 (an SPSC queue without locked
//   instructions is about twice as fast there) and vanishes into the batch at
//   16 and more; (2) the slot stores must not miss: after each batch the
//   producer prefetches, for writing, the slot lines of the next batch
//   (prefetchNextBatch), so they are already exclusive when written.
//   Hence: batch.
//
// Thread safety summary
// ---------------------
//   produceBulk, flush, empty, full, size, capacity: any thread, concurrently.
//   consumeBatch, armDoorbell, disarmDoorbell, waitDoorbell: the one consumer
//     thread only (at a time; handing the consumer role over requires external
//     synchronisation, e.g. a thread join).
//   setNotifier: before concurrent use.
//   No function allocates or throws; the constructor allocates the slots and
//   may throw std::bad_alloc.

#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

namespace ringbuf {

// One cache line. std::hardware_destructive_interference_size is not used
// directly: GCC warns (-Winterference-size) when it appears in a header since
// its value depends on -mtune, which would make the ABI of this class depend on
// compiler flags. 64 is right for x86-64 and most arm64 cores.
inline constexpr std::size_t kCacheLine = 64;

namespace detail {

// CPU hint inside spin loops: lowers power and frees the pipeline for the
// sibling hyper-thread (x86 PAUSE, arm64 YIELD).
inline void cpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Prefetch a cache line with intent to write (fetch it exclusive). A read
// prefetch would bring the line in shared and the store would still need a
// second round trip to invalidate the other copy.
// x86: PREFETCHW (0F 0D /1). GCC emits it for __builtin_prefetch(p, 1) only
// with -mprfchw, so it is written out; CPUs without PRFCHW execute this
// opcode as a NOP (Windows 8.1 relies on that too), AMD has it since K6-2.
inline void prefetchForWrite(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);  // arm64: PRFM PSTL1KEEP
#endif
}

// Test-and-test-and-set spinlock for the producer side. Spins with PAUSE for
// a bounded number of rounds, then yields the CPU: on a small machine the
// lock holder may have been preempted, and spinning until the end of its
// time slice would only delay it. The yield is the only syscall a producer
// can make, and only under contention with a preempted holder.
class SpinLock {
 public:
  void lock() noexcept {
    for (;;) {
      // L1: acquire; pairs with U1 (release in unlock) of the previous holder.
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Test before test-and-set again: wait on a shared (read-only) copy of
      // the line instead of bouncing it between spinning producers.
      uint32_t spins = 0;
      // Relaxed: only a hint; L1 re-validates with acquire.
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
          cpuRelax();
        } else {
          std::this_thread::yield();
          spins = 0;
        }
      }
    }
  }

  void unlock() noexcept {
    // U1: release; pairs with L1 of the next holder.
    locked_.store(false, std::memory_order_release);
  }

 private:
  static constexpr uint32_t kSpinsBeforeYield = 128;
  std::atomic<bool> locked_{false};
};

// Full (seq_cst) fence for the doorbell's store-fence-load pattern.
// ThreadSanitizer does not model standalone fences and GCC says so with
// -Wtsan at every use. That is harmless here: no data is published through
// these fences (slots are published by the P1/C0 release/acquire pair, which
// TSan does model); they only order the doorbell_ / prod_idx_ accesses so that
// no wake-up is lost. The fence is still executed under TSan.
inline void fullFence() noexcept {
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#pragma GCC diagnostic pop
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

struct AlignedDelete {
  void operator()(void* p) const noexcept { ::operator delete[](p, std::align_val_t{kCacheLine}); }
};

}  // namespace detail

template <typename T>
class PtrRing {
 public:
  // Largest capacity accepted; larger requests are clamped to it (that much
  // storage, 16 GiB, would not be allocated in practice anyway). Keeping
  // capacity <= 2^31 keeps the power-of-two storage size within uint32_t and
  // `prod - cons` unambiguous.
  static constexpr uint32_t kMaxCapacity = uint32_t{1} << 31;

  // Creates a ring that holds exactly `capacity` pointers. A capacity of 0 is
  // treated as 1 (a ring that can never hold anything is never what the
  // caller meant); capacities above kMaxCapacity are clamped to it.
  // Throws std::bad_alloc if the slot array cannot be allocated.
  explicit PtrRing(uint32_t capacity) : PtrRing(capacity, 0) {}

  PtrRing(const PtrRing&) = delete;
  PtrRing& operator=(const PtrRing&) = delete;
  PtrRing(PtrRing&&) = delete;
  PtrRing& operator=(PtrRing&&) = delete;
  ~PtrRing() = default;

  // The exact number of pointers the ring holds when full. Any thread.
  uint32_t capacity() const noexcept { return capacity_; }

  // Producer side, any thread. Takes the producer lock once for the whole
  // batch and enqueues the longest prefix of `items` that fits, in order.
  // Returns how many items were taken (0 .. items.size()); the caller still
  // owns items[ret ..]. No allocation, no exceptions; the only possible
  // syscall is a sched_yield while another producer holds the lock.
  // Does not wake the consumer: call flush() at the end of the batch.
  uint32_t produceBulk(std::span<T* const> items) noexcept {
    const uint32_t want =
        items.size() > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(items.size());
    if (want == 0) return 0;

    prod_.lock.lock();
    // Only producers, under the lock, write prod_idx_: relaxed suffices, L1
    // made the previous holder's store visible.
    const uint32_t prod = prod_.prod_idx.load(std::memory_order_relaxed);
    uint32_t free_slots = capacity_ - (prod - prod_.cons_cache);
    if (free_slots < want) {
      // Our cached view of the consumer says there is not enough room: look
      // at the consumer's cache line (once per batch at most).
      // P0: acquire; pairs with C1 (consumer's release store of cons_idx_)
      // so the consumer is done reading the slots we are about to reuse.
      prod_.cons_cache = cons_.cons_idx.load(std::memory_order_acquire);
      free_slots = capacity_ - (prod - prod_.cons_cache);
    }
    const uint32_t n = std::min(want, free_slots);
    if (n != 0) {
      copyIn(prod, items.data(), n);
      // P1: release; pairs with C0 (consumer's acquire load of prod_idx_) and
      // with the acquire loads in size()/empty()/armDoorbell(): the slot
      // writes above are visible before the new index is.
      prod_.prod_idx.store(prod + n, std::memory_order_release);
    }
    prod_.lock.unlock();
    // Outside the lock, on local values only: a hint, no shared state read.
    if (n != 0) prefetchNextBatch(prod + n, std::min(n, free_slots - n));
    return n;
  }

  // Producer side, any thread: the doorbell, to call after produceBulk when a
  // batch ends (the "flush" flag), including when nothing was enqueued.
  // If the consumer is armed (about to sleep or sleeping), wakes it: calls the
  // notifier if one is set, else wakes waitDoorbell(). Returns true if this
  // call issued the wake-up; at most one wake-up is issued per armDoorbell(),
  // whichever producer gets there first. When the consumer is not armed this
  // costs a fence and one load of a line that stays shared in every cache.
  bool flush() noexcept {
    // F0: seq_cst fence, the producer half of store-fence-load; orders our
    // earlier P1 store of prod_idx_ before the doorbell_ load below. Pairs
    // with D0 in armDoorbell() (see the header comment for the proof).
    detail::fullFence();
    // Relaxed: the fence provides the ordering; this is the cheap check.
    if (doorbell_.load(std::memory_order_relaxed) != kArmed) return false;
    uint32_t expected = kArmed;
    // F1: claim the wake-up so only one producer issues it. Release pairs
    // with W0 (acquire load in waitDoorbell): a consumer that sees kRung
    // also sees what the producers published before this point.
    if (!doorbell_.compare_exchange_strong(expected, kRung, std::memory_order_release,
                                           std::memory_order_relaxed)) {
      return false;  // another producer rang, or the consumer disarmed
    }
    if (notify_fn_ != nullptr) {
      notify_fn_(notify_ctx_);
    } else {
      futexWake();
    }
    return true;
  }

  // Consumer side, the one consumer thread only. No lock. Dequeues up to
  // out.size() pointers in order into out[0 ..] and returns the count
  // (0 when empty). Publishes the new consumer index once for the batch.
  uint32_t consumeBatch(std::span<T*> out) noexcept {
    const uint32_t want =
        out.size() > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(out.size());
    if (want == 0) return 0;
    // Only this thread writes cons_idx_.
    const uint32_t cons = cons_.cons_idx.load(std::memory_order_relaxed);
    uint32_t avail = cons_.prod_cache - cons;
    if (avail < want) {
      // Cached view exhausted: read the producers' line (once per batch).
      // C0: acquire; pairs with P1 so the slots we read are fully written.
      cons_.prod_cache = prod_.prod_idx.load(std::memory_order_acquire);
      avail = cons_.prod_cache - cons;
    }
    const uint32_t n = std::min(want, avail);
    if (n == 0) return 0;
    copyOut(cons, out.data(), n);
    // C1: release; pairs with P0 (producer's acquire load of cons_idx_): our
    // slot reads complete before a producer may overwrite those slots.
    cons_.cons_idx.store(cons + n, std::memory_order_release);
    return n;
  }

  // Number of queued pointers. Any thread. Exact when the ring is quiescent;
  // under concurrency a value that was true at some instant during the call,
  // give or take in-flight operations, always within [0, capacity].
  uint32_t size() const noexcept {
    // Load the consumer index first: cons only grows towards prod, so a prod
    // loaded later is >= it and the difference cannot go negative.
    // Acquire pairs with C1 / P1 (the caller may act on what it sees).
    const uint32_t cons = cons_.cons_idx.load(std::memory_order_acquire);
    const uint32_t prod = prod_.prod_idx.load(std::memory_order_acquire);
    const uint32_t used = prod - cons;
    // Both sides may have moved between the two loads; clamp.
    return used > capacity_ ? capacity_ : used;
  }
  // Any thread, including producers. Same caveats as size().
  bool empty() const noexcept { return size() == 0; }
  bool full() const noexcept { return size() >= capacity_; }

  // Consumer side. Announces the intent to sleep, then re-checks the ring.
  // Returns true if the ring is empty and the consumer may sleep (poll the
  // notifier's fd, or waitDoorbell()); returns false, already disarmed, if
  // items are present (consume them instead of sleeping). In both cases call
  // disarmDoorbell() after the sleep / before consuming again (it is
  // idempotent).
  bool armDoorbell() noexcept {
    // Relaxed store: ordered by the fence below.
    doorbell_.store(kArmed, std::memory_order_relaxed);
    // D0: seq_cst fence, the consumer half of store-fence-load; orders the
    // kArmed store before the prod_idx_ load. Pairs with F0 in flush().
    detail::fullFence();
    // Acquire pairs with P1 (we may go on to consume what we see).
    const uint32_t prod = prod_.prod_idx.load(std::memory_order_acquire);
    if (prod != cons_.cons_idx.load(std::memory_order_relaxed)) {
      disarmDoorbell();
      return false;
    }
    return true;
  }

  // Consumer side. Ends a sleep episode (or cancels the arm). Producers that
  // still see kArmed afterwards issue at most one harmless spurious wake-up.
  void disarmDoorbell() noexcept {
    // Relaxed: a stale kArmed seen by a producer only causes a spurious wake;
    // the consumer's own acquire loads (C0) order what it reads next.
    doorbell_.store(kIdle, std::memory_order_relaxed);
  }

  // Consumer side, after armDoorbell() returned true, for consumers that do not
  // poll a file descriptor (tests, benchmarks). Blocks until a producer's
  // flush() rings or `timeout` expires. Returns true if rung (or if the
  // doorbell was not armed: nothing to wait for), false on timeout. Spurious
  // returns are possible only as "true". Uses a futex on Linux (a syscall;
  // this is the sleeping path, not the hot path), a short sleep loop
  // elsewhere.
  bool waitDoorbell(std::chrono::nanoseconds timeout) noexcept {
    using Clock = std::chrono::steady_clock;
    // Clamp so that now() + timeout cannot overflow (e.g. nanoseconds::max()
    // meaning "forever"): ten years is forever enough.
    constexpr std::chrono::nanoseconds kForever = std::chrono::hours(24 * 365 * 10);
    const auto deadline = Clock::now() + std::min(timeout, kForever);
    // W0: acquire; pairs with F1 (the producer's release CAS to kRung).
    while (doorbell_.load(std::memory_order_acquire) == kArmed) {
      const auto now = Clock::now();
      if (now >= deadline) return false;
      futexWait(deadline - now);
    }
    return true;
  }

  // Installs a callback that flush() calls instead of the built-in wake-up,
  // e.g. to write an eventfd the consumer poll()s. fn(ctx) runs on the
  // producer thread that rings, at most once per armDoorbell(), possibly
  // concurrently with the consumer. Pass nullptr to restore the built-in
  // wake-up. Not thread-safe: set before concurrent use.
  void setNotifier(void (*fn)(void* ctx), void* ctx) noexcept {
    notify_fn_ = fn;
    notify_ctx_ = ctx;
  }

 protected:
  // For tests: starts the free-running indices at `start_index` (e.g. just
  // below UINT32_MAX) so that index wrap-around is exercised quickly.
  // Behaviour is otherwise identical to the public constructor.
  PtrRing(uint32_t capacity, uint32_t start_index)
      : capacity_(clampCapacity(capacity)),
        mask_(storageSize(capacity_) - 1),
        slots_(allocSlots(storageSize(capacity_))) {
    prod_.prod_idx.store(start_index, std::memory_order_relaxed);
    prod_.cons_cache = start_index;
    cons_.cons_idx.store(start_index, std::memory_order_relaxed);
    cons_.prod_cache = start_index;
  }

 private:
  enum : uint32_t { kIdle = 0, kArmed = 1, kRung = 2 };

  static constexpr uint32_t clampCapacity(uint32_t c) noexcept {
    return c == 0 ? 1 : (c > kMaxCapacity ? kMaxCapacity : c);
  }
  static constexpr uint32_t storageSize(uint32_t c) noexcept {
    uint32_t s = 1;
    while (s < c) s <<= 1;
    return s;
  }
  static T** allocSlots(uint32_t n) {
    void* p = ::operator new[](sizeof(T*) * std::size_t{n}, std::align_val_t{kCacheLine});
    return static_cast<T**>(p);
  }

  // Copies n items into slots starting at free-running index `idx`, in at most
  // two contiguous runs (before and after the end of the array) so that the
  // compiler can turn each into a plain memory copy.
  void copyIn(uint32_t idx, T* const* src, uint32_t n) noexcept {
    T** slots = slots_.get();
    const uint32_t start = idx & mask_;
    const uint32_t first = std::min(n, mask_ + 1 - start);
    std::copy_n(src, first, slots + start);
    if (n > first) std::copy_n(src + first, n - first, slots);  // wrapped part
  }
  void copyOut(uint32_t idx, T** dst, uint32_t n) noexcept {
    T* const* slots = slots_.get();
    const uint32_t start = idx & mask_;
    const uint32_t first = std::min(n, mask_ + 1 - start);
    std::copy_n(slots + start, first, dst);
    if (n > first) std::copy_n(slots, n - first, dst + first);  // wrapped part
  }

  // Requests, for writing, the slot lines the next batch of this size will
  // fill: [idx, idx + count), where count only covers slots our cached view
  // of the consumer proves free, so the consumer has finished reading them
  // and the prefetch steals no line it is using. Why: the next lock
  // acquisition (a locked instruction) waits for the store buffer to drain;
  // without this, the next batch's slot stores each miss to the consumer's
  // core and the lock stalls on those round trips. Fetching the lines now
  // overlaps that latency with the caller's work between batches; it doubled
  // batch-64 throughput on the 2-CPU test machine (see docs/ring.md).
  void prefetchNextBatch(uint32_t idx, uint32_t count) noexcept {
    constexpr uint32_t kPerLine = kCacheLine / sizeof(T*);
    constexpr uint32_t kMaxSlots = 8 * kPerLine;  // bound the hint: 8 lines
    count = std::min(count, kMaxSlots);
    if (count == 0) return;
    T** slots = slots_.get();
    for (uint32_t i = 0; i < count; i += kPerLine) {
      detail::prefetchForWrite(&slots[(idx + i) & mask_]);
    }
    // idx need not be line-aligned: make sure the last slot's line is in.
    detail::prefetchForWrite(&slots[(idx + count - 1) & mask_]);
  }

  void futexWake() noexcept {
#if defined(__linux__)
    // Wakes the (single) consumer blocked in futexWait on doorbell_.
    static_assert(sizeof(doorbell_) == sizeof(uint32_t) && decltype(doorbell_)::is_always_lock_free);
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&doorbell_), FUTEX_WAKE_PRIVATE, 1, nullptr,
              nullptr, 0);
#endif
  }
  void futexWait(std::chrono::nanoseconds rel) noexcept {
#if defined(__linux__)
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(rel.count() / 1000000000);
    ts.tv_nsec = static_cast<long>(rel.count() % 1000000000);
    // The kernel compares *addr with kArmed atomically with queueing us, so a
    // wake (kArmed -> kRung) between our check and this call is not lost: the
    // call returns EAGAIN at once. EINTR / ETIMEDOUT / spurious: the caller
    // re-checks.
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&doorbell_), FUTEX_WAIT_PRIVATE, kArmed, &ts,
              nullptr, 0);
#else
    std::this_thread::sleep_for(std::min(rel, std::chrono::nanoseconds(50000)));
#endif
  }

  // Read-mostly configuration, shared clean by every thread.
  alignas(kCacheLine) const uint32_t capacity_;
  const uint32_t mask_;  // storage size - 1; storage size is a power of two
  const std::unique_ptr<T*[], detail::AlignedDelete> slots_;
  void (*notify_fn_)(void*) = nullptr;
  void* notify_ctx_ = nullptr;

  // Producer state: written by producers under the lock.
  struct alignas(kCacheLine) ProducerState {
    detail::SpinLock lock;
    std::atomic<uint32_t> prod_idx{0};  // next index to fill; read by the consumer
    uint32_t cons_cache = 0;            // last cons_idx seen; guarded by lock
  } prod_;

  // Consumer state: written by the consumer thread only.
  struct alignas(kCacheLine) ConsumerState {
    std::atomic<uint32_t> cons_idx{0};  // next index to read; read by producers
    uint32_t prod_cache = 0;            // last prod_idx seen; consumer-private
  } cons_;

  // The doorbell: kIdle / kArmed (consumer about to sleep) / kRung (a producer
  // claimed the wake-up). Own line: producers read it on every flush() and it
  // must stay shared-clean while the consumer is busy. The class alignment
  // (64) rounds sizeof up, so whatever follows the ring object is off this line.
  alignas(kCacheLine) std::atomic<uint32_t> doorbell_{kIdle};
};

}  // namespace ringbuf
