// latency.cpp - see latency.h.
#include "latency.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../bpf/bench_shared.h"
#include "frame.h"

namespace vdev::bench {

namespace {

void sleepUntilNs(uint64_t t) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(t / 1'000'000'000ull);
  ts.tv_nsec = static_cast<long>(t % 1'000'000'000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Ethernet + IPv4 + UDP headers of a probe frame.
constexpr size_t kHeaders = 14 + 20 + 8;

}  // namespace

sockaddr_in sockAddr(uint32_t ip, uint16_t port) {
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip);
  a.sin_port = htons(port);
  return a;
}

Result<FileDesc> udpSocket(const Netns& ns, uint32_t ip, uint16_t port, bool udpChecksum) {
  return testkit::inNetns(&ns, [&]() -> Result<FileDesc> {
    int raw = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (raw < 0) return errnoError("socket(AF_INET, SOCK_DGRAM)");
    FileDesc fd(raw);
    int one = 1;
    // UDP checksum 0: see latency.h.
    if (!udpChecksum && setsockopt(fd.get(), SOL_SOCKET, SO_NO_CHECK, &one, sizeof one) < 0)
      return errnoError("setsockopt SO_NO_CHECK");
    sockaddr_in a = sockAddr(ip, port);
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
      return errnoError("bind UDP " + std::to_string(port));
    return fd;
  });
}

LatencyStats summarizeLatency(const std::vector<double>& us, uint64_t sent) {
  LatencyStats s;
  s.sent = sent;
  s.samples = us.size();
  s.lost = sent > us.size() ? sent - us.size() : 0;
  if (us.empty()) {
    s.minUs = s.p50Us = s.p90Us = s.p99Us = s.maxUs = s.meanUs = NAN;
    return s;
  }
  std::vector<double> v = us;
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {  // nearest rank: ceil(p * n), 1-based
    size_t r = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(r, 1, v.size()) - 1];
  };
  s.minUs = v.front();
  s.maxUs = v.back();
  s.p50Us = rank(0.50);
  s.p90Us = rank(0.90);
  s.p99Us = rank(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  s.meanUs = sum / static_cast<double>(v.size());
  return s;
}

// ---- Pinger -----------------------------------------------------------------

Result<std::unique_ptr<Pinger>> Pinger::create(const Netns& ns, uint32_t srcIp, uint32_t dstIp, size_t frameSize,
                                               bool udpChecksum) {
  auto fd = udpSocket(ns, srcIp, 0, udpChecksum);
  if (!fd) return fd.error();
  sockaddr_in dst = sockAddr(dstIp, VB_UDP_ECHO_PORT);
  if (connect(fd->get(), reinterpret_cast<sockaddr*>(&dst), sizeof dst) < 0)
    return errnoError("connect UDP to the responder");
  size_t payload = std::max(sizeof(vb_payload), frameSize - kFcsLen - kHeaders);
  return std::unique_ptr<Pinger>(new Pinger(std::move(fd.value()), payload));
}

Result<uint64_t> Pinger::run(const ProbePlan& plan, std::vector<double>* rttUs) {
  Result<uint64_t> out = makeError(EINTR, "latency probes: not run");
  std::thread t([&] { out = loop(plan, rttUs); });
  t.join();
  return out;
}

Result<uint64_t> Pinger::loop(const ProbePlan& plan, std::vector<double>* rttUs) {
  blockStopSignals();
  tid_.store(gettid(), std::memory_order_relaxed);
  struct ResetTid {
    std::atomic<pid_t>& t;
    ~ResetTid() { t.store(0, std::memory_order_relaxed); }
  } reset{tid_};
  VB_TRY(pinTask(0, plan.cpu));
  if (plan.prio) VB_TRY(setRealtime(0, plan.prio));

  std::vector<uint8_t> tx(payload_, 0), rx(2048);
  uint64_t sent = 0;
  const uint64_t start = nowNs();
  const uint64_t interval = static_cast<uint64_t>(plan.intervalS * 1e9);
  const uint64_t pause = static_cast<uint64_t>(plan.pauseS * 1e9);
  const int timeoutMs = std::max(1, static_cast<int>(plan.timeoutS * 1000));
  uint64_t lastAnswer = start;
  for (int i = 0; i < plan.count; ++i) {
    if (stopRequested()) return makeError(EINTR, "latency probes");
    // Either an absolute schedule (light load), or idle for `pause` after
    // the previous answer (the first frame after a pause).
    sleepUntilNs(pause ? lastAnswer + pause : start + static_cast<uint64_t>(i) * interval);
    vb_payload pl = {};
    pl.magic = htonl(VB_MAGIC);
    pl.seq = ++seq_;
    pl.stamp_ns = nowNs();
    std::memcpy(tx.data(), &pl, sizeof pl);
    if (send(fd_.get(), tx.data(), tx.size(), 0) < 0) return errnoError("send probe");
    ++sent;
    // Wait for this probe's answer; a late answer to an earlier probe (one
    // that timed out) is skipped.
    const uint64_t deadline = pl.stamp_ns + static_cast<uint64_t>(timeoutMs) * 1'000'000ull;
    for (;;) {
      uint64_t now = nowNs();
      if (now >= deadline) break;
      pollfd p = {fd_.get(), POLLIN, 0};
      int left = static_cast<int>((deadline - now + 999'999) / 1'000'000);
      if (poll(&p, 1, left) <= 0) continue;
      ssize_t n = recv(fd_.get(), rx.data(), rx.size(), MSG_DONTWAIT);
      uint64_t got = nowNs();
      if (n < static_cast<ssize_t>(sizeof(vb_payload))) continue;
      vb_payload back;
      std::memcpy(&back, rx.data(), sizeof back);
      if (back.magic != htonl(VB_MAGIC) || back.seq != pl.seq) continue;
      rttUs->push_back(static_cast<double>(got - back.stamp_ns) / 1e3);
      lastAnswer = got;
      break;
    }
    if (nowNs() >= deadline) lastAnswer = nowNs();
  }
  return sent;
}

// ---- UdpResponder -------------------------------------------------------------

Result<std::unique_ptr<UdpResponder>> UdpResponder::create(const Netns& ns, uint32_t ip, int cpu, int prio,
                                                           bool udpChecksum) {
  auto fd = udpSocket(ns, ip, VB_UDP_ECHO_PORT, udpChecksum);
  if (!fd) return fd.error();
  std::unique_ptr<UdpResponder> r(new UdpResponder(std::move(fd.value())));
  r->thread_ = std::thread([p = r.get(), cpu, prio] { p->threadMain(cpu, prio); });
  for (int i = 0; i < 1000 && r->tid() == 0; ++i) usleep(1000);
  return r;
}

UdpResponder::~UdpResponder() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void UdpResponder::threadMain(int cpu, int prio) {
  blockStopSignals();
  tid_.store(gettid(), std::memory_order_relaxed);
  Status s = pinTask(0, cpu);
  if (s.ok() && prio) s = setRealtime(0, prio);
  if (!s.ok()) logWarn("latency responder: %s", s.error().message().c_str());
  std::vector<uint8_t> buf(65536);
  // stop_ (relaxed) only ends the loop; the join orders the rest.
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd p = {fd_.get(), POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    sockaddr_in from = {};
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n <= 0) continue;
    if (sendto(fd_.get(), buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), fl) == n)
      answered_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace vdev::bench
