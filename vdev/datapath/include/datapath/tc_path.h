// TcPath: the skb-level program (bpf/vdev_tc.bpf.c) and its maps, one for
// the whole datapath, attached at the tcx ingress of every port whose
// senders hand the kernel skbs (PortHook::kTc: veths, taps).
//
// Why skbs: a container's TCP stream arrives as 64 KB GSO segments with
// checksums left to the "hardware" (CHECKSUM_PARTIAL), a VM's through its
// tap's virtio-net header the same way. XDP and AF_XDP cannot hold either,
// and a native XDP program on a veth's host end turns the container's TSO
// off. At tc the skb is whole: learned unicast goes straight to its
// destination (bpf_redirect_peer / bpf_redirect) with its offload state,
// and what needs vdevd's decision goes out of the punt device (punt.h),
// where the kernel segments it and finishes its checksums.
//
// The program is attached at a device's ingress in one of two ways
// (TcAttach), chosen once per kernel: at tcx (Linux 6.6+) with
// BPF_PROG_ATTACH, or, where the kernel has no tcx (Debian 12's 6.1), as a
// cls_bpf filter in direct-action mode at the clsact qdisc's ingress. Not a
// link either way: like the XDP programs, it stays when vdevd dies, so a
// port's traffic never leaks into the host's stack and learned unicast
// keeps flowing; a restarted vdevd replaces it (a program named
// vdev_tc_port or vdev_tc_copy is always vdev's).
//
// Classic tc, the rules: the clsact qdisc is made only if the device has
// none (and that vdevd made it is remembered: clsactMade()), and never
// deleted -- deleting it takes every filter with it, "holds no other
// filter" can only be checked by a dump that races with whoever adds one,
// a vdevd killed with SIGKILL could not delete it anyway, and an empty
// clsact costs one look at an empty filter list per frame (the device goes
// with its container or VM, the qdisc with it). vdev's filter is named by
// a fixed handle (kTcHandle) and priority: the port program at priority 1,
// the highest there is, so it runs before every filter of ordinary
// priority (tc gives those without one 49152 and down), as BPF_F_BEFORE
// puts it first at tcx; the copy program at 65535, after them all, as it
// is appended last at tcx. A filter at vdev's handle and priority whose
// program is vdev's is replaced (NLM_F_REPLACE: no moment without one);
// one of another program, or another kind of filter at vdev's priority,
// is never touched: the attach fails (and `auto` takes the port to XDP).
// Detaching removes vdev's filter only, checked by program id.
//
// A netkit (attach()'s `netkit`): no tc hook at all. The program is the
// pair's peer program, attached through the primary end's ifindex with a
// BPF link of attach type BPF_NETKIT_PEER (Linux 6.7), which the netkit
// runs in its peer's transmit -- on every frame the container sends, with
// the skb already on the primary end (skb->ifindex is the port's), before
// it would reach the host's stack there. Peer, not primary: the primary
// program runs on what the host sends into the container. Unlike tcx and
// clsact, a link: it goes with vdevd's fd (shutdown, SIGKILL), so nothing
// of a dead vdevd is left to replace; the pair's peer policy, drop
// (rtnl::createNetkit), then keeps the container's frames out of the host's
// stack until the next vdevd attaches. Its verdicts are netkit's
// (enum netkit_action: NEXT -1, PASS 0, DROP 2, REDIRECT 7), the TC_ACT_*
// values again. One difference: the program runs in a device's transmit,
// not at tc ingress, where the kernel refuses bpf_redirect_peer
// (skb_do_redirect wants skb_at_tc_ingress): its fast path sends with
// bpf_redirect to the destination's egress (VDEV_TC_XMIT in its row), which
// for a veth or a netkit arrives at the peer. Into a netkit, the other ports'
// programs at tc ingress use bpf_redirect_peer as into a veth. A second,
// small program, vdev_tc_netkit_in, is the pair's primary program (a link
// of its own, BPF_NETKIT_PRIMARY): a netkit does not run eth_type_trans()
// on what enters the container, and vdevd's AF_XDP frames carry no
// skb->protocol, which it derives for them (bpf/vdev_tc.bpf.c).
//
// Returns:
// cls_bpf's direct-action codes are tcx's (TC_ACT_OK = TCX_PASS, SHOT =
// DROP, REDIRECT = REDIRECT, UNSPEC = TCX_NEXT: "the next filter, and the
// host's stack after the last"), checked in bpf/vdev_tc.bpf.c.
//
// Thread safety: owned by the datapath thread (control requests run there).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "datapath/xdp_prog.h"
#include "spec/port_spec.h"

struct vdev_tc;

