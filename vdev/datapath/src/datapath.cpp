// Datapath (datapath.h): creation, the datapath thread and its loop and
// housekeeping. The other concerns are in their own
// files (see datapath.h).
#include "datapath/datapath.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

namespace vdev::datapath {

namespace {

constexpr uint64_t kHousekeepingNs = 100ull * 1000 * 1000;  // dead-device checks, lazy reaping
constexpr uint64_t kMtuRefreshNs = 1000ull * 1000 * 1000;
// The idle sleep: the housekeeping period while something needs polling,
// else the once-a-second work's period (idleTimeoutMs).
constexpr int kPollingSleepMs = int(kHousekeepingNs / 1000000);
constexpr int kQuietSleepMs = int(kMtuRefreshNs / 1000000);

}  // namespace

uint64_t monotonicNs() noexcept {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

Result<std::unique_ptr<Datapath>> Datapath::create(const DatapathConfig& cfg) {
  if (cfg.port.batch == 0 || cfg.port.batch > 256) return Error{EINVAL, "batch size must be 1..256"};
  auto pool = FramePool::create(cfg.frames, cfg.frame_size);
  if (!pool) return pool.error();
  if (cfg.max_inflight && cfg.max_inflight < cfg.port.batch)
    return Error{EINVAL, "max in-flight frames per port (" + std::to_string(cfg.max_inflight) +
                             ") must be at least the batch size (" + std::to_string(cfg.port.batch) + ")"};
  std::unique_ptr<Datapath> dp(new Datapath(cfg, std::move(pool.value())));
  if (cfg.fast_path && cfg.mode == SwitchMode::kSwitch) {
    auto fp = FastPath::create(dp->fdb_.capacity());
    if (fp) {
      dp->fast_ = std::move(fp.value());
      dp->fast_sync_ = FastSync(dp->fast_.get());
      dp->cfg_.port.fast = dp->fast_.get();
      dp->fdb_.enableJournal(4096);
      // A move must not take a MAC whose station talks only through the
      // kernel: the map's last-seen time is read before it is allowed.
      dp->fdb_.setSeenElsewhere(
          [](void* ctx, uint64_t key, uint16_t port_index) noexcept {
            return static_cast<const FastPath*>(ctx)->seen(key, port_index);  // the same keys
          },
          dp->fast_.get());
    } else if (cfg.fast_path_required) {
      return Error{fp.error().err, "kernel fast path: " + fp.error().what};
    } else {
      std::fprintf(stderr, "vdevd: warning: no kernel fast path (%s); every frame goes through vdevd\n",
                   fp.error().message().c_str());
    }
  }
  dp->cfg_.fast_path = dp->fast_ != nullptr;
  dp->fast_sync_.setFeatures(&dp->features_);
  // Once per kernel: how the skb programs are attached.
  if (dp->cfg_.tc_attach == TcAttach::kAuto) dp->cfg_.tc_attach = probeTcAttach();
  dp->xdp_ = std::make_unique<XdpObject>(dp->fast_.get());
  dp->cfg_.port.xdp = dp->xdp_.get();
  dp->wake_fd_ = FileDesc(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!dp->wake_fd_.valid()) return errnoError("eventfd");
  dp->wake_fd_raw_ = dp->wake_fd_.get();
  dp->ctl_sock_ = FileDesc(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!dp->ctl_sock_.valid()) return errnoError("socket for link state");
  if (Status st = dp->idle_.open(dp->wake_fd_.get()); !st) return st.error();
  return dp;
}

Datapath::Datapath(const DatapathConfig& cfg, std::unique_ptr<FramePool> pool)
    : cfg_(cfg),
      features_(cfg.xdp_features),
      pool_(std::move(pool)),
      held_(std::make_unique<HeldFrames>(*pool_)),
      fdb_(cfg.fdb_size, cfg.fdb_ageing_ns, cfg.fdb_max_per_port, cfg.fdb_hold_ns,
           cfg.fdb_key ? *cfg.fdb_key : FdbKey::random()),
      batches_(cfg.port.batch),
      fill_(pool_->total(), ports_, punt_),
      idle_(ports_, punt_, kPollingSleepMs, kQuietSleepMs) {
  fdb_.setGroupLimit(cfg.fdb_max_per_group);
  if (cfg_.max_inflight == 0) cfg_.max_inflight = std::max(cfg_.frames / 4, cfg_.port.batch);
  cfg_.port.held = held_.get();
  cfg_.port.features = &features_;
  cfg_.port.hold_copy_mode = cfg_.hold_copy_mode_frames;
  cfg_.port.zerocopy_path_always = cfg_.zerocopy_path_everywhere;
  host_.refreshMacs(cfg_.host_macs, ports_.active());
}

Datapath::~Datapath() {
  stop();
  teardown();
}

void Datapath::start() {
  if (running_) return;
  stop_.store(false, std::memory_order_relaxed);
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void Datapath::stop() {
  if (!running_) return;
  stop_.store(true, std::memory_order_release);  // S0 pairs with S1 in run()
  uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_.get(), &one, sizeof one);
  (void)rc;
  thread_.join();
  running_ = false;
}

void Datapath::housekeeping(uint64_t now_ns) {
  last_hk_ns_ = now_ns;
  if (!held_->empty()) held_->release(now_ns);  // frames the kernel let go of
  const bool mtu_time = now_ns - last_mtu_ns_ >= kMtuRefreshNs;
  // The host and link checks may attach or detach programs and close
  // sockets: a change of the ports' rows for the statistics (rows_seq_),
  // bracketed only when they run, so that an idle round does not make a
  // statistics reader start again.
  bool rows_changing = false;
  auto changing = [&] {
    if (!rows_changing) rowsChangeBegin();
    rows_changing = true;
  };
  if (mtu_time) {
    changing();
    last_mtu_ns_ = now_ns;
    host_.refresh(cfg_.host_macs, ports_.active(), tc_.get(), !addr_events_);
    syncHostPorts();
    if (fast_) fast_sync_.housekeeping(fdb_, ports_.active(), !xdp_feature_events_);
    fdb_.expire(now_ns);  // aged-out MACs stop counting against their port's limit
  }
  for (Port* pp : ports_.active()) {
    Port& p = *pp;
    // With link events (setLinkEvents), a live port with every queue bound
    // is looked at only when its device changes: idle costs nothing per
    // port. The others (down, absent, waiting for queues) are polled.
    if (!link_events_ || !p.live() || p.unboundQueues()) {
      changing();
      checkLink(p);
    }
    if (!p.live()) continue;
    // What a backed-up device left on a TX ring goes when it has room again
    // (a copy-mode socket sends only when kicked).
    p.kickPending();
    if (cfg_.port.completion == CompletionMode::kLazy) p.reapCompletions(*pool_);
    if (mtu_time && !link_events_) refreshMtu(p);
  }
  if (mtu_time) checkUplinkMtus();
  if (rows_changing) rowsChangeEnd();
}

void Datapath::sleepUntilWork() {
  IdleSleep::Wake w;
  if (captures_.fast()) w.capture_fd = fast_->captureReaderFd();
  w.poll = !link_events_ || cfg_.port.completion == CompletionMode::kLazy;
  if (relink_.armed()) w.relink_ms = relink_.timeoutMs(monotonicNs());
  idle_.sleepUntilWork(w);
}

void Datapath::run() {
  setThreadIndex(0);
  uint64_t idle_since = 0;
  uint32_t spins = 0;
  uint64_t now = 0;
  uint32_t last_rx = 0;  // frames the last round received
  while (!stop_.load(std::memory_order_acquire)) {  // S1 pairs with S0 in stop()
    if (control_.pending()) control_.serve();
    // The clock after work and every 16th idle spin: reading it on every
    // empty spin cost 15% of the thread when bursts come close together
    // (perf, vdev-bench); 15 spins late is well inside the idle budget.
    if ((spins & 15) == 0) {
      now = monotonicNs();
      fill_.setNow(now);
    }
    uint32_t work = 0;
    // Quiet ports (docs/architecture.md): a port whose queues received
    // nothing for Port::kQuietRounds rounds has its fill rings topped up,
    // and one with nothing to transmit its TX side looked at, only in one
    // round of every kScanRounds (staggered by index); after a busy round
    // (a burst's worth received) its RX rings too. 248 idle ports cost the
    // own path 27% of its rate when every round looked at all of them.
    const uint32_t round = ++round_;
    const auto scanned = [round](const Port& p) { return ((round + p.index()) & (kScanRounds - 1)) == 0; };
    const bool busy = last_rx >= kBusyRound;
    // Under load (after a busy round), a queue that received or a port
    // that sent leaves the idle sleep's epoll set until the thread sleeps
    // (IdleSleep::leave); at a light load the syscalls would cost more
    // than the wake-ups they save.
    uint32_t rx = 0;
    if (punt_ && punt_->live())
      for (auto& q : punt_->queues())
        if (q->xsk)
          if (const uint32_t n = rxPuntBurst(*q, now)) {
            if (busy) idle_.leave(*q);
            rx += n;
          }
    for (Port* pp : ports_.active()) {
      Port& p = *pp;
      if ((busy && p.rxQuiet() && !scanned(p)) || !p.live() || !p.receives()) continue;
      uint32_t got = 0;
      for (auto& q : p.queues())
        if (q->xsk)
          if (const uint32_t n = rxBurst(p, *q, now)) {
            if (busy) idle_.leave(*q);
            got += n;
          }
      p.noteRx(got);
      rx += got;
    }
    last_rx = rx;
    work += rx;
    for (Port* pp : ports_.active())
      if ((pp->txBusy() || scanned(*pp)) && pp->live())
        if (const uint32_t sent = pp->drainTx(*pool_)) {
          if (busy && pp->receives())  // only a receiving port's sockets are watched
            for (auto& q : pp->queues()) idle_.leave(*q);
          work += sent;
        }
    if (fast_ && fdb_.journalPending()) [[unlikely]]
      fast_sync_.syncFdb(fdb_, now);
    if (captures_.fast()) [[unlikely]] {
      // The fast path's copies of captured ports' frames (no syscall).
      captures_.readClocks();
      fast_->consumeCaptures();
    }
    if (punt_ && punt_->live())
      for (auto& q : punt_->queues()) refill(*q);
    for (Port* pp : ports_.active())
      if ((!pp->rxQuiet() || scanned(*pp)) && pp->live() && pp->receives())
        for (auto& q : pp->queues()) refill(*q);
    if (now - last_hk_ns_ >= kHousekeepingNs) housekeeping(now);
    if (relink_.due(now)) [[unlikely]] {
      rowsChangeBegin();  // it re-attaches ports (Datapath::stats)
      relink();
      rowsChangeEnd();
    }
    if (work) {
      idle_since = 0;
      spins = 0;
      continue;
    }
    if (idle_since == 0) idle_since = now;
    if (now - idle_since < cfg_.idle_spin_ns) {
      if ((++spins & 63) == 0) std::this_thread::yield();
      continue;
    }
    // Idle: reap what completed so the pool is full while we sleep.
    for (Port* pp : ports_.active())
      if (pp->live()) pp->reapCompletions(*pool_);
    sleepUntilWork();
    idle_since = 0;
    spins = 0;  // the clock is read again first thing
  }
  if (control_.pending()) control_.serve();
}

}  // namespace vdev::datapath
