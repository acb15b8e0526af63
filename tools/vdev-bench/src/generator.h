// generator.h - traffic sources: the BPF_PROG_RUN live-frames generator
// (into a veth) and the tap writer (a VM transmitting through its tap).
//
// Each generator thread enters the generator namespace, pins itself to the
// generator CPU and calls bpf_prog_test_run_opts() on vb_gen in a loop with
// BPF_F_TEST_XDP_LIVE_FRAMES, ctx ingress_ifindex = the generator veth and a
// large repeat count. The kernel spends ~25 ms per call creating and
// destroying the call's page pool, during which a single thread offers
// nothing; with two threads the calls overlap and the offered load is
// continuous (vdev-bench checks that by sampling the count every 10 ms).
#pragma once

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "bpf_objs.h"
#include "pacing.h"
#include "result.h"
#include "sys.h"
#include "testkit/links.h"

namespace vdev::bench {

struct GeneratorConfig {
  std::vector<uint8_t> frame;   // the prepared frame (no FCS)
  int threads = 2;              // overlapping BPF_PROG_RUN callers
  int cpu = 0;                  // every generator thread runs here
  uint32_t repeatPerCall = 2'000'000;
  uint32_t batchSize = 64;      // frames per kernel batch (1..256; 0 = kernel default 64)
  uint32_t pacedBatchSize = 16;  // the same while paced: the burst size at the paced rate
  GenProgConfig prog;
  // Where the kernel refuses live frames: XDP frames the relay makes of
  // each frame written into its packet socket while unpaced
  // (1..kGenRelayMaxCopies); paced, pacedBatchSize (the burst).
  uint32_t relayCopies = 64;
  // Offered rate in frames/s, 0 = as fast as the kernel goes; setRate()
  // changes it between runs. Paced, the program spins until each frame's
  // slot (gen.bpf.c); both threads stay and share the slot clock, so the
  // ~25 ms page-pool setup of one call stays hidden behind the other's.
  uint64_t ratePps = 0;
};

// The threads of a traffic source, as Runner sees them: their ids while
// they run, the CPU of those that ended, and the first error any hit.
// Thread-safe: the threads report, Runner reads.
class SourceThreads {
 public:
  void reset(int threads);                  // before the threads start
  void started(int index, pid_t tid);
  void failed(Status s);                    // the first failure is kept
  void exited(int index);                   // adds the thread's CPU; call from the thread
  double cpuSeconds() const;                // ended threads + running ones so far
  Status error() const;
  std::vector<pid_t> ids() const;           // running threads

 private:
  mutable std::mutex mu_;
  std::vector<pid_t> tids_;  // by index, 0 when not running
  double exitedCpu_ = 0;
  Status error_;
};

// What Runner needs of a source of offered load.
class TrafficSource {
 public:
  virtual ~TrafficSource() = default;
  virtual Status start() = 0;
  // Returns once no frame is being sent any more.
  virtual void stop() = 0;
  virtual bool running() const = 0;
  // Frames offered (pkts/bytes) since creation.
  virtual Result<Counters> counters() const = 0;
  // CPU seconds of the source's threads so far.
  virtual double cpuSeconds() const = 0;
  // First error a thread hit (the run is invalid then), or ok.
  virtual Status error() const = 0;
  // Frames per second from the next start() on; 0 = unpaced. Takes effect
  // at once when running.
  virtual void setRate(uint64_t pps) = 0;
  virtual uint64_t rate() const = 0;
  // The source's thread ids while running (for the softirq accounting).
  virtual std::vector<pid_t> threadIds() const = 0;
  virtual std::string describe() const = 0;
  // A device of the source's own whose NAPI polls are the source's work
  // (the generator's relay), or "".
  virtual std::string ownDevice() const { return {}; }
};

class FrameWriter;

class Generator : public TrafficSource {
 public:
  // Loads vb_gen and attaches vb_pass to ifname inside ns (see gen.bpf.c).
  // Where the kernel refuses live-frames test runs (EPERM), it relays
  // instead: a veth pair of its own in ns (<ifname>w, <ifname>r), a packet
  // socket on <ifname>w that FrameWriter writes the frame into, and
  // vb_relay on <ifname>r, which clones each frame into cfg.relayCopies XDP
  // frames out of ifname (veth_xdp_xmit into the port under test, in bulk,
  // as live frames go); says so in describe() and on stderr.
  static Result<std::unique_ptr<Generator>> create(const Netns& ns, const std::string& ifname,
                                                   GeneratorConfig cfg);
  ~Generator() override;  // stops the threads

  Status start() override;
  // Returns once every thread is out of the kernel and joined. Threads are
  // interrupted mid-call (SIGUSR2 makes the call return EINTR).
  void stop() override;
  bool running() const override;