namespace vdev::datapath {

class FastPath;

// How the skb programs are attached (see above). kAuto: kTcx where the
// kernel has tcx, else kClsact (probeTcAttach()).
using spec::TcAttach;  // spec/port_spec.h
using spec::tcAttachName;  // "tcx", "clsact", "auto"
// The kernel's way: kTcx if it has tcx -- a BPF_PROG_QUERY at the tcx
// ingress of the loopback device (ifindex 1 in every network namespace)
// answers; a kernel before 6.6 refuses the attach type (EINVAL) -- else
// kClsact. A query, not a trial attach: nothing is attached anywhere, and
// no device needs to be made for it.
TcAttach probeTcAttach();
// vdev's cls_bpf filter: its handle, and the priorities of the port and
// copy programs (see above).
inline constexpr uint32_t kTcHandle = 0x7664;  // "vd"
inline constexpr uint16_t kTcPortPrio = 1;
inline constexpr uint16_t kTcCopyPrio = 0xffff;

class TcPath {
 public:
  // Loads the program. fast: the fast path whose maps (MAC table,
  // counters) the program shares, or null: every frame goes to vdevd.
  // attach: kTcx or kClsact (kAuto is probed here). host_macs_max: the
  // entries of the host MAC map, every port's MAC and the configured ones
  // (PortTable::kMaxPorts + configured; the map allocates per entry, so the
  // bound costs nothing until used).
  static Result<std::unique_ptr<TcPath>> create(const FastPath* fast, TcAttach attach = TcAttach::kAuto,
                                                uint32_t host_macs_max = kDefaultHostMacsMax);
  static constexpr uint32_t kDefaultHostMacsMax = 64;
  TcAttach attachMode() const { return attach_; }
  ~TcPath();
  TcPath(const TcPath&) = delete;
  TcPath& operator=(const TcPath&) = delete;

  // Where frames for vdevd go: the punt device's near end (0: nowhere,
  // they are dropped and counted as no_socket), and the MTU it (and
  // vdevd's UMEM frames) carry: longer frames are dropped and counted as
  // the ingress port's oversize.
  void setPunt(int ifindex, uint32_t mtu);

  // A port's row in the program's maps, and the program at its device's
  // ingress (a vdev_tc_port or vdev_tc_copy left there by a vdevd that died
  // is replaced, at tcx and at clsact alike; other programs stay, after
  // ours). Errors: the attach's (EINVAL at tcx: a kernel without tcx;
  // EBUSY, EINVAL at clsact: another program or filter kind holds vdev's
  // handle and priority), ENOSPC beyond the tables. peer: a veth, delivered to
  // with bpf_redirect_peer. fast_rx: what it receives may take the fast
  // path. Not a destination until setDest().
  // netkit: the device is a netkit's primary end (see above); EOPNOTSUPP
  // on a kernel whose netkit takes no BPF link.
  Status attach(uint16_t port_index, int ifindex, const std::string& ifname, bool peer, bool fast_rx,
                uint32_t mtu, bool netkit = false);
  // Detaches the program from the device (kept) and clears the port's row.
  void detach(uint16_t port_index);
  // The device is gone (deleted with its program): clear the row only --
  // its ifindex may already name another device.
  void forget(uint16_t port_index);
  // The port is a fast-path destination now (live) or not. A port at tc
  // has its row from attach(); any other port (at XDP: an uplink) gets one
  // here, with its device, MTU and whether it is a veth.
  void setDest(uint16_t port_index, bool on);
  void setOtherDest(uint16_t port_index, int ifindex, uint32_t mtu, bool peer, bool on);
  // A port at tc: whether it is delivered to with bpf_redirect_peer (a
  // veth whose peer is in another namespace: Port::redirectPeer) or with
  // bpf_redirect to its egress.
  void setPeer(uint16_t port_index, bool peer);
  void setMtu(uint16_t port_index, uint32_t mtu);
  // The VLAN of the port's untagged frames on the fast path (1 for a port
  // without VLAN settings; 0: none, every frame to vdevd), and whether it
  // is an access port (its tagged frames go to vdevd). Port::fastVid().
  void setVlan(uint16_t port_index, uint16_t vid, bool access);
  // A port at tc the host is a station behind (an uplink): its program
  // gives the host's multicast and broadcast frames to the host's stack,
  // and a copy of those the guests need too to vdevd
  // (bpf/vdev_frame_class.h).
  void setHostPort(uint16_t port_index, bool on);
  // A port at the XDP hook the host is behind: the program vdev_tc_copy at
  // its device's tcx ingress hands vdevd a copy of the frames its XDP
  // program passed to the host that the guests need too (XDP cannot clone
  // a frame). ENOSPC beyond the skb path's tables. detachCopy: detached;
  // forgetCopy: the device is gone (its program with it).
  // The copies are storm-limited by the port's limits in its row
  // (setLimits(), as for a port at tc); what the row dropped is the port's
  // (limitDrops()) while the copy program is attached, and returned by
  // detachCopy()/forgetCopy(), which clear the row.
  Status attachCopy(uint16_t port_index, int ifindex, const std::string& ifname, const PortLimits& limits);
  LimitDrops detachCopy(uint16_t port_index);
  LimitDrops forgetCopy(uint16_t port_index);

