// generator.cpp - see generator.h.
#include "generator.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <signal.h>
#include <time.h>

#include <cstring>

#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)  // Linux 5.18
#endif

namespace vdev::bench {

namespace {
// The interrupt signal for generator threads. Its handler does nothing; its
// only purpose is to make the blocking BPF_PROG_RUN return EINTR.
constexpr int kInterruptSignal = SIGUSR2;
void onInterrupt(int) {}

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
  if (cfg.ratePps != 0) return Status::fail(ENOTSUP, "generator pacing (--rate) is not implemented yet");
  if (cfg.threads < 1) return Status::fail(EINVAL, "generator threads must be >= 1");
  std::unique_ptr<Generator> g(new Generator(ns, std::move(cfg)));
  auto skel = loadGenerator(g->cfg_.prog);
  if (!skel) return skel.status();
  g->skel_ = std::move(skel.value());
  g->progFd_ = genProgramFd(g->skel_.get());
  g->countersFd_ = genCountersFd(g->skel_.get());
  auto link = XdpLink::attach(ns, ifname, genPassProgram(g->skel_.get()));
  if (!link) return link.status();
  g->passLink_ = std::make_unique<XdpLink>(std::move(link.value()));
  auto idx = ifindexIn(ns, ifname);
  if (!idx) return idx.status();
  g->ifindex_ = idx.value();

  // One trial call with a tiny repeat: the kernel validates everything here
  // (live-frames support, ctx, the ifindex's XDP RX queue), so a setup
  // problem is reported before any thread starts.
  Status s = inNetns(ns, [&]() -> Status {
    xdp_md ctx = {};
    ctx.data_end = static_cast<__u32>(g->cfg_.frame.size());  // the kernel insists
    ctx.ingress_ifindex = static_cast<__u32>(g->ifindex_);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = g->cfg_.frame.data(),
                .data_size_in = static_cast<__u32>(g->cfg_.frame.size()), .ctx_in = &ctx,
                .ctx_size_in = sizeof ctx, .repeat = 1, .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
                .batch_size = g->cfg_.batchSize);
    if (bpf_prog_test_run_opts(g->progFd_, &opts) < 0)
      return Status::fromErrno("BPF_PROG_RUN (live frames) on the generator veth");
    return {};
  });
  if (!s.ok()) return s;
  return g;
}

Generator::~Generator() { stop(); }

Status Generator::start() {
  if (!threads_.empty()) return Status::fail(EBUSY, "generator already running");
  installInterruptHandler();
  stop_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lk(mu_);
    error_ = Status();
    tids_.assign(cfg_.threads, 0);
  }
  inside_.store(cfg_.threads, std::memory_order_relaxed);
  for (int i = 0; i < cfg_.threads; ++i) threads_.emplace_back([this, i] { threadMain(i); });
  for (auto& t : threads_) handles_.push_back(t.native_handle());
  return {};
}

void Generator::threadMain(int index) {
  // Stop signals go to the main thread; this one only reacts to kInterruptSignal.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, kInterruptSignal);
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);

  pid_t tid = gettid();
  {
    std::lock_guard<std::mutex> lk(mu_);
    tids_[index] = tid;
  }
  auto fail = [&](Status s) {
    std::lock_guard<std::mutex> lk(mu_);
    if (error_.ok()) error_ = std::move(s);
  };
  Status s = ns_.enter();  // ctx ingress_ifindex resolves in this thread's netns
  if (s.ok()) s = pinTask(0, cfg_.cpu);
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
                .ctx_size_in = sizeof ctx, .repeat = static_cast<int>(cfg_.repeatPerCall),
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = cfg_.batchSize);
    // stop_ (relaxed) pairs with nothing: it only ends the loop; the joins
    // in stop() order everything else.
    while (!stop_.load(std::memory_order_relaxed)) {
      int rc = bpf_prog_test_run_opts(progFd_, &opts);
      if (rc < 0 && errno != EINTR) {
        fail(Status::fromErrno("BPF_PROG_RUN (live frames)"));
        break;
      }
      calls_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  double cpu = 0;
  if (auto c = threadCpuSeconds(tid)) cpu = c.value();
  {
    std::lock_guard<std::mutex> lk(mu_);
    exitedCpu_ += cpu;
    tids_[index] = 0;
  }
  inside_.fetch_sub(1, std::memory_order_release);
}

void Generator::stop() {
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

double Generator::cpuSeconds() const {
  std::lock_guard<std::mutex> lk(mu_);
  double sum = exitedCpu_;
  for (pid_t tid : tids_) {
    if (tid == 0) continue;
    if (auto c = threadCpuSeconds(tid)) sum += c.value();
  }
  return sum;
}

Status Generator::error() const {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

}  // namespace vdev::bench
