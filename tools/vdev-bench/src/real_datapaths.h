// real_datapaths.h - the kernel's own datapaths that the modes with real
// senders (--real, --two-host) measure vdevd against, each on ports of one
// namespace: the Linux bridge (the reference) and tc_fwd.bpf.c, the
// kernel's skb redirect (the upper bound).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/mac.h"
#include "bpf_objs.h"
#include "datapath.h"
#include "sys.h"

struct vb_tc_fwd;

namespace vdev::bench {

// A Linux bridge enslaving ports (in that order), learning, STP off: ports
// forward at once. stop() deletes it, which releases the ports.
//
// With wireFrames, start() also turns TSO and GSO off on every port: the
// kernel segments each GSO skb the bridge forwards before it leaves the
// port (validate_xmit_skb), so the receiving container's or VM's stack
// takes it as wire frames, one at a time, with no GRO to merge them again
// (a veth without NAPI) -- the shape of vdevd's own path, which hands
// every receiver wire frames, with the kernel's cheapest forwarding.
//
// Once stopped, statsJson() says what each port transmitted toward its
// station: {"ports": [{"name", "tx_packets", "tx_bytes"}], "wire_frames"}
// -- a device counts a GSO skb once, so more bytes per packet than one
// frame at the MTU holds mean whole GSO skbs went out, and no more than
// that, wire frames.
class BridgeOver : public Datapath {
 public:
  BridgeOver(const Netns& ns, std::string bridge, std::vector<std::string> ports, std::string name,
             std::string describe, bool wireFrames = false);
  ~BridgeOver() override;
  std::string name() const override { return name_; }
  std::string describe() const override { return describe_; }
  Status start() override;
  Status stop() override;
  std::string statsJson() const override { return stats_; }

 private:
  const Netns& ns_;
  std::string bridge_;
  std::vector<std::string> ports_;
  std::string name_, describe_;
  bool wireFrames_ = false;
  bool created_ = false;
  std::string stats_;
};

// Where tc_fwd.bpf.c sends a destination MAC: to the device ifname,
// bpf_redirect_peer() into its far end (peer: the host end of a
// container's veth) or bpf_redirect() out of it (a tap, an uplink).
struct TcFwdDest {
  Mac mac{};
  std::string ifname;
  bool peer = false;
};

struct TcFwdDeleter {
  void operator()(vb_tc_fwd* s) const;
};

// tc_fwd.bpf.c at the clsact ingress hook of ports, its table holding dests:
// the kernel's skb redirect with nothing else around it. Its counters, once
// stopped: statsJson() {"redirected_skbs", "unknown_dst", "redirect_failed"}.
class TcFwd : public Datapath {
 public:
  TcFwd(const Netns& ns, std::vector<TcFwdDest> dests, std::vector<std::string> ports, std::string name,
        std::string describe);
  ~TcFwd() override;
  std::string name() const override { return name_; }
  std::string describe() const override { return describe_; }
  Status start() override;
  Status stop() override;
  std::string statsJson() const override { return stats_; }

 private:
  const Netns& ns_;
  std::vector<TcFwdDest> dests_;
  std::vector<std::string> ports_;
  std::string name_, describe_;
  std::unique_ptr<vb_tc_fwd, TcFwdDeleter> skel_;
  std::vector<std::unique_ptr<TcIngress>> hooks_;
  std::string stats_;
};

}  // namespace vdev::bench
