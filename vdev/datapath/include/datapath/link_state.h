// A port's link as vdevd sees it: one state per port, and every transition
// between states in this header (Link). The checks that drive it -- does the
// device exist, is its link up, did the sockets bind -- are in
// vdev/datapath/src/link.cpp (Datapath::checkLink).
//
//              device of the port's name appears, attached
//   kAbsent ─────────────────────────────────────────────► kLive
//      ▲                                                  │  ▲  ▲
//      │ device deleted or replaced (from any state)      │  │  │ sockets bound
//      │                                   link down,     │  │  │
//      │                                   socket error   ▼  │  │
//      │                                              kDown ─┘  │
//      │                                                │ ▲     │
//      │                        link up, bind: EBUSY    ▼ │ link down
//      │                                             kReleasing
//
// A port takes frames only in kLive (Port::live(), read by every thread that
// calls Port::xmitBulk). Owner thread for every transition.
//
// A link that comes back within moments of going down finds its queues still
// held by the sockets vdevd closed: the kernel releases a socket's buffer
// pool from a work item after close() (it needs the RTNL), and until then a
// new bind to the queue fails with EBUSY -- on 13 of 20 quick flaps here, for
// up to two 100 ms housekeeping rounds. The port then waits in kReleasing,
// retried every kRelinkRetryNs on the RelinkTimer instead of housekeeping,
// silently for kRelinkQuietNs; an EBUSY that lasts longer is a real conflict
// (another AF_XDP socket) and is reported.
//
// A link that flaps (a guest taking its link down and up in a loop, a
// carrier that comes and goes) would make the datapath thread close and
// open the port's sockets as fast as it flaps. Re-attaching is rate
// limited (Link::mayAttach): once the link came up more than kFlapBurst
// times within kFlapWindowNs, each time it comes up the port waits before
// it is attached -- kFlapBackoffMinNs, then twice as long as the wait
// before, up to kFlapBackoffMaxNs, from the moment the link came up -- until
// two link-ups come kFlapCalmNs apart. A port waiting so is kDown with its
// link up; every wait is counted (link.flap_waits) and the start of each
// flapping spell is logged once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

namespace vdev::datapath {

inline constexpr uint64_t kRelinkRetryNs = 2ull * 1000 * 1000;
inline constexpr uint64_t kRelinkQuietNs = 1000ull * 1000 * 1000;

inline constexpr uint32_t kFlapBurst = 20;
inline constexpr uint64_t kFlapWindowNs = 1000ull * 1000 * 1000;
inline constexpr uint64_t kFlapBackoffMinNs = 100ull * 1000 * 1000;
inline constexpr uint64_t kFlapBackoffMaxNs = 5000ull * 1000 * 1000;
inline constexpr uint64_t kFlapCalmNs = 10000ull * 1000 * 1000;

enum class LinkState : uint8_t {
  kAbsent,     // no device of the port's name (not there yet, deleted, replaced): waits for one
  kDown,       // the device is there, the port has no sockets (link down, or binding failed);
               // also a port without a device (tests) that is not up
  kReleasing,  // link up, but the kernel still holds the queues of the old sockets (EBUSY)
  kLive,       // sockets bound: the port takes frames
};

class Link {
 public:
  explicit Link(LinkState s = LinkState::kDown) : state_(s) {}

  // Any thread.
  LinkState state() const noexcept { return state_.load(std::memory_order_acquire); }  // L1 pairs with L0
  bool live() const noexcept { return state() == LinkState::kLive; }

  // Transitions (owner thread).

  // A device of the port's name, with its program and sockets (Port::attachDevice).
  void attached() noexcept {
    releasing_since_ns_ = 0;
    reported_ = false;
    set(LinkState::kLive);
  }
  // Sockets bound again (kDown, kReleasing -> kLive). Returns how long the
  // port waited in kReleasing (ns), 0 if it did not.
  uint64_t bound(uint64_t now_ns) noexcept {
    const uint64_t waited = releasing_since_ns_ ? now_ns - releasing_since_ns_ : 0;
    releasing_since_ns_ = 0;
    up_counted_ = false;
    not_before_ns_ = 0;
    reported_ = false;
    set(LinkState::kLive);
    return waited;
  }
  // The sockets were closed (Port::shutdown): kLive -> kDown. A port that
  // was not live stays as it is (kAbsent, kReleasing).
  void closed() noexcept {
    if (state() == LinkState::kLive) set(LinkState::kDown);
  }
  // The device is gone (deleted, or its name now names another): any -> kAbsent.
  void gone() noexcept {
    releasing_since_ns_ = 0;
    set(LinkState::kAbsent);
  }
  // The link was seen down: a wait for the kernel ends (kReleasing -> kDown);
  // the next one starts when the link is next up.
  void down() noexcept {
    up_counted_ = false;
    if (state() == LinkState::kReleasing) {
      releasing_since_ns_ = 0;
      set(LinkState::kDown);
    }
  }
  // Binding failed with EBUSY: kDown -> kReleasing (the wait starts now), or
  // still kReleasing. Returns whether the wait is still quiet (shorter than
  // kRelinkQuietNs): retry soon without a word. Past it, the port stays in
  // kReleasing (retried with the others) and the failure is to be reported.
  bool busy(uint64_t now_ns) noexcept {
    if (state() != LinkState::kReleasing) {
      releasing_since_ns_ = now_ns;
      set(LinkState::kReleasing);
    }
    return now_ns - releasing_since_ns_ < kRelinkQuietNs;
  }

