// real_traffic.cpp - see real_traffic.h.
#include "real_traffic.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "latency.h"
#include "testkit/files.h"
#include "testkit/process.h"
#include "testkit/wait.h"
#include "topology.h"

namespace vdev::bench {

namespace {
constexpr double kNoisyFraction = 0.15;  // of one CPU, as in runner.cpp
constexpr int kIperfPort = 5201;         // iperf3's own; every server has a namespace of its own
constexpr uint16_t kUdpPort = 5300;

double tvSeconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec * 1e-6; }

// The pids of this process's children (any thread's), alive or zombie.
std::vector<pid_t> children() {
  std::vector<pid_t> out;
  for (const std::string& t : dirEntries("/proc/self/task").value_or(std::vector<std::string>{})) {
    std::ifstream f("/proc/self/task/" + t + "/children");
    pid_t p;
    while (f >> p) out.push_back(p);
  }
  return out;
}
}  // namespace

// ---- CPU ----------------------------------------------------------------------

double CpuMeter::benchSeconds() const {
  // A child measured alive at begin() and reaped before end() moves from the
  // live sum to RUSAGE_CHILDREN with all it ever used: the difference is
  // what it used in between.
  double s = 0;
  if (auto me = taskCpuSeconds(getpid())) s += me.value();
  struct rusage ru = {};
  if (getrusage(RUSAGE_CHILDREN, &ru) == 0) s += tvSeconds(ru.ru_utime) + tvSeconds(ru.ru_stime);
  for (pid_t c : children())
    if (auto v = taskCpuSeconds(c)) s += v.value();
  for (pid_t t : ksoftirqd_)
    if (auto v = threadCpuSeconds(t)) s += v.value();
  return s;
}

Status CpuMeter::begin() {
  ksoftirqd_ = findTasksByComm("ksoftirqd/");
  auto b = readCpuBusy();
  if (!b) return b.error();
  busy0_ = b.value();
  bench0_ = benchSeconds();
  t0_ = monotonicSeconds();
  return {};
}

Result<CpuWindow> CpuMeter::end(const std::string& what) {
  auto b = readCpuBusy();
  if (!b) return b.error();
  CpuWindow w;
  w.seconds = monotonicSeconds() - t0_;
  w.machine = b->all - busy0_.all;
  w.steal = b->steal - busy0_.steal;
  w.bench = benchSeconds() - bench0_;
  const double steal = w.seconds > 0 ? w.steal / w.seconds : 0;
  w.noisy = w.otherLoad() > kNoisyFraction || steal > kNoisyFraction;
  if (w.otherLoad() > kNoisyFraction)
    logWarn("%s: %.0f%% of a CPU went to other tasks during the measurement; is the machine idle?", what.c_str(),
            100.0 * w.otherLoad());
  if (steal > kNoisyFraction)
    logWarn("%s: the hypervisor took %.0f%% of a CPU (steal time)", what.c_str(), 100.0 * steal);
  return w;
}

// ---- TCP: iperf3 ---------------------------------------------------------------

Status warmUp(const Station& from, const Station& to) {
  return runCommand({"ip", "netns", "exec", from.ns->name(), "ping", "-q", "-c", "2", "-i", "0.2", "-W", "2",
                     formatIp(to.ip)});
}

