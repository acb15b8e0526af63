// generator.h - the BPF_PROG_RUN live-frames traffic generator.
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

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bpf_objs.h"
#include "result.h"
#include "sys.h"

namespace vdev::bench {

struct GeneratorConfig {
  std::vector<uint8_t> frame;   // the prepared frame (no FCS)
  int threads = 2;              // overlapping BPF_PROG_RUN callers
  int cpu = 0;                  // every generator thread runs here
  uint32_t repeatPerCall = 2'000'000;
  uint32_t batchSize = 64;      // frames per kernel batch (1..256; 0 = kernel default 64)
  GenProgConfig prog;
  // Pacing (later issue). 0 = as fast as the kernel goes. A paced generator
  // will keep both threads and split the rate into time slices: each call
  // gets repeat = rate * slice / threads and a thread sleeps until its next
  // slice; the per-call page pool setup then has to fit inside the slice,
  // which is why the threads stay overlapping rather than taking turns.
  uint64_t ratePps = 0;
};

class Generator {
 public:
  // Loads vb_gen and attaches vb_pass to ifname inside ns (see gen.bpf.c).
  static Result<std::unique_ptr<Generator>> create(const Netns& ns, const std::string& ifname,
                                                   GeneratorConfig cfg);
  ~Generator();  // stops the threads

  Status start();
  // Returns once every thread is out of the kernel and joined. Threads are
  // interrupted mid-call (SIGUSR2 makes the call return EINTR).
  void stop();
  bool running() const { return !threads_.empty(); }

  // Frames the program has emitted (XDP_TX), since load.
  Result<Counters> counters() const { return readCounters(countersFd_); }
  // utime+stime of the generator threads so far (this process's threads).
  double cpuSeconds() const;
  // First error a thread hit (the run is invalid then), or ok.
  Status error() const;
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }

 private:
  Generator(const Netns& ns, GeneratorConfig cfg) : ns_(ns), cfg_(std::move(cfg)) {}
  void threadMain(int index);

  const Netns& ns_;
  GeneratorConfig cfg_;
  GenSkel skel_;
  std::unique_ptr<XdpLink> passLink_;
  int ifindex_ = 0;
  int progFd_ = -1;
  int countersFd_ = -1;

  std::vector<std::thread> threads_;
  std::vector<pid_t> tids_;           // guarded by mu_
  std::vector<pthread_t> handles_;
  std::atomic<bool> stop_{false};
  std::atomic<int> inside_{0};        // threads still looping
  std::atomic<uint64_t> calls_{0};
  mutable std::mutex mu_;
  Status error_;                      // guarded by mu_
  double exitedCpu_ = 0;              // CPU of joined threads, guarded by mu_
};

}  // namespace vdev::bench