  // A failure to attach, bind or grow the port: true the first time since
  // the last success (log it), false after (stay quiet while it lasts).
  bool report() noexcept { return !std::exchange(reported_, true); }

  // Flap rate limit. The link was seen up while the port is kDown or
  // kReleasing, about to open its sockets: whether it may now. Each time
  // the link comes up (the first call since it was last seen down, or since
  // the port was last attached) counts: more than kFlapBurst within
  // kFlapWindowNs start a flapping spell, in which every one waits a
  // backoff from the moment the link came up (kFlapBackoffMinNs, then twice
  // the one before, up to kFlapBackoffMaxNs), until two of them come
  // kFlapCalmNs apart. So a link that keeps flapping is not attached again
  // until it stops. `what`: kStarted when this one began a spell (log it),
  // kCalm when one ended; `waits`: true the first time a given link-up has
  // to wait (count it).
  enum class Flap : uint8_t { kNone, kStarted, kCalm };
  bool mayAttach(uint64_t now_ns, Flap& what, bool& waits) noexcept {
    what = Flap::kNone;
    waits = false;
    if (!up_counted_) {
      up_counted_ = true;
      if (backoff_ns_ && now_ns - last_up_ns_ >= kFlapCalmNs) {
        backoff_ns_ = 0;
        what = Flap::kCalm;
      }
      if (now_ns - window_start_ns_ >= kFlapWindowNs) {
        window_start_ns_ = now_ns;
        window_n_ = 0;
      }
      window_n_++;
      last_up_ns_ = now_ns;
      if (backoff_ns_) {
        backoff_ns_ = std::min(2 * backoff_ns_, kFlapBackoffMaxNs);
      } else if (window_n_ > kFlapBurst) {
        backoff_ns_ = kFlapBackoffMinNs;
        what = Flap::kStarted;
      }
      not_before_ns_ = backoff_ns_ ? now_ns + backoff_ns_ : 0;
      waits = now_ns < not_before_ns_;
    }
    return now_ns >= not_before_ns_;
  }
  // When a waiting port may be attached (0: it is not waiting).
  uint64_t reattachAt() const noexcept { return not_before_ns_; }
  // The wait the link's next coming up has (0: none, the link is not flapping).
  uint64_t backoffNs() const noexcept { return backoff_ns_; }

 private:
  void set(LinkState s) noexcept { state_.store(s, std::memory_order_release); }  // L0

  std::atomic<LinkState> state_;
  uint64_t releasing_since_ns_ = 0;  // kReleasing: when the wait began (monotonic ns)
  bool reported_ = false;            // a failure was logged; cleared by the next success
  // Flap rate limit (mayAttach()): the times the link came up in the
  // window starting at window_start_ns_, the last time, the current
  // backoff, until when the port waits, and whether this link-up counted.
  uint64_t window_start_ns_ = 0;
  uint32_t window_n_ = 0;
  uint64_t last_up_ns_ = 0;
  uint64_t backoff_ns_ = 0;
  uint64_t not_before_ns_ = 0;
  bool up_counted_ = false;
};

// When to look again at the ports in kReleasing: one timer for all of them,
// checked by the datapath thread after every burst and shortening its idle
// poll(). 0 = no port waiting.
class RelinkTimer {
 public:
  // A port waits: look again within kRelinkRetryNs.
  void arm(uint64_t now_ns) noexcept { armAt(now_ns + kRelinkRetryNs); }
  // A port waits until at_ns (a flapping link's re-attach): look again then.
  void armAt(uint64_t at_ns) noexcept {
    if (at_ns_ == 0 || at_ns_ > at_ns) at_ns_ = at_ns;
  }
  bool armed() const noexcept { return at_ns_ != 0; }
  bool due(uint64_t now_ns) const noexcept { return at_ns_ && now_ns >= at_ns_; }
  // The ports are being looked at; a port still waiting arms it again.
  void fired() noexcept { at_ns_ = 0; }
  // Armed: the poll() timeout, milliseconds until due (rounded up).
  int timeoutMs(uint64_t now_ns) const noexcept {
    return at_ns_ > now_ns ? int((at_ns_ - now_ns + 999999) / 1000000) : 0;
  }

 private:
  uint64_t at_ns_ = 0;
};

}  // namespace vdev::datapath