Result<TcpResult> runTcp(const Station& from, const Station& to, double duration, const std::string& what,
                         const std::string& workDir) {
  const std::string port = std::to_string(kIperfPort);
  const std::string serverLog = workDir + "/iperf3-server.log", clientOut = workDir + "/iperf3-client.json";
  // The files go on every way out, an interrupted run's too (after the
  // children, declared below, have been stopped).
  struct RemoveFiles {
    std::vector<std::string> paths;
    ~RemoveFiles() {
      for (const auto& p : paths) unlink(p.c_str());
    }
  } removeFiles{{serverLog, clientOut, clientOut + ".err"}};
  // The QEMU guest runs iperf3 -s itself and no client of ours: with it at
  // either end the container is the client, with -R when the guest sends.
  const bool reverse = from.inQemu;
  const Station& client = reverse ? to : from;
  const Station& serverAt = reverse ? from : to;
  std::optional<testkit::Child> server;
  if (!serverAt.inQemu) {
    // --forceflush: the line is in its file as soon as it is printed.
    auto started = testkit::Child::start({.argv = {"ip", "netns", "exec", to.ns->name(), "iperf3", "-s", "-1", "-p",
                                                   port, "--forceflush"},
                                          .term_with_parent = true},
                                         {.stdout_path = serverLog});
    if (!started) return started.error();
    server.emplace(std::move(*started));
    const std::string serverName = "iperf3 -s (" + to.name + ")";
    if (Status ready =
            server->waitForLine("Server listening", std::chrono::seconds(10), [] { return stopRequested(); });
        !ready.ok()) {
      if (ready.error().err == EINTR) return Error{EINTR, "waiting for " + serverName};
      if (ready.error().err == ECHILD)
        return Error{0, serverName + " exited before it was ready (" + childExitText(server->status().value_or(-1)) +
                            ")" + childOutputTail(serverLog, serverName)};
      return Error{0, serverName + " did not print 'Server listening' within 10 s" +
                          childOutputTail(serverLog, serverName)};
    }
  }

  char secs[32];
  snprintf(secs, sizeof secs, "%g", duration);
  CpuMeter meter;
  VB_TRY(meter.begin());
  // Its JSON report to one file, what it says on stderr to another.
  std::vector<std::string> clientArgv = {"ip",   "netns", "exec", client.ns->name(), "iperf3", "-c",
                                         formatIp(serverAt.ip), "-p", port, "-t", secs, "-J", "--connect-timeout",
                                         "5000"};
  if (reverse) clientArgv.emplace_back("-R");
  auto clientProc = testkit::Child::start({.argv = std::move(clientArgv), .term_with_parent = true},
                                          {.stdout_path = clientOut, .stderr_path = clientOut + ".err"});
  if (!clientProc) return clientProc.error();
  const auto timeout =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(duration + 30));
  const bool ended =
      testkit::waitUntil([&] { return stopRequested() || !clientProc->running(); }, timeout,
                         std::chrono::milliseconds(20));
  std::optional<int> st = ended ? clientProc->status() : std::nullopt;
  auto cpu = meter.end(what);
  const std::string clientName = std::string("iperf3 -c") + (reverse ? " -R" : "") + " (" + client.name + ")";
  if (!st) {
    if (stopRequested()) return Error{EINTR, "waiting for " + clientName};
    return Error{ETIMEDOUT, clientName + " still running " + std::string(secs) + " + 30 s after its start"};
  }
  if (!cpu) return cpu.error();
  if (server) (void)server->wait(std::chrono::seconds(5));  // -1: it exits after the one test

  auto text = testkit::readFile(clientOut);
  const std::string out = text ? *text : "";
  const std::string err = childOutputTail(clientOut + ".err", clientName);
  nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{EIO, "iperf3 -c printed no JSON: " + out.substr(0, 400) + err};
  if (j.contains("error")) return Error{EIO, "iperf3: " + j["error"].dump()};
  if (*st != 0) return Error{EIO, "iperf3 -c " + childExitText(*st) + err};
  TcpResult r;
  try {
    const auto& rcv = j.at("end").at("sum_received");
    r.bytes = rcv.at("bytes").get<uint64_t>();
    r.seconds = rcv.at("seconds").get<double>();
    r.gbps = rcv.at("bits_per_second").get<double>() / 1e9;
    const auto& sent = j.at("end").at("sum_sent");
    if (sent.contains("retransmits")) r.retransmits = sent.at("retransmits").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    return Error{EIO, std::string("iperf3 -c: unexpected JSON: ") + e.what()};
  }
  r.cpu = cpu.value();
  return r;
}

// ---- UDP: a sendmmsg() flood ---------------------------------------------------

