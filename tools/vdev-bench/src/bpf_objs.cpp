// bpf_objs.cpp - see bpf_objs.h.
#include "bpf_objs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <unistd.h>

#include <cstring>

#include <vector>

#include "fwd.skel.h"
#include "gen.skel.h"
#include "napi_time.skel.h"
#include "sink.skel.h"
#include "testkit/netns.h"

namespace vdev::bench {

Result<Counters> readCounters(int mapFd) {
  static const int ncpu = possibleCpus();
  std::vector<vb_counters> v(ncpu);
  __u32 key = VB_COUNTERS_KEY;
  if (bpf_map_lookup_elem(mapFd, &key, v.data()) < 0)
    return errnoError("read per-CPU counters");
  Counters c;
  for (const auto& x : v) {
    c.pkts += x.pkts;
    c.bytes += x.bytes;
    c.otherPkts += x.other_pkts;
    c.otherBytes += x.other_bytes;
  }
  return c;
}

// ---- XdpLink ----------------------------------------------------------------

Result<XdpLink> XdpLink::attach(const Netns& ns, const std::string& ifname, bpf_program* prog) {
  return testkit::inNetns(&ns, [&]() -> Result<XdpLink> {
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) return errnoError("if_nametoindex " + ifname);
    // BPF_LINK_CREATE resolves the ifindex in this thread's namespace; the
    // default mode is native (driver) XDP where the driver has it (veth, tun).
    bpf_link* l = bpf_program__attach_xdp(prog, static_cast<int>(idx));
    if (!l) return errnoError(std::string("attach XDP ") + bpf_program__name(prog) + " to " + ifname);
    return XdpLink(l);
  });
}

XdpLink::XdpLink(XdpLink&& o) noexcept : link_(std::exchange(o.link_, nullptr)) {}
XdpLink& XdpLink::operator=(XdpLink&& o) noexcept {
  if (this != &o) {
    if (link_) bpf_link__destroy(link_);
    link_ = std::exchange(o.link_, nullptr);
  }
  return *this;
}
XdpLink::~XdpLink() {
  if (link_) bpf_link__destroy(link_);
}

// ---- TcIngress ----------------------------------------------------------------

Result<std::unique_ptr<TcIngress>> TcIngress::attach(const Netns& ns, const std::string& ifname,
                                                     bpf_program* prog) {
  std::unique_ptr<TcIngress> t(new TcIngress(ns, ifname));
  Status s = testkit::inNetns(&ns, [&]() -> Status {
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) return errnoError("if_nametoindex " + ifname);
    t->ifindex_ = static_cast<int>(idx);
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = t->ifindex_, .attach_point = BPF_TC_INGRESS);
    int err = bpf_tc_hook_create(&hook);  // the clsact qdisc
    if (err && err != -EEXIST) return makeError(-err, "create clsact qdisc on " + ifname);
    t->createdHook_ = err == 0;
    LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(prog));
    err = bpf_tc_attach(&hook, &opts);
    if (err) return makeError(-err, std::string("attach tc ") + bpf_program__name(prog) + " to " + ifname);
    t->attached_ = true;
    t->handle_ = opts.handle;
    t->priority_ = opts.priority;
    return {};
  });
  if (!s.ok()) return s.error();  // ~TcIngress removes what was done
  return t;
}

TcIngress::~TcIngress() {
  if (!attached_ && !createdHook_) return;
  Status s = testkit::inNetns(&ns_, [&]() -> Status {
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex_, .attach_point = BPF_TC_INGRESS);
    if (attached_) {
      LIBBPF_OPTS(bpf_tc_opts, opts, .handle = handle_, .priority = priority_);
      int err = bpf_tc_detach(&hook, &opts);
      if (err) return makeError(-err, "detach tc program from " + ifname_);
    }
    if (createdHook_) {
      // INGRESS | EGRESS: delete the clsact qdisc itself.
      hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
      int err = bpf_tc_hook_destroy(&hook);
      if (err) return makeError(-err, "remove clsact qdisc from " + ifname_);
    }
    return {};
  });
  if (!s.ok()) logWarn("%s", s.error().message().c_str());
}

// ---- skeletons --------------------------------------------------------------

