// sink.h - receivers that count exactly what the device under test delivered.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mac.h"
#include "bpf_objs.h"
#include "ethtool_stats.h"
#include "result.h"
#include "sys.h"
#include "testkit/links.h"

namespace vdev::bench {

// What the sink must provide for one run.
struct SinkRun {
  int cpu = 0;                // the sink CPU (shared with the generator)
  int prio = 0;               // SCHED_FIFO priority of the sink's own task, 0 = normal
  // The datapath transmits xdp_frames into the egress veth (ndo_xdp_xmit, a
  // devmap redirect): the sink veth must have NAPI to take them.
  bool xdpFrames = false;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Frames received so far: pkts/bytes are vdev-bench frames (VB_MAGIC),
  // other* everything else.
  virtual Result<Counters> counters() const = 0;
  // Sends n frames from the sink's MAC (to dst) into the device under test,
  // so that a learning switch knows which port the sink is on.
  virtual Status sendLearningFrames(const std::vector<uint8_t>& frame, int n) = 0;
  // CPU seconds spent receiving, where it can be told apart (a reader thread,
  // a threaded-NAPI kthread); 0 when it runs in softirq on whichever CPU.
  virtual double cpuSeconds() const = 0;
  // Called before each run's datapath starts: set the receive path up for
  // it, and move the receive work to run.cpu at SCHED_FIFO priority run.prio
  // where it has a task of its own. With priority the sink runs whenever it
  // has frames and the generator gets what is left, so the sink is never the
  // bottleneck and drops nothing while the generator still offers as much as
  // that CPU allows.
  virtual Status prepare(const SinkRun& run) = 0;
  virtual std::string describe() const = 0;
  // How frames reach the sink in the current run (after prepare()).
  virtual std::string receivePath() const = 0;
  // The sink's receive work runs in polls of the per-CPU backlog (netif_rx)
  // in the current run, rather than in the sink veth's own NAPI.
  virtual bool receivesViaBacklog() const { return false; }
  // The kernel's own count of frames that reached the sink, to check
  // counters() (all frames, ours and others) against; nullopt when there is
  // no such count (a tap). kernelCounter() names it.
  virtual std::optional<uint64_t> kernelCount() const { return std::nullopt; }
  virtual std::string kernelCounter() const { return ""; }
  // The sink's own tasks (threaded-NAPI kthreads, the tap reader) in the
  // current run, for the softirq accounting.
  virtual std::vector<pid_t> taskIds() const { return {}; }
};

// The sink on the veth inside the sink namespace (see bpf/sink.bpf.c):
// vb_sink_tc on the veth's clsact ingress, TC_ACT_SHOT. GRO stays off, as on
// any new veth (and a container's): without NAPI the veth hands skbs to
// netif_rx(), i.e. the per-CPU backlog of the CPU that transmitted. For a
// datapath that transmits xdp_frames (xdp-redirect) GRO is turned on for
// that run: since Linux 5.13 a veth with GRO has NAPI without an XDP
// program, which is what ndo_xdp_xmit needs; it then builds an skb per
// frame. Kernel count: the veth's rx_packets (IFLA_STATS64), which counts
// every skb queued to the backlog and every frame its NAPI polled.
class VethSink : public Sink {
 public:
  static Result<std::unique_ptr<VethSink>> create(const Netns& ns, const std::string& ifname);
  Result<Counters> counters() const override { return readCounters(countersFd_); }
  Status sendLearningFrames(const std::vector<uint8_t>& frame, int n) override;
  double cpuSeconds() const override { return 0; }  // its receive work runs in softirq
  Status prepare(const SinkRun& run) override;
  std::string describe() const override;
  std::string receivePath() const override;
  bool receivesViaBacklog() const override { return !gro_; }
  std::optional<uint64_t> kernelCount() const override;
  std::string kernelCounter() const override;

 private:
  VethSink(const Netns& ns, std::string ifname) : ns_(ns), ifname_(std::move(ifname)) {}
  const Netns& ns_;
  std::string ifname_;
  SinkSkel skel_;
  std::unique_ptr<TcIngress> tc_;
  bool gro_ = false;  // GRO (hence NAPI) on the sink veth now
  int countersFd_ = -1;
  std::optional<LinkStats> linkStats_;
};

// A tap reader standing in for a VM: it owns the tap (testkit::Tap, opened
// with IFF_TAP | IFF_NO_PI in the device-under-test namespace the way QEMU
// opens one, and up), reads every frame on its own thread and counts it. Latency probes
// (UDP to VB_UDP_ECHO_PORT) addressed to the VM's MAC are sent back at once
// from the reader thread, addresses and ports swapped (one write()), as a
// guest's echo responder would. The tap exists as long as this object:
// closing the last fd of a non-persistent tap removes it.
class TapSink : public Sink {
 public:
  // mac: the VM's own MAC (probes to it are reflected).
  static Result<std::unique_ptr<TapSink>> create(const Netns& ns, const std::string& ifname, const Mac& mac);
  ~TapSink() override;
  Result<Counters> counters() const override;
  Status sendLearningFrames(const std::vector<uint8_t>& frame, int n) override;
  double cpuSeconds() const override;
  Status prepare(const SinkRun& run) override;
  std::string describe() const override { return "read() loop on tap " + ifname_; }
  std::string receivePath() const override { return "tap, read() per frame"; }
  // The tap's fd, for a FrameWriter (the VM transmitting).
  int fd() const { return tap_.fd(); }
  const std::string& ifname() const { return ifname_; }
  Mac mac() const { return mac_; }
  pid_t readerTid() const { return tid_.load(std::memory_order_relaxed); }
  std::vector<pid_t> taskIds() const override {
    pid_t t = readerTid();
    return t ? std::vector<pid_t>{t} : std::vector<pid_t>{};
  }

 private:
  TapSink(std::string ifname, testkit::Tap tap, const Mac& mac)
      : ifname_(std::move(ifname)), tap_(std::move(tap)), mac_(mac) {}
  void readerMain();

  std::string ifname_;
  testkit::Tap tap_;
  Mac mac_;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> tid_{0};
  // Written by the reader thread only (relaxed stores), read by the sampler;
  // each is a monotonic counter, no ordering with other data is needed.
  std::atomic<uint64_t> pkts_{0}, bytes_{0}, otherPkts_{0}, otherBytes_{0};
};

// True when buf is a vdev-bench frame (same test as bpf/sink.bpf.c).
bool isBenchFrame(const uint8_t* buf, size_t len);
// True when buf is a latency probe: IPv4/UDP to VB_UDP_ECHO_PORT with VB_MAGIC.
bool isProbeFrame(const uint8_t* buf, size_t len);
// Turns a probe into its answer in place: Ethernet and IPv4 addresses and
// UDP ports swapped (both checksums stay valid: they cover sums).
void reflectProbe(uint8_t* buf, size_t len);

}  // namespace vdev::bench
