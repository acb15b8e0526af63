// generator.cpp - see generator.h.
#include "generator.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "testkit/links.h"

#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)  // Linux 5.18
#endif

namespace vdev::bench {

namespace {
// The interrupt signal for generator threads. Its handler does nothing; its
// only purpose is to make the blocking BPF_PROG_RUN return EINTR.
constexpr int kInterruptSignal = SIGUSR2;
void onInterrupt(int) {}

// A paced generator spins until each frame's slot and skips the slots it
// missed (gen.bpf.c): it offers its rate only while it has its CPU. Against a
// CPU-bound task at the default weight, CFS would give it half the CPU and
// half the rate. With autogrouping, vdev-bench's session as a whole runs at
// nice -20 while paced (main.cpp), and the threads keep nice 0: CFS splits a
// group's weight over the CPUs by the group's load there, so nice -20
// threads on the generator's CPU would pull the session's weight away from
// vdevd's CPU (vdevd, a child, is in the same session) and leave vdevd
// less than a build in another session gets. Without autogrouping the
// threads themselves run at nice -20 (weight 88761 against 1024): ~99% of
// the CPU, without starving anything the way SCHED_FIFO spinning would.
Status setPacerNice() {
  if (autogroupNice()) return {};
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), -20) < 0)
    return errnoError("setpriority(-20) for the paced generator");
  return {};
}

void installInterruptHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART
    sigaction(kInterruptSignal, &sa, nullptr);
  });
}
}  // namespace

Result<std::unique_ptr<Generator>> Generator::create(const Netns& ns, const std::string& ifname,
                                                     GeneratorConfig cfg) {
  if (cfg.threads < 1) return makeError(EINVAL, "generator threads must be >= 1");
  std::unique_ptr<Generator> g(new Generator(ns, std::move(cfg)));
  auto skel = loadGenerator(g->cfg_.prog);
  if (!skel) return skel.error();
  g->skel_ = std::move(skel.value());
  g->progFd_ = genProgramFd(g->skel_.get());
  g->countersFd_ = genCountersFd(g->skel_.get());
  auto link = XdpLink::attach(ns, ifname, genPassProgram(g->skel_.get()));
  if (!link) return link.error();
  g->passLink_ = std::make_unique<XdpLink>(std::move(link.value()));
  auto idx = testkit::ifindexOf(ifname, &ns);
  if (!idx) return idx.error();
  g->ifindex_ = idx.value();

  // One trial call with a tiny repeat: the kernel validates everything here
  // (live-frames support, ctx, the ifindex's XDP RX queue), so a setup
  // problem is reported before any thread starts.
  Status s = testkit::inNetns(&ns, [&]() -> Status {
    xdp_md ctx = {};
    ctx.data_end = static_cast<__u32>(g->cfg_.frame.size());  // the kernel insists
    ctx.ingress_ifindex = static_cast<__u32>(g->ifindex_);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = g->cfg_.frame.data(),
                .data_size_in = static_cast<__u32>(g->cfg_.frame.size()), .ctx_in = &ctx,
                .ctx_size_in = sizeof ctx, .repeat = 1, .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
                .batch_size = g->cfg_.batchSize);
    if (bpf_prog_test_run_opts(g->progFd_, &opts) < 0)
      return errnoError("BPF_PROG_RUN (live frames) on the generator veth");
    return {};
  });
  if (!s.ok() && s.error().err == EPERM) {
    logWarn("%s: the generator relays frames written into a packet socket instead (vb_relay clones each "
            "into a burst of XDP frames out of %s)",
            s.error().message().c_str(), ifname.c_str());
    s = g->setUpRelay(ifname);
  }
  if (!s.ok()) return s.error();
  g->setRate(g->cfg_.ratePps);
  return g;
}

Status Generator::setUpRelay(const std::string& ifname) {
  // <genIf>w: the packet socket's end; <genIf>r: vb_relay's (native XDP,
  // so veth hands it what <genIf>w transmits through its NAPI).
  auto pair = testkit::VethPair::create(
      {.host_name = ifname + "r", .peer_name = ifname + "w", .host_ns = &ns_, .peer_ns = &ns_});
  if (!pair) return pair.error();
  relayPair_.emplace(std::move(pair.value()));
  auto link = XdpLink::attach(ns_, relayPair_->hostName(), genRelayProgram(skel_.get()));
  if (!link) return link.error();
  relayLink_ = std::make_unique<XdpLink>(std::move(link.value()));
  relayTo_ = ifname;
  auto sock = testkit::openPacketSocket(relayPair_->peerName(), &ns_, /*receive=*/false);
  if (!sock) return sock.error();
  writer_ = std::make_unique<FrameWriter>(std::move(sock.value()), "a packet socket on " + relayPair_->peerName(),
                                          cfg_.frame, cfg_.threads, cfg_.cpu);
  return {};
}

// Members go in reverse order: the writer and its socket, the relay's
// program, its veths, then vb_pass and the skeleton.
Generator::~Generator() { stop(); }

bool Generator::running() const { return writer_ ? writer_->running() : !threads_.empty(); }