void GenSkelDeleter::operator()(vb_gen* s) const { vb_gen__destroy(s); }
void SinkSkelDeleter::operator()(vb_sink* s) const { vb_sink__destroy(s); }
void FwdSkelDeleter::operator()(vb_fwd* s) const { vb_fwd__destroy(s); }

Result<GenSkel> loadGenerator(const GenProgConfig& cfg) {
  GenSkel s(vb_gen__open());
  if (!s) return errnoError("open generator BPF object");
  s->rodata->sport_base = cfg.sportBase;
  s->rodata->sport_count = cfg.sportCount;
  int err = vb_gen__load(s.get());
  if (err) return makeError(-err, "load generator BPF object");
  return s;
}
bpf_program* genPassProgram(vb_gen* s) { return s->progs.vb_pass; }
int genCountersFd(vb_gen* s) { return bpf_map__fd(s->maps.gen_counters); }
int genProgramFd(vb_gen* s) { return bpf_program__fd(s->progs.vb_gen); }
bpf_program* genRelayProgram(vb_gen* s) { return s->progs.vb_relay; }
Status genSetRelay(vb_gen* s, const Netns& ns, const std::string& ifname, uint32_t copies) {
  if (copies < 1 || copies > kGenRelayMaxCopies)
    return makeError(EINVAL, "relay copies must be 1.." + std::to_string(kGenRelayMaxCopies));
  return testkit::inNetns(&ns, [&]() -> Status {
    // The devmap resolves each entry's ifindex in this thread's namespace.
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) return errnoError("if_nametoindex " + ifname);
    bpf_devmap_val v = {};
    v.ifindex = idx;
    v.bpf_prog.fd = bpf_program__fd(s->progs.vb_relay_copy);
    int fd = bpf_map__fd(s->maps.relay_out);
    for (uint32_t k = 0; k < kGenRelayMaxCopies; ++k) {
      if (k < copies) {
        if (bpf_map_update_elem(fd, &k, &v, BPF_ANY) < 0) return errnoError("point the relay's devmap at " + ifname);
      } else if (bpf_map_delete_elem(fd, &k) < 0 && errno != ENOENT) {
        return errnoError("shrink the relay's devmap");
      }
    }
    return {};
  });
}
void genSetPace(vb_gen* s, uint64_t periodNs, uint64_t maxLagNs, uint32_t framesPerSlot) {
  // max_lag first: a frame that sees the new period with the old lag only
  // catches up by a little more or less once.
  s->bss->max_lag_ns = maxLagNs;
  s->bss->pace_every = framesPerSlot;
  s->bss->period_ns = periodNs;
}

Result<SinkSkel> loadSink() {
  SinkSkel s(vb_sink__open());
  if (!s) return errnoError("open sink BPF object");
  int err = vb_sink__load(s.get());
  if (err) return makeError(-err, "load sink BPF object");
  return s;
}
bpf_program* sinkTcProgram(vb_sink* s) { return s->progs.vb_sink_tc; }
int sinkCountersFd(vb_sink* s) { return bpf_map__fd(s->maps.sink_counters); }

Result<FwdSkel> loadFwd() {
  FwdSkel s(vb_fwd__open());
  if (!s) return errnoError("open forwarding BPF object");
  int err = vb_fwd__load(s.get());
  if (err) return makeError(-err, "load forwarding BPF object");
  return s;
}
bpf_program* fwdPassProgram(vb_fwd* s) { return s->progs.vb_fwd_pass; }
bpf_program* fwdRedirectProgram(vb_fwd* s) { return s->progs.vb_fwd_redirect; }
bpf_program* fwdRedirectRevProgram(vb_fwd* s) { return s->progs.vb_fwd_redirect_rev; }

Status fwdSetEgress(vb_fwd* s, const Netns& ns, const std::string& ifname, uint32_t slot) {
  int fd = bpf_map__fd(s->maps.tx_port);
  return testkit::inNetns(&ns, [&]() -> Status {
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) return errnoError("if_nametoindex " + ifname);
    // A devmap resolves the ifindex at update time, in this thread's namespace.
    __u32 key = slot, val = idx;
    if (bpf_map_update_elem(fd, &key, &val, BPF_ANY) < 0)
      return errnoError("devmap update to " + ifname);
    return {};
  });
}

