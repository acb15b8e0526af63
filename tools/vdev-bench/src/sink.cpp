// sink.cpp - see sink.h.
#include "sink.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <cstring>
#include <utility>

#include "../bpf/bench_shared.h"

namespace vdev::bench {

namespace {
// An IPv4/UDP frame to dport whose payload starts with VB_MAGIC.
bool isOurUdp(const uint8_t* buf, size_t len, uint16_t dport) {
  if (len < ETH_HLEN + sizeof(iphdr) + sizeof(udphdr) + sizeof(vb_payload)) return false;
  auto* eth = reinterpret_cast<const ethhdr*>(buf);
  auto* ip = reinterpret_cast<const iphdr*>(buf + ETH_HLEN);
  auto* udp = reinterpret_cast<const udphdr*>(buf + ETH_HLEN + sizeof(iphdr));
  auto* pl = reinterpret_cast<const vb_payload*>(udp + 1);
  return eth->h_proto == htons(ETH_P_IP) && ip->ihl == 5 && ip->protocol == IPPROTO_UDP &&
         udp->dest == htons(dport) && pl->magic == htonl(VB_MAGIC);
}
}  // namespace

bool isBenchFrame(const uint8_t* buf, size_t len) { return isOurUdp(buf, len, VB_UDP_DPORT); }
bool isProbeFrame(const uint8_t* buf, size_t len) { return isOurUdp(buf, len, VB_UDP_ECHO_PORT); }

void reflectProbe(uint8_t* buf, size_t len) {
  if (len < ETH_HLEN + sizeof(iphdr) + sizeof(udphdr)) return;
  auto* eth = reinterpret_cast<ethhdr*>(buf);
  auto* ip = reinterpret_cast<iphdr*>(buf + ETH_HLEN);
  auto* udp = reinterpret_cast<udphdr*>(buf + ETH_HLEN + sizeof(iphdr));
  uint8_t mac[ETH_ALEN];
  std::memcpy(mac, eth->h_dest, ETH_ALEN);
  std::memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
  std::memcpy(eth->h_source, mac, ETH_ALEN);
  std::swap(ip->saddr, ip->daddr);
  std::swap(udp->source, udp->dest);
}

// ---- VethSink ---------------------------------------------------------------

Result<std::unique_ptr<VethSink>> VethSink::create(const Netns& ns, const std::string& ifname) {
  std::unique_ptr<VethSink> s(new VethSink(ns, ifname));
  auto skel = loadSink();
  if (!skel) return skel.error();
  s->skel_ = std::move(skel.value());
  s->countersFd_ = sinkCountersFd(s->skel_.get());
  // A veth starts with GRO off (veth turns it off at creation); make
  // sure, so that skbs take the per-CPU backlog as at a container's veth.
  VB_TRY(setOffloads(ns, ifname, {.gro = false}));
  s->gro_ = false;
  auto tc = TcIngress::attach(ns, ifname, sinkTcProgram(s->skel_.get()));
  if (!tc) return tc.error();
  s->tc_ = std::move(tc.value());
  auto ls = LinkStats::open(ns, ifname);
  if (ls) s->linkStats_.emplace(std::move(ls.value()));
  else logWarn("no link statistics for %s: %s", ifname.c_str(), ls.error().message().c_str());
  return s;
}

std::string VethSink::describe() const {
  return "tc ingress (clsact) TC_ACT_SHOT counter on " + ifname_;
}

std::string VethSink::receivePath() const {
  return gro_ ? "tc: skb from the sink veth's NAPI (GRO on)" : "tc: skb via netif_rx backlog (GRO off)";
}

std::optional<uint64_t> VethSink::kernelCount() const {
  if (!linkStats_) return std::nullopt;
  auto l = linkStats_->read();
  if (!l) return std::nullopt;
  return l->rxPackets;
}

std::string VethSink::kernelCounter() const {
  return "rx_packets";
}

Status VethSink::sendLearningFrames(const std::vector<uint8_t>& frame, int n) {
  // Bound with protocol 0: it sends and never receives.
  auto sock = testkit::openPacketSocket(ifname_, &ns_, /*receive=*/false);
  if (!sock) return sock.error();
  for (int i = 0; i < n; ++i) {
    if (send(sock->get(), frame.data(), frame.size(), 0) < 0)
      return errnoError("send learning frame on " + ifname_);
  }
  return {};
}

Status VethSink::prepare(const SinkRun& run) {
  // NAPI only where the datapath needs it: ndo_xdp_xmit into a veth without
  // NAPI fails.
  if (run.xdpFrames != gro_) {
    VB_TRY(setOffloads(ns_, ifname_, {.gro = run.xdpFrames}));
    gro_ = run.xdpFrames;
    logInfo("GRO %s on %s", gro_ ? "on" : "off", ifname_.c_str());
  }
  return {};
}

// ---- TapSink ------------------------------------------------------------------

Result<std::unique_ptr<TapSink>> TapSink::create(const Netns& ns, const std::string& ifname, const Mac& mac) {
  auto tap = testkit::Tap::open({.name = ifname, .ns = &ns});
  if (!tap) return tap.error();
  std::unique_ptr<TapSink> s(new TapSink(ifname, std::move(*tap), mac));
  s->reader_ = std::thread([p = s.get()] { p->readerMain(); });
  return s;
}

TapSink::~TapSink() {
  stop_.store(true, std::memory_order_relaxed);
  if (reader_.joinable()) reader_.join();
}

void TapSink::readerMain() {
  blockStopSignals();
  tid_.store(gettid(), std::memory_order_relaxed);

  alignas(64) uint8_t buf[65536];
  uint64_t pkts = 0, bytes = 0, other = 0, otherBytes = 0;
  pollfd pfd = {tap_.fd(), POLLIN, 0};
  while (!stop_.load(std::memory_order_relaxed)) {
    // Drain everything that is queued, then publish, then sleep in poll():
    // one read() per frame is what a VM's tap backend (QEMU without vhost)
    // does too.
    for (;;) {
      ssize_t n = read(tap_.fd(), buf, sizeof buf);
      if (n <= 0) break;
      if (isBenchFrame(buf, static_cast<size_t>(n))) {
        ++pkts;
        bytes += static_cast<uint64_t>(n);
      } else {
        ++other;
        otherBytes += static_cast<uint64_t>(n);
        if (isProbeFrame(buf, static_cast<size_t>(n)) && std::memcmp(buf, mac_.data(), ETH_ALEN) == 0) {
          // The guest answers: back out through the tap at once. A probe
          // that was flooded to the VM (addressed to someone else) is not
          // answered, or a learning switch would learn the wrong port.
          reflectProbe(buf, static_cast<size_t>(n));
          // An answer the tap does not take is a probe the prober counts lost.
          [[maybe_unused]] ssize_t w = write(tap_.fd(), buf, static_cast<size_t>(n));
        }
      }
      if ((pkts & 255) == 0) {
        pkts_.store(pkts, std::memory_order_relaxed);
        bytes_.store(bytes, std::memory_order_relaxed);
      }
    }
    pkts_.store(pkts, std::memory_order_relaxed);
    bytes_.store(bytes, std::memory_order_relaxed);
    otherPkts_.store(other, std::memory_order_relaxed);
    otherBytes_.store(otherBytes, std::memory_order_relaxed);
    poll(&pfd, 1, 20);
  }
}

Result<Counters> TapSink::counters() const {
  Counters c;
  c.pkts = pkts_.load(std::memory_order_relaxed);
  c.bytes = bytes_.load(std::memory_order_relaxed);
  c.otherPkts = otherPkts_.load(std::memory_order_relaxed);
  c.otherBytes = otherBytes_.load(std::memory_order_relaxed);
  return c;
}

Status TapSink::sendLearningFrames(const std::vector<uint8_t>& frame, int n) {
  // Writing to the tap fd is the "VM" transmitting: the frame enters the
  // host side through the tap's receive path.
  for (int i = 0; i < n; ++i)
    if (write(tap_.fd(), frame.data(), frame.size()) < 0) return errnoError("write to tap " + ifname_);
  return {};
}

double TapSink::cpuSeconds() const {
  pid_t t = tid_.load(std::memory_order_relaxed);
  if (t == 0) return 0;
  auto c = threadCpuSeconds(t);
  return c ? c.value() : 0;
}

Status TapSink::prepare(const SinkRun& run) {
  pid_t t = 0;
  for (int i = 0; i < 1000 && (t = tid_.load(std::memory_order_relaxed)) == 0; ++i) usleep(1000);
  if (t == 0) return makeError(ESRCH, "tap reader not started");
  VB_TRY(pinTask(t, run.cpu));
  return setRealtime(t, run.prio);
}

}  // namespace vdev::bench
