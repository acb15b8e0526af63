// real_datapaths.cpp - see real_datapaths.h.
#include "real_datapaths.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstring>

#include "ethtool_stats.h"
#include "report.h"
#include "tc_fwd.skel.h"

namespace vdev::bench {

// ---- the Linux bridge -----------------------------------------------------------

BridgeOver::BridgeOver(const Netns& ns, std::string bridge, std::vector<std::string> ports, std::string name,
                       std::string describe, bool wireFrames)
    : ns_(ns),
      bridge_(std::move(bridge)),
      ports_(std::move(ports)),
      name_(std::move(name)),
      describe_(std::move(describe)),
      wireFrames_(wireFrames) {}

BridgeOver::~BridgeOver() { (void)stop(); }

Status BridgeOver::start() {
  VB_TRY(runCommand({"ip", "-n", ns_.name(), "link", "add", bridge_, "type", "bridge", "stp_state", "0"}));
  created_ = true;
  for (const auto& p : ports_) {
    VB_TRY(runCommand({"ip", "-n", ns_.name(), "link", "set", p, "master", bridge_}));
    // The ports are the run's own (a fresh topology per datapath): nothing
    // to turn back on.
    if (wireFrames_) VB_TRY(setOffloads(ns_, p, {.tso = false, .gso = false}));
  }
  return runCommand({"ip", "-n", ns_.name(), "link", "set", bridge_, "up"});
}

Status BridgeOver::stop() {
  if (!created_) return {};
  created_ = false;
  Json ports = Json::array();
  for (const auto& p : ports_) {
    auto ls = LinkStats::open(ns_, p);
    auto c = ls ? ls.value().read() : Result<LinkCounters>(ls.error());
    if (!c) continue;  // a port whose station is gone: nothing to say of it
    ports.push_back(Json{{"name", p}, {"tx_packets", c.value().txPackets}, {"tx_bytes", c.value().txBytes}});
  }
  stats_ = Json{{"ports", ports}, {"wire_frames", wireFrames_}}.dump();
  return runCommand({"ip", "-n", ns_.name(), "link", "del", bridge_});
}

// ---- tc_fwd.bpf.c ------------------------------------------------------------------

void TcFwdDeleter::operator()(vb_tc_fwd* s) const { vb_tc_fwd__destroy(s); }

TcFwd::TcFwd(const Netns& ns, std::vector<TcFwdDest> dests, std::vector<std::string> ports, std::string name,
             std::string describe)
    : ns_(ns),
      dests_(std::move(dests)),
      ports_(std::move(ports)),
      name_(std::move(name)),
      describe_(std::move(describe)) {}

TcFwd::~TcFwd() { (void)stop(); }

Status TcFwd::start() {
  skel_.reset(vb_tc_fwd__open_and_load());
  if (!skel_) return errnoError("load tc_fwd BPF object");
  for (const auto& dst : dests_) {
    auto idx = testkit::ifindexOf(dst.ifname, &ns_);
    if (!idx) return idx.error();
    uint64_t key = 0;
    memcpy(&key, dst.mac.data(), dst.mac.size());
    vb_tc_fwd_dest d = {static_cast<__u32>(idx.value()), dst.peer ? 1u : 0u};
    if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_fwd_dest), &key, &d, BPF_ANY) < 0)
      return errnoError("tc_fwd: add " + formatMac(dst.mac));
  }
  for (const auto& p : ports_) {
    auto tc = TcIngress::attach(ns_, p, skel_->progs.vb_tc_fwd);
    if (!tc) return tc.error();
    hooks_.push_back(std::move(tc.value()));
  }
  return {};
}

Status TcFwd::stop() {
  if (!skel_) return {};
  std::vector<vb_tc_fwd_stats> v(possibleCpus());
  __u32 zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.tc_fwd_stats), &zero, v.data()) == 0) {
    vb_tc_fwd_stats sum = {};
    for (const auto& x : v) {
      sum.redirected += x.redirected;
      sum.unknown_dst += x.unknown_dst;
      sum.failed += x.failed;
    }
    stats_ = Json{{"redirected_skbs", static_cast<uint64_t>(sum.redirected)},
                  {"unknown_dst", static_cast<uint64_t>(sum.unknown_dst)},
                  {"redirect_failed", static_cast<uint64_t>(sum.failed)}}
                 .dump();
  }
  hooks_.clear();
  skel_.reset();
  return {};
}

}  // namespace vdev::bench
