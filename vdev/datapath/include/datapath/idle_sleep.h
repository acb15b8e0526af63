// IdleSleep: how an idle datapath thread sleeps until there is work.
//
// It arms every live port's delivery-ring doorbells (a ring that already
// holds frames calls the sleep off: the ring re-checks after arming, so no
// wake-up is lost), then waits in one epoll_wait on the thread's eventfd
// (doorbells, control requests) and the receiving sockets of live ports and
// the punt device, plus the fast path's capture reader while a capture
// takes its copies. One epoll_wait whatever the port count: a poll() over
// 250 sockets cost more than everything else vdevd does idle, and a
// copy-mode socket's poll even runs a TX pass (xsk_poll).
//
// A socket in an epoll set costs whoever wakes its wait queue a lock of
// the epoll instance: in copy mode every transmitted frame's skb, freed,
// wakes it for write space (sock_wfree), and every receive batch for data.
// So a receiving queue the thread is busy with leaves the set (leave(),
// one epoll_ctl when it starts) and comes back in the next sync, before
// the thread sleeps: 12% of the own path's rate at its peak (vdevd's
// --idle-spin-us 1000000, which never built the set, forwarded 2.280 Mpps
// where vdevd forwarded 2.036; docs/architecture.md, "Idle").
//
// Invariant: after sync, the epoll set watches exactly the eventfd and
// have_, and have_ is the set of fds wanted at the last sync with no socket
// opened or closed since (gen_ == XskSocket::generation()); otherwise the
// set is built afresh, since a closed fd leaves an epoll set by itself and
// its number may be a new socket's. Between syncs, the queues marked
// Port::Queue::unwatched are out of it.
//
// Datapath thread only (create: before the thread starts).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "datapath/port.h"
#include "datapath/port_table.h"

namespace vdev::datapath {

class IdleSleep {
 public:
  // The sockets are those of ports and punt (the punt device's port, null
  // until the skb path is set up): both outlive this object. poll_ms: the
  // sleep while something needs polling (housekeeping's period); quiet_ms:
  // else (the once-a-second work's period).
  IdleSleep(const PortTable& ports, const std::unique_ptr<Port>& punt, int poll_ms, int quiet_ms)
      : ports_(ports), punt_(punt), poll_ms_(poll_ms), quiet_ms_(quiet_ms) {}
  IdleSleep(const IdleSleep&) = delete;
  IdleSleep& operator=(const IdleSleep&) = delete;

  // Makes the epoll instance; wake_fd (the eventfd, the caller's) is read
  // empty after every sleep. Errors: epoll_create1's.
  Status open(int wake_fd);

  // What else decides the sleep. capture_fd: the fast path's capture
  // reader while a capture takes its copies (-1: none), which wakes the
  // thread only every FastPath::kCaptureWakeup copies, so the sleep lasts
  // at most FastPath::kCaptureIdleMs. poll: something needs polling
  // whatever the ports (no link events, lazy completions). relink_ms: the
  // next relink is due in that many ms (-1: none).
  struct Wake {
    int capture_fd = -1;
    bool poll = false;
    int relink_ms = -1;
  };
  // Sleeps until a frame, a doorbell, a control request, or the timeout.
  void sleepUntilWork(const Wake& w);
  // q (a receiving queue of a port, or the punt device's) is busy: out of
  // the epoll set until the next sleep. A syscall only the first time.
  void leave(Port::Queue& q) noexcept {
    if (!q.unwatched) unwatch(q);
  }

 private:
  // Brings the epoll set in step with the sockets to watch (see above).
  void sync(int capture_fd);
  void unwatch(Port::Queue& q) noexcept;
  // Every queue leave() took out: back in (watch), or only unmarked after
  // a rebuild, which watched them anew.
  void rewatch(bool rebuilt);
  int timeoutMs(const Wake& w) const;

  const PortTable& ports_;
  const std::unique_ptr<Port>& punt_;
  const int poll_ms_, quiet_ms_;
  int wake_fd_ = -1;
  FileDesc epoll_fd_;
  uint64_t gen_ = ~0ull;                 // XskSocket::generation() at the last rebuild
  std::vector<int> want_, have_;         // the fds to watch; those watched
  uint32_t unwatched_ = 0;               // queues leave() took out since the last sync
  std::vector<ringbuf::PtrRing<Frame>*> armed_;  // the doorbells armed for this sleep
};

}  // namespace vdev::datapath