// The relay counts its copies as vb_gen counts its frames.
Result<Counters> Generator::counters() const { return readCounters(countersFd_); }

double Generator::cpuSeconds() const { return writer_ ? writer_->cpuSeconds() : book_.cpuSeconds(); }

Status Generator::error() const {
  if (!relayError_.ok()) return relayError_;
  return writer_ ? writer_->error() : book_.error();
}

std::vector<pid_t> Generator::threadIds() const { return writer_ ? writer_->threadIds() : book_.ids(); }

void Generator::setRate(uint64_t pps) {
  cfg_.ratePps = pps;
  if (writer_) {
    // A write() makes a burst: relayCopies frames, or while paced one burst
    // of pacedBatchSize per slot, as vb_gen's.
    uint32_t copies = relayCopies(pps);
    if (copies != relayNow_) {
      Status s = genSetRelay(skel_.get(), ns_, relayTo_, copies);
      if (!s.ok() && relayError_.ok()) relayError_ = s;
      relayNow_ = copies;
    }
    writer_->setFramesPerWrite(copies);
    writer_->setRate(pps ? std::max<uint64_t>(1, pps / copies) : 0);
    return;
  }
  uint64_t period = pps ? std::max<uint64_t>(1, 1'000'000'000ull / pps) : 0;
  // One slot per BPF_PROG_RUN batch: its frames leave together anyway.
  genSetPace(skel_.get(), period, paceMaxLagNs(period), cfg_.pacedBatchSize);
}

std::string Generator::describe() const {
  if (writer_) {
    std::string s = "XDP frames relayed (BPF_PROG_RUN live frames refused by the kernel): " +
                    std::to_string(cfg_.threads) + " thread" + (cfg_.threads == 1 ? "" : "s") +
                    " write() the frame into a packet socket on " + relayPair_->peerName() + ", vb_relay on " +
                    relayPair_->hostName() + " clones each into " + std::to_string(relayCopies(0)) +
                    " XDP frames out of " + relayTo_ + " (while paced: a burst of " +
                    std::to_string(relayCopies(UINT64_MAX)) + ")";
    if (cfg_.ratePps) s += ", paced at " + std::to_string(cfg_.ratePps) + " fps";
    return s;
  }
  std::string s = "BPF_PROG_RUN live frames, " + std::to_string(cfg_.threads) + " threads";
  if (cfg_.ratePps)
    s += ", paced at " + std::to_string(cfg_.ratePps) + " fps in bursts of " + std::to_string(cfg_.pacedBatchSize);
  return s;
}

Status Generator::start() {
  if (writer_) return writer_->start();
  if (!threads_.empty()) return makeError(EBUSY, "generator already running");
  installInterruptHandler();
  stop_.store(false, std::memory_order_relaxed);
  book_.reset(cfg_.threads);
  inside_.store(cfg_.threads, std::memory_order_relaxed);
  uint32_t repeat = cfg_.repeatPerCall, batch = cfg_.batchSize;
  if (cfg_.ratePps) {
    // Paced: a call lasts ~0.5 s, so the per-call page-pool setup (~25 ms,
    // mostly asleep) of one thread hides behind the other thread's call.
    repeat = static_cast<uint32_t>(std::clamp<uint64_t>(cfg_.ratePps / 2, 1000, 1'000'000'000));
    batch = cfg_.pacedBatchSize;
  }
  for (int i = 0; i < cfg_.threads; ++i)
    threads_.emplace_back([this, i, repeat, batch] { threadMain(i, repeat, batch); });
  for (auto& t : threads_) handles_.push_back(t.native_handle());
  return {};
}

void Generator::threadMain(int index, uint32_t repeat, uint32_t batch) {
  // Stop signals go to the main thread; this one only reacts to kInterruptSignal.
  blockStopSignals();
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, kInterruptSignal);
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);

  book_.started(index, gettid());
  auto fail = [&](Status s) { book_.failed(std::move(s)); };
  // ctx ingress_ifindex resolves in the calling thread's netns. This thread
  // exists only for this loop and ends with it, so it enters the namespace
  // itself (testkit::inNetns would run the loop on yet another thread, whose
  // CPU time the runner could not find by this one's id).
  Status s;
  if (::setns(ns_.fd(), CLONE_NEWNET) < 0) s = errnoError("setns " + ns_.name());
  if (s.ok()) s = pinTask(0, cfg_.cpu);
  if (s.ok() && cfg_.ratePps) s = setPacerNice();
  if (!s.ok()) {
    fail(s);
  } else {
    // ctx describes the frame: data 0, data_end = its length (checked by
    // the kernel), ingress_ifindex = the generator veth, queue 0.
    xdp_md ctx = {};
    ctx.data_end = static_cast<__u32>(cfg_.frame.size());
    ctx.ingress_ifindex = static_cast<__u32>(ifindex_);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = cfg_.frame.data(),
                .data_size_in = static_cast<__u32>(cfg_.frame.size()), .ctx_in = &ctx,
                .ctx_size_in = sizeof ctx, .repeat = static_cast<int>(repeat),
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = batch);
    // stop_ (relaxed) pairs with nothing: it only ends the loop; the joins
    // in stop() order everything else.
    while (!stop_.load(std::memory_order_relaxed)) {
      int rc = bpf_prog_test_run_opts(progFd_, &opts);
      if (rc < 0 && errno != EINTR) {
        fail(errnoError("BPF_PROG_RUN (live frames)"));
        break;
      }
      calls_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  book_.exited(index);
  inside_.fetch_sub(1, std::memory_order_release);
}

void Generator::stop() {
  if (writer_) writer_->stop();
  if (threads_.empty()) return;
  stop_.store(true, std::memory_order_relaxed);
  // A thread may be just about to enter the kernel when the signal lands and
  // then run a whole call; keep interrupting until every thread is out.
  // inside_ (release in threadMain) pairs with this acquire load.
  while (inside_.load(std::memory_order_acquire) > 0) {
    for (auto h : handles_) pthread_kill(h, kInterruptSignal);
    struct timespec ts = {0, 5'000'000};
    nanosleep(&ts, nullptr);
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  handles_.clear();
}

// ---- SourceThreads -----------------------------------------------------------------

void SourceThreads::reset(int threads) {
  std::lock_guard<std::mutex> lk(mu_);
  error_ = Status();
  tids_.assign(static_cast<size_t>(threads), 0);
}

void SourceThreads::started(int index, pid_t tid) {
  std::lock_guard<std::mutex> lk(mu_);
  tids_[static_cast<size_t>(index)] = tid;
}

void SourceThreads::failed(Status s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (error_.ok()) error_ = std::move(s);
}

void SourceThreads::exited(int index) {
  double cpu = 0;
  if (auto c = threadCpuSeconds(gettid())) cpu = c.value();
  std::lock_guard<std::mutex> lk(mu_);
  exitedCpu_ += cpu;
  tids_[static_cast<size_t>(index)] = 0;
}

double SourceThreads::cpuSeconds() const {
  std::lock_guard<std::mutex> lk(mu_);
  double sum = exitedCpu_;
  for (pid_t tid : tids_) {
    if (tid == 0) continue;
    if (auto c = threadCpuSeconds(tid)) sum += c.value();
  }
  return sum;
}

Status SourceThreads::error() const {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

std::vector<pid_t> SourceThreads::ids() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<pid_t> v;
  for (pid_t t : tids_)
    if (t) v.push_back(t);
  return v;
}


// ---- FrameWriter ------------------------------------------------------------------

Status FrameWriter::start() {
  if (!threads_.empty()) return makeError(EBUSY, "frame writer already running");
  stop_.store(false, std::memory_order_relaxed);
  nextSlot_.store(0, std::memory_order_relaxed);
  book_.reset(nthreads_);
  for (int i = 0; i < nthreads_; ++i) threads_.emplace_back([this, i] { threadMain(i); });
  return {};
}

void FrameWriter::threadMain(int index) {
  blockStopSignals();
  book_.started(index, gettid());
  Status s = pinTask(0, cpu_);
  if (s.ok() && rate_.load(std::memory_order_relaxed)) s = setPacerNice();
  if (!s.ok()) book_.failed(s);
  // stop_ and rate_ (relaxed) pair with nothing: the joins in stop() order
  // everything else.
  while (s.ok() && !stop_.load(std::memory_order_relaxed)) {
    uint64_t pps = rate_.load(std::memory_order_relaxed);
    if (pps) {
      // Claim the next slot; wait for it. Same catch-up rule as gen.bpf.c.
      uint64_t period = std::max<uint64_t>(1, 1'000'000'000ull / pps);
      uint64_t maxLag = paceMaxLagForWritesNs(period, framesPerWrite_.load(std::memory_order_relaxed));
      uint64_t now = nowNs(), slot = nextSlot_.load(std::memory_order_relaxed), mine;
      do {
        mine = claimPaceSlot(slot, now, period, maxLag, static_cast<unsigned>(nthreads_));
      } while (!nextSlot_.compare_exchange_weak(slot, mine + period, std::memory_order_relaxed));
      while (nowNs() < mine && !stop_.load(std::memory_order_relaxed)) {
      }
    }
    ssize_t n = write(fd_, frame_.data(), frame_.size());
    if (n == static_cast<ssize_t>(frame_.size())) {
      pkts_.fetch_add(1, std::memory_order_relaxed);
      bytes_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR && errno != ENOBUFS) {
      book_.failed(errnoError("write into " + what_));
      break;
    } else {
      writeErrors_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  book_.exited(index);
}

void FrameWriter::stop() {
  if (threads_.empty()) return;
  stop_.store(true, std::memory_order_relaxed);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

Result<Counters> FrameWriter::counters() const {
  Counters c;
  c.pkts = pkts_.load(std::memory_order_relaxed);
  c.bytes = bytes_.load(std::memory_order_relaxed);
  return c;
}

std::string FrameWriter::describe() const {
  std::string s = "write() per frame into " + what_ + ", " + std::to_string(nthreads_) + " thread" +
                  (nthreads_ == 1 ? "" : "s");
  if (uint64_t r = rate()) s += ", paced at " + std::to_string(r) + " fps";
  return s;
}

}  // namespace vdev::bench
