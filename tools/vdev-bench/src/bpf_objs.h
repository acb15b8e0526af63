// bpf_objs.h - owners for vdev-bench's BPF skeletons and XDP attachments.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../bpf/bench_shared.h"
#include "result.h"
#include "sys.h"

struct vb_gen;
struct vb_sink;
struct vb_fwd;
struct vb_napi_time;
struct bpf_link;
struct bpf_program;

namespace vdev::bench {

// Sum of a vb_counters per-CPU map slot over all CPUs.
struct Counters {
  uint64_t pkts = 0;
  uint64_t bytes = 0;
  uint64_t otherPkts = 0;
  uint64_t otherBytes = 0;
};
Result<Counters> readCounters(int mapFd);

// An XDP program attached to a netdev through a bpf_link. The link is created
// in the netdev's namespace and detaches when destroyed (or when this process
// dies and the fd closes), whichever namespace the destroying thread is in.
class XdpLink {
 public:
  static Result<XdpLink> attach(const Netns& ns, const std::string& ifname, bpf_program* prog);
  XdpLink(XdpLink&& o) noexcept;
  XdpLink& operator=(XdpLink&& o) noexcept;
  XdpLink(const XdpLink&) = delete;
  ~XdpLink();

 private:
  explicit XdpLink(bpf_link* l) : link_(l) {}
  bpf_link* link_;
};

// A BPF_PROG_TYPE_SCHED_CLS program on a netdev's clsact ingress hook,
// attached with libbpf's bpf_tc_hook_create() + bpf_tc_attach() inside ns
// (netlink resolves the ifindex in the calling thread's namespace). The
// destructor detaches it and removes the clsact qdisc if this object created
// it. Unlike a bpf_link it outlives this process; the netdev's namespace,
// deleted at exit, takes it along in any case.
class TcIngress {
 public:
  static Result<std::unique_ptr<TcIngress>> attach(const Netns& ns, const std::string& ifname, bpf_program* prog);
  TcIngress(const TcIngress&) = delete;
  TcIngress& operator=(const TcIngress&) = delete;
  ~TcIngress();

 private:
  TcIngress(const Netns& ns, std::string ifname) : ns_(ns), ifname_(std::move(ifname)) {}
  const Netns& ns_;
  std::string ifname_;
  int ifindex_ = 0;
  bool createdHook_ = false;
  bool attached_ = false;
  uint32_t handle_ = 0, priority_ = 0;
};

struct GenSkelDeleter { void operator()(vb_gen* s) const; };
struct SinkSkelDeleter { void operator()(vb_sink* s) const; };
struct FwdSkelDeleter { void operator()(vb_fwd* s) const; };
using GenSkel = std::unique_ptr<vb_gen, GenSkelDeleter>;
using SinkSkel = std::unique_ptr<vb_sink, SinkSkelDeleter>;
using FwdSkel = std::unique_ptr<vb_fwd, FwdSkelDeleter>;

struct GenProgConfig {
  uint16_t sportBase = 1024;
  uint32_t sportCount = 0;  // > 1: vary the source port per frame
};
Result<GenSkel> loadGenerator(const GenProgConfig& cfg);
bpf_program* genPassProgram(vb_gen* s);  // vb_pass, for the generator veth
int genCountersFd(vb_gen* s);
int genProgramFd(vb_gen* s);
// The relay (gen.bpf.c), where the kernel refuses live frames: vb_relay,
// on the far end of a veth a packet socket writes into, clones every frame
// into `copies` XDP frames out of ifname (the generator veth, in ns), sent
// in bulk, each counted (and its source port varied, GenProgConfig) as it
// leaves. Can change while frames pass: each copy is counted by itself.
constexpr uint32_t kGenRelayMaxCopies = 64;  // VB_RELAY_MAX
bpf_program* genRelayProgram(vb_gen* s);
Status genSetRelay(vb_gen* s, const Netns& ns, const std::string& ifname, uint32_t copies);
// Pacing of vb_gen (gen.bpf.c): a frame every periodNs on average (0:
// unpaced), framesPerSlot of them at once (the BPF_PROG_RUN batch), at most
// maxLagNs of catch-up. Plain stores into the mmap()ed .bss; a frame reads
// each once, so a change applies from the next frame on.
void genSetPace(vb_gen* s, uint64_t periodNs, uint64_t maxLagNs, uint32_t framesPerSlot);

Result<SinkSkel> loadSink();
bpf_program* sinkTcProgram(vb_sink* s);  // vb_sink_tc: tc ingress, counts and TC_ACT_SHOT
int sinkCountersFd(vb_sink* s);

Result<FwdSkel> loadFwd();
bpf_program* fwdPassProgram(vb_fwd* s);
bpf_program* fwdRedirectProgram(vb_fwd* s);     // on the ingress port: tx_port[0]
bpf_program* fwdRedirectRevProgram(vb_fwd* s);  // on the egress port: tx_port[1]
// Points the redirect program's devmap slot (0: forward, 1: back) at ifname
// (resolved inside ns).
Status fwdSetEgress(vb_fwd* s, const Netns& ns, const std::string& ifname, uint32_t slot = 0);

// Times the NAPI polls of the topology's veths that run in NET_RX softirq
// (napi_time.bpf.c), per device and per context (on top of vdevd, of
// vdev-bench, or anything else). Threaded-NAPI polls are not timed here:
// their kthreads' run time is exact.
struct PollTime {
  double seconds = 0;
  uint64_t calls = 0;
  uint64_t frames = 0;
};
// (device name, vb_poll_ctx) -> totals since load.
using PollTimes = std::map<std::pair<std::string, int>, PollTime>;

//
// The tracepoint programs cost ~0.25 us per NET_RX softirq, which matters
// where a path raises one softirq per frame (copy-mode AF_XDP transmit into a
// veth without NAPI): they can be attached for part of a run only.
class NapiTimer {
 public:
  // Devices whose name starts with prefix; bench_tgid = this process.
  // Loaded, not attached.
  static Result<std::unique_ptr<NapiTimer>> create(const std::string& prefix);
  ~NapiTimer();
  // Attaches the tracepoint programs (no-op when attached). Poll times
  // accumulate only while attached.
  Status attach();
  void detach();
  bool attached() const { return !links_.empty(); }
  // The datapath process whose softirq polls are told apart (0: none).
  void setDutTgid(pid_t pid);
  // Kernel threads whose softirq work is told apart (ctx: enum vb_poll_ctx),
  // replacing the previous set.
  Status setThreadContexts(const std::vector<std::pair<pid_t, int>>& tids);
  Result<PollTimes> read() const;

 private:
  NapiTimer() = default;
  vb_napi_time* skel_ = nullptr;
  std::vector<bpf_link*> links_;
};

}  // namespace vdev::bench