  // Host addresses: frames to these MACs, ARP requests and Neighbour
  // Solicitations for these addresses on a port's device go to the host's
  // stack. Each call replaces the previous set (of that device).
  // setHostMacs: an update the map refuses (full: more MACs than
  // create()'s host_macs_max) is an error: returned, counted
  // (hostMacErrors()) and logged once; frames to the MACs left out would
  // be switched (flooded) instead of passed to the host. What was written
  // stays; the rest is tried again on the next call.
  Status setHostMacs(const std::vector<uint64_t>& mac_keys);
  uint64_t hostMacErrors() const { return host_mac_errors_; }
  Status setHostIpv4(int ifindex, const std::vector<uint32_t>& addrs);
  Status setHostIpv6(int ifindex, const std::vector<std::array<uint8_t, 16>>& addrs);
  // The VLANs the host has a device in on the device `ifindex` (their
  // addresses go into setHostIpv4/6 with the device's own).
  Status setHostVids(int ifindex, const std::vector<uint32_t>& vids);

  // counters(), ownOversize() and limitDrops() are map lookups with a
  // buffer of the caller's: any thread (Datapath::stats reads them on the
  // control thread).
  // The program's own counters of a port (pass, redirect = handed to vdevd,
  // no_socket, fast), and zeroing them when the index gets a new port.
  XdpProgCounters counters(uint16_t port_index) const;
  // Frames of the port dropped as too long for vdevd (oversize) that the
  // fast path's counters do not hold: without a fast path the program
  // counts them in a map of its own. 0 when it shares the fast path's.
  uint64_t ownOversize(uint16_t port_index) const;
  void resetCounters(uint16_t port_index);
  // A port's broadcast and multicast storm control and its policer
  // (PortLimits; unknown unicast is vdevd's), from now on, its buckets
  // full; and what the program dropped for them since resetCounters().
  Status setLimits(uint16_t port_index, const PortLimits& l);
  LimitDrops limitDrops(uint16_t port_index) const;
  // Whether vdevd made the clsact qdisc of the port's device (kClsact: the
  // device had none when the port's program, or its copy program, was
  // attached). It stays when the program goes (see above).
  bool clsactMade(uint16_t port_index) const {
    return port_index < rows_.size() && rows_[port_index].clsact_made;
  }

 private:
  TcPath() = default;
  struct SkelDeleter {
    void operator()(struct ::vdev_tc* s) const noexcept;
  };
  struct Row {
    int ifindex = 0;
    uint32_t flags = 0;
    uint32_t mtu = 0;
    uint32_t vid = 1;  // kVidDefault: a port without VLAN settings (setVlan)
    bool indexed = false;   // its device is in tc_index: a port at tc (attach())
    bool attached = false;  // the program is at its device's ingress
    int copy_ifindex = 0;   // vdev_tc_copy is at this device's ingress (attachCopy())
    bool clsact_made = false;  // vdevd made the device's clsact qdisc (clsactMade())
    FileDesc netkit_link;     // a netkit's BPF link: the program is attached while it is open
    FileDesc netkit_in_link;  // ... and its primary program's (vdev_tc_netkit_in)
  };
  // The program (copy: vdev_tc_copy, else vdev_tc_port) at the device's
  // ingress, the way attach_ says, after what a vdevd that died left there
  // went; made: whether vdevd made the clsact qdisc for it.
  Status attachProg(bool copy, int ifindex, const std::string& ifname, bool& made);
  void detachProg(bool copy, int ifindex);
  void writeRow(uint16_t port_index);
  void clearRow(uint16_t port_index);
  Row& row(uint16_t port_index);

  std::unique_ptr<struct ::vdev_tc, SkelDeleter> skel_;
  int prog_fd_ = -1;  // owned by the skeleton
  int copy_fd_ = -1;  // vdev_tc_copy, owned by the skeleton
  int netkit_in_fd_ = -1;  // vdev_tc_netkit_in, owned by the skeleton
  uint32_t prog_id_ = 0, copy_id_ = 0;  // their ids: a filter is detached only if it holds ours
  TcAttach attach_ = TcAttach::kTcx;
  int ncpu_ = 1;
  mutable std::vector<uint64_t> percpu_;
  bool shares_fast_ = false;
  std::vector<Row> rows_;  // by port index
  std::vector<uint64_t> host_macs_;  // sorted: what the map holds
  uint64_t host_mac_errors_ = 0;
  std::vector<std::pair<int, std::vector<uint32_t>>> host_ipv4_;
  std::vector<std::pair<int, std::vector<std::array<uint8_t, 16>>>> host_ipv6_;
  std::vector<std::pair<int, std::vector<uint32_t>>> host_vids_;
};

}  // namespace vdev::datapath