namespace {

// The flood's receiver: a buffer large enough that a burst the reader is
// late for waits there rather than being lost (what is still lost shows in
// RcvbufErrors), and a timeout so that the reader sees its stop flag.
Result<FileDesc> floodReceiver(const Station& to, uint16_t port) {
  auto fd = udpSocket(*to.ns, to.ip, port, true);
  if (!fd) return fd;
  int size = 32 << 20;
  if (setsockopt(fd->get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
    setsockopt(fd->get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  timeval tv = {0, 20'000};
  if (setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) return errnoError("SO_RCVTIMEO");
  return fd;
}

// The flood's sender, connected to the receiver (with UDP checksums, which
// the veth offloads, as applications send).
Result<FileDesc> floodSender(const Station& from, const Station& to, uint16_t port) {
  auto fd = udpSocket(*from.ns, from.ip, 0, true);
  if (!fd) return fd;
  const sockaddr_in dst = sockAddr(to.ip, port);
  if (connect(fd->get(), reinterpret_cast<const sockaddr*>(&dst), sizeof dst) < 0)
    return errnoError("connect UDP to " + formatIp(to.ip));
  return fd;
}

// Udp RcvbufErrors of ns (/proc/net/snmp as the namespace sees it: through
// thread-self, since /proc/self/net is the main thread's namespace).
Result<uint64_t> udpRcvbufErrors(const Netns& ns) {
  return testkit::inNetns(&ns, [&]() -> Result<uint64_t> {
    std::ifstream f("/proc/thread-self/net/snmp");
    if (!f) return errnoError("open /proc/thread-self/net/snmp");
    std::string line, names;
    while (std::getline(f, line)) {
      if (line.rfind("Udp: ", 0) != 0) continue;
      if (names.empty()) {
        names = line;
        continue;
      }
      std::istringstream n(names), v(line);
      std::string name, value;
      while (n >> name && v >> value)
        if (name == "RcvbufErrors") return std::stoull(value);
    }
    return makeError(ENOENT, "Udp RcvbufErrors in /proc/net/snmp");
  });
}

}  // namespace

Result<UdpResult> runUdpFlood(const Station& from, const Station& to, double duration, const std::string& what,
                              size_t payloadLen) {
  if (payloadLen < 1 || payloadLen > kUdpFloodMaxPayload)
    return makeError(EINVAL, "UDP flood payload " + std::to_string(payloadLen) + " bytes");
  auto rx = floodReceiver(to, kUdpPort);
  if (!rx) return rx.error();
  auto tx = floodSender(from, to, kUdpPort);
  if (!tx) return tx.error();
  auto drops0 = udpRcvbufErrors(*to.ns);
  if (!drops0) return drops0.error();

  std::atomic<uint64_t> received{0};
  std::atomic<bool> done{false};
  // Only the receiver writes `received`; main reads it to see it settle.
  std::thread reader([&, fd = rx->get()] {
    char bufs[kUdpFloodBatch][kUdpFloodMaxPayload];
    iovec iov[kUdpFloodBatch];
    mmsghdr msgs[kUdpFloodBatch] = {};
    for (unsigned i = 0; i < kUdpFloodBatch; ++i) {
      iov[i] = {bufs[i], sizeof bufs[i]};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // done pairs with the store after the sender stopped and the count
    // settled; relaxed is enough for a flag that carries no data.
    while (!done.load(std::memory_order_relaxed)) {
      int n = recvmmsg(fd, msgs, kUdpFloodBatch, MSG_WAITFORONE, nullptr);
      if (n > 0) received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    }
  });

  CpuMeter meter;
  Status st = meter.begin();
  uint64_t sent = 0;
  int sendErr = 0;
  const double t0 = monotonicSeconds();
  double t1 = t0;
  if (st.ok()) {
    std::thread sender([&, fd = tx->get()] {
      char payload[kUdpFloodMaxPayload] = "vdev-bench --real";
      iovec iov = {payload, payloadLen};
      mmsghdr msgs[kUdpFloodBatch] = {};
      for (auto& m : msgs) {
        m.msg_hdr.msg_iov = &iov;
        m.msg_hdr.msg_iovlen = 1;
      }
      const double deadline = t0 + duration;
      while (!stopRequested()) {
        int n = sendmmsg(fd, msgs, kUdpFloodBatch, 0);
        if (n > 0) {
          sent += static_cast<uint64_t>(n);
        } else if (n < 0 && errno != EINTR && errno != ENOBUFS && errno != EAGAIN) {
          sendErr = errno;
          break;
        }
        if (monotonicSeconds() >= deadline) break;
      }
      t1 = monotonicSeconds();
    });
    sender.join();
    // The receiver catches up: done once its count has not moved for 200 ms
    // (at most 5 s).
    uint64_t last = received.load(std::memory_order_relaxed);
    double still = monotonicSeconds();
    for (const double end = still + 5; monotonicSeconds() < end && monotonicSeconds() - still < 0.2;) {
      usleep(20'000);
      uint64_t now = received.load(std::memory_order_relaxed);
      if (now != last) {
        last = now;
        still = monotonicSeconds();
      }
    }
  }
  done.store(true, std::memory_order_relaxed);
  reader.join();
  if (!st.ok()) return st.error();
  auto cpu = meter.end(what);
  if (!cpu) return cpu.error();
  if (stopRequested()) return makeError(EINTR, "UDP flood");
  if (sendErr) return makeError(sendErr, "sendmmsg");
  auto drops1 = udpRcvbufErrors(*to.ns);
  if (!drops1) return drops1.error();

  UdpResult r;
  r.sent = sent;
  r.received = received.load(std::memory_order_relaxed);
  r.rcvbufErrors = drops1.value() - drops0.value();
  r.seconds = t1 - t0;
  r.cpu = cpu.value();
  return r;
}

// ---- round trips ----------------------------------------------------------------

Result<RttResult> runRtt(const Station& from, const Station& to, double duration, const std::string& what) {
  // Both threads on one CPU: each wakes the other there. Across CPUs every
  // probe waits for an idle CPU to wake up (IPIs, 40-90 us on a VM), twice
  // per round trip, which buries the datapaths' differences.
  auto responder = UdpResponder::create(*to.ns, to.ip, 0, 0, /*udpChecksum=*/true);
  if (!responder) return responder.error();
  auto pinger = Pinger::create(*from.ns, from.ip, to.ip, kRttFrameSize, /*udpChecksum=*/true);
  if (!pinger) return pinger.error();
  ProbePlan plan;
  plan.count = std::max(100, static_cast<int>(duration / kRttIntervalS));
  plan.intervalS = kRttIntervalS;
  plan.timeoutS = 0.2;
  plan.cpu = 0;
  std::vector<double> rtt;
  rtt.reserve(static_cast<size_t>(plan.count));
  CpuMeter meter;
  VB_TRY(meter.begin());
  auto sent = (*pinger)->run(plan, &rtt);
  auto cpu = meter.end(what);
  if (!sent) return sent.error();
  if (!cpu) return cpu.error();
  if (rtt.empty()) return makeError(0, "no probe was answered (" + std::to_string(*sent) + " sent)");
  RttResult r;
  r.stats = summarizeLatency(rtt, *sent);
  r.us = std::move(rtt);
  r.cpu = cpu.value();
  return r;
}

}  // namespace vdev::bench
