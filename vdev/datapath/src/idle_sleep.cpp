// IdleSleep (idle_sleep.h): the doorbells, the epoll set and its timeout.
#include "datapath/idle_sleep.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>

#include "datapath/fast_path.h"

namespace vdev::datapath {

namespace {

// fd into the epoll set ep, for input. Errors are left: EEXIST is a socket
// already there; any other leaves the fd out until the next rebuild, and
// the sleep's timeout bounds what that costs.
void watchIn(int ep, int fd) noexcept {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  (void)::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace

Status IdleSleep::open(int wake_fd) {
  wake_fd_ = wake_fd;
  epoll_fd_ = FileDesc(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd_.valid()) return errnoError("epoll_create1");
  return {};
}

void IdleSleep::sleepUntilWork(const Wake& w) {
  // Arm every delivery ring's doorbell; if one already holds frames, the
  // sleep is off (no lost wake-up: the ring re-checks after arming).
  armed_.clear();  // keeps its capacity
  bool work = false;
  for (Port* pp : ports_.active()) {
    if (!pp->live()) continue;
    for (auto& q : pp->queues()) {
      if (!q->ring.armDoorbell()) {
        work = true;
        break;
      }
      armed_.push_back(&q->ring);
    }
    if (work) break;
  }
  if (!work) {
    sync(w.capture_fd);
    epoll_event evs[8];
    (void)::epoll_wait(epoll_fd_.get(), evs, 8, timeoutMs(w));
    uint64_t v;
    ssize_t rc = ::read(wake_fd_, &v, sizeof v);
    (void)rc;
  }
  for (auto* r : armed_) r->disarmDoorbell();
}

void IdleSleep::sync(int capture_fd) {
  // The sockets to watch: those that receive, of live ports (a dead one's
  // socket may report an error for ever, which would end every sleep).
  want_.clear();  // keeps its capacity
  if (punt_ && punt_->live())
    for (auto& q : punt_->queues())
      if (q->xsk) want_.push_back(q->xsk->fd());
  for (Port* pp : ports_.active()) {
    if (!pp->live() || !pp->receives()) continue;
    for (auto& q : pp->queues())
      if (q->xsk) want_.push_back(q->xsk->fd());
  }
  // The fast path's capture copies, while a capture takes them.
  if (capture_fd >= 0) want_.push_back(capture_fd);
  if (gen_ == XskSocket::generation() && want_ == have_) {
    rewatch(false);
    return;
  }
  // Built afresh: a closed fd has left the set by itself, and its number
  // may be a new socket's now.
  FileDesc ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) {
    // The old set stays, tried again at the next sleep; the queues that
    // left it come back, or their frames would wait for the timeout.
    rewatch(false);
    return;
  }
  watchIn(ep.get(), wake_fd_);
  for (int fd : want_) watchIn(ep.get(), fd);
  epoll_fd_ = std::move(ep);
  gen_ = XskSocket::generation();
  have_ = want_;
  rewatch(true);
}

void IdleSleep::unwatch(Port::Queue& q) noexcept {
  // ENOENT (never in the set: a socket opened since the last sync) is fine:
  // the next sync adds it either way.
  if (q.xsk) (void)::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, q.xsk->fd(), nullptr);
  q.unwatched = true;
  unwatched_++;
}

void IdleSleep::rewatch(bool rebuilt) {
  if (!unwatched_) return;
  const auto back = [&](Port::Queue& q) {
    if (!q.unwatched) return;
    q.unwatched = false;
    // Only what is still wanted: not a socket of a port gone down since.
    if (rebuilt || !q.xsk || std::find(want_.begin(), want_.end(), q.xsk->fd()) == want_.end()) return;
    watchIn(epoll_fd_.get(), q.xsk->fd());
  };
  if (punt_)
    for (auto& q : punt_->queues()) back(*q);
  for (Port* pp : ports_.active())
    for (auto& q : pp->queues()) back(*q);
  unwatched_ = 0;
}

int IdleSleep::timeoutMs(const Wake& w) const {
  // Polled every poll_ms_ (100 ms): link state without rtnetlink events,
  // ports that are down, absent or waiting for queues, lazy completions,
  // frames a backed-up device left on a TX ring (retried by a kick: the
  // poll() this sleep once was did that by itself, xsk_poll running a TX
  // pass). Otherwise nothing needs the thread before the once-a-second work
  // (host addresses, the fast path's timestamps, FDB ageing): a frame, a
  // doorbell, a control request or a link event wakes it at once. A capture
  // whose copies the fast path makes wakes it only every
  // FastPath::kCaptureWakeup copies: the last few wait at most
  // kCaptureIdleMs.
  int ms = quiet_ms_;
  if (w.capture_fd >= 0) {
    ms = FastPath::kCaptureIdleMs;
  } else if (w.poll) {
    ms = poll_ms_;
  } else {
    for (const Port* p : ports_.active())
      if (!p->live() || p->unboundQueues() || p->txPending()) {
        ms = poll_ms_;
        break;
      }
  }
  return w.relink_ms >= 0 ? std::min(ms, w.relink_ms) : ms;
}

}  // namespace vdev::datapath