  // Frames the program has emitted (XDP_TX), since load (or written).
  Result<Counters> counters() const override;
  // Run time of the generator threads so far (schedstat; this process's threads).
  double cpuSeconds() const override;
  Status error() const override;
  // Paced: sets the program's period (its .bss, read per frame) and, from
  // the next start() on, the batch size and the repeat count per call.
  void setRate(uint64_t pps) override;
  uint64_t rate() const override { return cfg_.ratePps; }
  std::vector<pid_t> threadIds() const override;
  std::string describe() const override;
  std::string ownDevice() const override { return relayPair_ ? relayPair_->hostName() : std::string(); }
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }

 private:
  Generator(const Netns& ns, GeneratorConfig cfg) : ns_(ns), cfg_(std::move(cfg)) {}
  void threadMain(int index, uint32_t repeat, uint32_t batch);
  Status setUpRelay(const std::string& ifname);
  // The relay's burst at ratePps: relayCopies unpaced, pacedBatchSize
  // while paced, never more than a second's worth of the rate.
  uint32_t relayCopies(uint64_t ratePps) const {
    uint64_t n = ratePps ? std::min<uint64_t>(cfg_.pacedBatchSize, ratePps) : cfg_.relayCopies;
    return static_cast<uint32_t>(std::clamp<uint64_t>(n, 1, kGenRelayMaxCopies));
  }

  const Netns& ns_;
  GeneratorConfig cfg_;
  GenSkel skel_;
  std::unique_ptr<XdpLink> passLink_;
  int ifindex_ = 0;
  int progFd_ = -1;
  int countersFd_ = -1;

  std::vector<std::thread> threads_;
  std::vector<pthread_t> handles_;
  std::atomic<bool> stop_{false};
  std::atomic<int> inside_{0};        // threads still looping
  std::atomic<uint64_t> calls_{0};
  SourceThreads book_;
  // Live frames refused: the relay (setUpRelay), and what writes into it.
  std::optional<testkit::VethPair> relayPair_;
  std::unique_ptr<XdpLink> relayLink_;
  std::string relayTo_;      // the generator veth the copies leave through
  uint32_t relayNow_ = 0;    // relay_out's entries
  Status relayError_;        // genSetRelay failed in setRate()
  std::unique_ptr<FrameWriter> writer_;
};

// One write() per frame on an fd, from `threads` threads pinned to `cpu`,
// paced by spinning on the clock between writes (same slot rules as the BPF
// generator, one slot clock for all threads). Two uses:
//  - a VM transmitting through its tap, the way QEMU without vhost does
//    (the TapSink's fd): the frame enters the host through the tap's
//    receive path (tun_get_user), where an XDP program on the tap
//    (vdevd's, the redirect) runs, and without one the stack, and so the
//    bridge, runs inside the write() too;
//  - the generator's relay, where the kernel refuses BPF_PROG_RUN live
//    frames (EPERM: some kernels do): a packet socket on a veth whose far
//    end's XDP program clones each frame into XDP frames for the port under
//    test (Generator::setUpRelay).
class FrameWriter : public TrafficSource {
 public:
  // fd: not owned (the tap's); what: what it writes into, for describe().
  FrameWriter(int fd, std::string what, std::vector<uint8_t> frame, int threads, int cpu)
      : fd_(fd), what_(std::move(what)), frame_(std::move(frame)), nthreads_(threads), cpu_(cpu) {}
  // The same with an fd it owns (the packet socket).
  FrameWriter(FileDesc owned, std::string what, std::vector<uint8_t> frame, int threads, int cpu)
      : FrameWriter(owned.get(), std::move(what), std::move(frame), threads, cpu) {
    owned_ = std::move(owned);
  }
  ~FrameWriter() override { stop(); }
  Status start() override;
  void stop() override;
  bool running() const override { return !threads_.empty(); }
  Result<Counters> counters() const override;
  double cpuSeconds() const override { return book_.cpuSeconds(); }
  Status error() const override { return book_.error(); }
  void setRate(uint64_t pps) override { rate_.store(pps, std::memory_order_relaxed); }
  uint64_t rate() const override { return rate_.load(std::memory_order_relaxed); }
  // Frames each write() becomes (the relay's burst; 1 otherwise): the
  // catch-up after a stall is bounded in frames, as vb_gen's.
  void setFramesPerWrite(uint32_t n) { framesPerWrite_.store(n ? n : 1, std::memory_order_relaxed); }
  std::vector<pid_t> threadIds() const override { return book_.ids(); }
  std::string describe() const override;

 private:
  void threadMain(int index);
  int fd_;
  FileDesc owned_;  // fd_'s owner, when this writer owns it
  std::string what_;
  std::vector<uint8_t> frame_;
  int nthreads_, cpu_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rate_{0};
  std::atomic<uint32_t> framesPerWrite_{1};
  // Slot clock shared by the writer threads (ns, CLOCK_MONOTONIC): a thread
  // claims the next slot with a CAS, so the threads pace as one.
  std::atomic<uint64_t> nextSlot_{0};
  // Written by the writers (relaxed increments), read by the sampler;
  // monotonic counters, no ordering with other data.
  std::atomic<uint64_t> pkts_{0}, bytes_{0}, writeErrors_{0};
  SourceThreads book_;
};

}  // namespace vdev::bench