// ---- NapiTimer ----------------------------------------------------------------

Result<std::unique_ptr<NapiTimer>> NapiTimer::create(const std::string& prefix) {
  std::unique_ptr<NapiTimer> t(new NapiTimer());
  t->skel_ = vb_napi_time__open();
  if (!t->skel_) return errnoError("open NAPI timing BPF object");
  if (prefix.size() >= VB_IFNAMSIZ) return makeError(EINVAL, "device prefix too long");
  t->skel_->rodata->bench_tgid = static_cast<__u32>(getpid());
  std::memcpy(const_cast<char*>(t->skel_->rodata->prefix), prefix.data(), prefix.size());
  t->skel_->rodata->prefix_len = static_cast<__u32>(prefix.size());
  int err = vb_napi_time__load(t->skel_);
  if (err) return makeError(-err, "load NAPI timing BPF object (raw tracepoints)");
  return t;
}

Status NapiTimer::attach() {
  if (attached()) return {};
  // A detach in the middle of a softirq can leave a CPU marked "in NET_RX"
  // with an old timestamp: clear every CPU's state first, then attach
  // softirq_exit and napi_poll before softirq_entry, so that a softirq
  // already running when they appear is ignored rather than mis-timed.
  static const int ncpu = possibleCpus();
  std::vector<uint8_t> zero(static_cast<size_t>(ncpu) * ((bpf_map__value_size(skel_->maps.cpu_state) + 7) & ~7u));
  __u32 key = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.cpu_state), &key, zero.data(), BPF_ANY) < 0)
    return errnoError("reset NAPI timing state");
  for (bpf_program* p : {skel_->progs.vb_softirq_exit, skel_->progs.vb_napi_poll, skel_->progs.vb_softirq_entry}) {
    bpf_link* l = bpf_program__attach(p);
    if (!l) {
      Status s = errnoError(std::string("attach ") + bpf_program__name(p));
      detach();
      return s;
    }
    links_.push_back(l);
  }
  return {};
}

void NapiTimer::detach() {
  // Reverse order: softirq_entry first, so no new poll starts being timed.
  for (auto it = links_.rbegin(); it != links_.rend(); ++it) bpf_link__destroy(*it);
  links_.clear();
}

NapiTimer::~NapiTimer() {
  detach();
  if (skel_) vb_napi_time__destroy(skel_);
}

void NapiTimer::setDutTgid(pid_t pid) {
  // A plain store into the mmap()ed .bss; the BPF side reads it per poll
  // and a stale value for a few polls only mislabels those polls' context.
  skel_->bss->dut_tgid = static_cast<__u32>(pid);
}

Status NapiTimer::setThreadContexts(const std::vector<std::pair<pid_t, int>>& tids) {
  int fd = bpf_map__fd(skel_->maps.thread_ctx);
  // Empty the map, then fill it. A poll that runs in between is labelled
  // by process only, for a few microseconds.
  __u32 key, next;
  while (bpf_map_get_next_key(fd, nullptr, &next) == 0) {
    key = next;
    if (bpf_map_delete_elem(fd, &key) < 0) return errnoError("clear thread contexts");
  }
  for (const auto& [tid, ctx] : tids) {
    __u32 k = static_cast<__u32>(tid), v = static_cast<__u32>(ctx);
    if (bpf_map_update_elem(fd, &k, &v, BPF_ANY) < 0) return errnoError("set thread context");
  }
  return {};
}

Result<PollTimes> NapiTimer::read() const {
  static const int ncpu = possibleCpus();
  int fd = bpf_map__fd(skel_->maps.poll_stats);
  PollTimes out;
  vb_poll_key key{}, next{};
  std::vector<vb_poll_stats> vals(ncpu);
  void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    if (bpf_map_lookup_elem(fd, &next, vals.data()) == 0) {
      PollTime& pt = out[{std::string(next.dev, strnlen(next.dev, VB_IFNAMSIZ)), static_cast<int>(next.ctx)}];
      for (const auto& v : vals) {
        pt.seconds += v.ns * 1e-9;
        pt.calls += v.calls;
        pt.frames += v.work;
      }
    }
    key = next;
    prev = &key;
  }
  return out;
}

}  // namespace vdev::bench
