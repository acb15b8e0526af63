// Port: one netdev attached to vdev, and the bulk-xmit entry point.
//
// A port has one AF_XDP socket per queue and, per TX queue, a delivery ring
// (ringbuf::PtrRing) into which any datapath thread hands frames with
// xmitBulk(). The thread that owns the port's sockets drains the rings onto
// the TX rings (drainTx) and reaps completions.
//
// xmitBulk() mirrors the kernel's bulk ndo_xdp_xmit (tun_xdp_xmit,
// veth_xdp_xmit): one producer lock per batch, a prefix is taken, every frame
// that does not fit is counted as a drop and returned to its pool by
// xmitBulk itself, and kXmitFlush rings the consumer's doorbell.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringbuf/ptr_ring.h"
#include "datapath/capture.h"
#include "datapath/counters.h"
#include "datapath/fast_path.h"
#include "datapath/frame_pool.h"
#include "datapath/limits.h"
#include "datapath/link_state.h"
#include "datapath/xdp_features.h"
#include "datapath/xdp_prog.h"
#include "datapath/xsk.h"
#include "spec/port_spec.h"

namespace vdev::datapath {

inline constexpr uint32_t kXmitFlush = 1u << 0;
inline constexpr uint32_t kXmitFlagsMask = kXmitFlush;

// How TX completions are reaped.
//  eager: every drain reaps the completion ring completely, so frames come
//         back to the pool as soon as the kernel is done with them.
//  lazy:  reap only when `lazy_threshold` frames are outstanding (or the TX
//         ring is short of room, or the thread goes idle). Fewer touches of
//         the completion ring per batch, but frames stay out of the pool
//         longer: the pool and fill rings run emptier, and a sender that
//         waits for its buffers (or a small pool) stalls.
enum class CompletionMode { kEager, kLazy };

// Where a port's received frames enter vdev.
//  kXdp: vdevd's XDP program on the device, AF_XDP sockets per queue, and
//        (fast path) the kernel's bulk ndo_xdp_xmit through a devmap: for
//        XDP-native sources, a NIC uplink above all (zero-copy where the
//        driver has it).
//  kTc:  the skb-level program at the device's ingress, tcx or clsact (tc_path.h):
//        for senders that hand the kernel skbs -- a container's veth, a
//        VM's tap -- whose GSO and checksum-offload state XDP cannot hold.
//        The port's sockets only transmit.
//  kAuto: kTc for skb sources (skbSource()), kXdp for everything else --
//        and for a port whose index is beyond the skb path's tables
//        (kFastPathPorts), and for one whose tc attach fails (the reason
//        is the port's hookNote()): the XDP hook serves any device.
using spec::PortHook;  // spec/port_spec.h: the protocol's numbers, and kAuto
using spec::portHookName;

// The device's driver (ETHTOOL_GDRVINFO): "veth", "tun", a NIC's; "" if it
// has none or there is no such device.
std::string deviceDriver(const std::string& ifname);

// Whether the device is an skb source, best served at the tc hook
// (PortHook::kAuto): its senders hand the kernel skbs (a veth, a tap: driver
// "veth" or "tun"), or its driver runs no XDP itself (a VXLAN or Geneve
// tunnel, a bond, a NIC without XDP), where an XDP program would run
// generic, on the skb, and lose its GSO and checksum state. Asked the way
// the kernel allows (XdpFeatures: its xdp-features, or before 6.3 the
// driver). `driver` as deviceDriver() reports it.
bool skbSource(const std::string& ifname, const std::string& driver, const XdpFeatures& features);
// The RX queues the device has (1 if it cannot be read, or has none yet).
uint32_t deviceQueues(const std::string& ifname);

class TcPath;
class HeldFrames;

// What a device vdev made for a port carries (rtnl/link.h, "Identity"),
// checked before the port attaches to a device of its name: when it is
// added, restored, and whenever a device of that name appears after its
// own was deleted (Datapath::checkLink). A device that does not carry it
// -- anyone's device that took the name since -- is never attached: the
// port keeps waiting for its own (linkNote() says so). A port without one
// (an existing device root attached: an uplink) attaches to whatever
// device has its name, as an operator expects.
struct DeviceIdentity {
  std::string alias;    // IFLA_IFALIAS, exactly: rtnl::managedAlias(id)
  bool tap = false;     // IFLA_INFO_KIND "tun" (a tap) or "veth"
  bool netkit = false;  // IFLA_INFO_KIND "netkit" (tap false)
  // A tap's TUNSETOWNER uid (nullopt: none); who may open its queues.
  // check_owner false: not known (a port saved before ids), not checked.
  std::optional<uint32_t> tun_owner;
  bool check_owner = true;
};
// Whether the device `name`, with `ifindex`, carries identity `id` (kind,
// alias, a tap's owner). Errors: EPERM (it does not: the message says
// what differs), ENODEV (it is gone or was replaced meanwhile), and the
// query's own. Control plane: a netlink request and a sysfs read.
Status deviceIsOwn(const std::string& name, int ifindex, const DeviceIdentity& id);

struct PortConfig {
  uint32_t queues = 0;             // 0: every RX queue the device has
  uint32_t ring_capacity = 1024;   // delivery ring per TX queue (frames)
  uint32_t batch = 64;             // RX/TX burst
  uint32_t tx_retries = 3;         // TX ring full: reclaim + kick + retry this often, then drop
  CompletionMode completion = CompletionMode::kEager;
  uint32_t lazy_threshold = 256;
  XdpMode xdp_mode = XdpMode::kAuto;
  bool force = false;
  XskConfig xsk;
  const FastPath* fast = nullptr;  // the kernel fast path, if on (owned by the Datapath)
  XdpObject* xdp = nullptr;        // the XDP program of every port at the XDP hook (owned by the Datapath)
  // false: the port's own program never fast-paths what the port receives
  // (every frame goes through vdevd's thread); the port is still a fast-path
  // destination. For a sender whose own CPU is the bottleneck: a tap's XDP
  // program runs inside the VM's write(), so the fast path would put the
  // whole delivery on that CPU.
  bool fast_rx = true;
  // An isolated port (the bridge's "isolated", bridge CNI's portIsolation)
  // talks only to ports that are not: unicast between two isolated ports is
  // dropped (drops.isolated), floods from one skip the others.
  bool isolated = false;
  PortLimits limits;  // storm control and policer (DatapathConfig::limits, or the port's own)
  PortHook hook = PortHook::kAuto;
  TcPath* tc = nullptr;  // the skb path, if set up (owned by the Datapath)
  // What devices can do for XDP, asked the kernel's way (owned by the
  // Datapath; null: no device is asked -- tests' ports without one).
  const XdpFeatures* features = nullptr;
  // A veth whose peer vdevd made with GRO on: it has NAPI and takes
  // redirected frames, which before Linux 6.3 the kernel does not report
  // (XdpFeatures::takesFrames).
  bool peer_napi = false;
  // The punt device's far end (punt.h): a port of the datapath's own whose
  // XDP program hands every frame to its sockets -- no host MACs, no fast
  // path -- and whose frames belong to the ports they are tagged with.
  bool punt = false;
  // Where a zero-copy socket's frames wait when it is closed until the
  // kernel lets go of them (owned by the Datapath; null: returned at once).
  // hold_copy_mode: copy-mode sockets' too (tests: veth has no zero-copy).
  HeldFrames* held = nullptr;
  bool hold_copy_mode = false;
  // Tests: a receiving port takes the path of a device that offers
  // zero-copy (DatapathConfig::zerocopy_path_everywhere).
  bool zerocopy_path_always = false;
  // A device vdev made for the port: attach only to the one that carries
  // this (DeviceIdentity). nullopt: any device of the port's name.
  std::optional<DeviceIdentity> identity;
};

// Where the frames of one queue are (for the frame accounting).
struct QueueAccounting {
  uint64_t fill_ring = 0, kernel_rx = 0, rx_ring = 0;
  uint64_t port_ring = 0;
  uint64_t tx_ring = 0, kernel_tx = 0, comp_ring = 0;
};

class Port {
 public:
  struct Queue {
    explicit Queue(uint32_t ring_capacity) : ring(ring_capacity) {}
    ringbuf::PtrRing<Frame> ring;        // delivery ring: MPSC, drained by the owner thread
    // The chunks after the heads of the chains on the delivery ring (the
    // ring holds heads): added by the producers, taken off by the owner.
    std::atomic<uint64_t> chained{0};
    std::unique_ptr<XskSocket> xsk;      // null for a port without a device (unit tests)
    // Owner-thread bookkeeping (cumulative frame counts).
    uint64_t fill_given = 0, rx_got = 0;
    uint64_t tx_submitted = 0, tx_completed = 0;
    // The fill ring's target (FillBudget::want; 0 until its first refill),
    // the frames above the floor it counts against the datapath's shared
    // extra, when the kernel last emptied it faster than it was refilled
    // (or it took its whole target within a second), and rx_got then.
    uint32_t fill_target = 0, fill_extra = 0;
    uint64_t fill_busy_ns = 0, fill_busy_rx = 0;
    // The start of the current rate window (FillBudget::receivesFast) and
    // rx_got then.
    uint64_t fill_rate_ns = 0, fill_rate_rx = 0;
    // The lowest target (0: the datapath's floor). The punt socket's is its
    // RX ring: a full RX ring still leaves frames in its fill ring.
    uint32_t fill_min = 0;
    // Out of the idle sleep's epoll set while the thread is busy with it
    // (IdleSleep::leave); back in before the thread sleeps.
    bool unwatched = false;
  };

  // A port with delivery rings only and no device (for tests and benches),
  // down until setLive(true). index: its place in the Datapath's port table
  // (PortTable), which FDB entries and frames (Frame::in_port_index) name.
  Port(std::string name, uint16_t index, uint32_t nqueues, const PortConfig& cfg, uint32_t mtu = 1500);
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  // Opens a netdev: attaches the XDP program and binds one socket per queue.
  // anchors: the bound sockets whose UMEM registration to share (see
  // XskSocket; openSockets() says which one a device takes).
  // The sockets' owner tags come from the pool (FramePool::tags()).
  static Result<std::unique_ptr<Port>> open(const std::string& ifname, uint16_t index,
                                            FramePool& pool, const PortConfig& cfg,
                                            const std::vector<std::array<uint8_t, 6>>& host_macs,
                                            const UmemAnchors& anchors);

  // The bulk-xmit contract (the kernel's ndo_xdp_xmit; docs/architecture.md,
  // "Data flow"): returns frames taken (0..n), or
  //  -EINVAL  flags other than kXmitFlush; nothing taken, no counter changes;
  //  -ENXIO   the port has no live queue; nothing taken: the caller returns
  //           every frame and counts the drops.
  // Frames that did not fit are counted (tx drop, reason ring_full) and
  // returned to their pool here. kXmitFlush wakes the consumer after the
  // producer lock is released, even when nothing was taken.
  // Thread safety: any datapath thread (it must own the frames' pool).
  int xmitBulk(std::span<Frame* const> frames, uint32_t flags) noexcept;

  // Owner thread: moves frames from the delivery rings onto the TX rings,
  // kicks the kernel when it needs it, reaps completions. Returns frames sent.
  uint32_t drainTx(FramePool& pool) noexcept;
  // Whether drainTx has anything to do: frames were handed over since it
  // last ran (xmitBulk), or some it put on a TX ring are not completed yet,
  // or its delivery ring still holds some. A port with none of these is
  // quiet on its TX side: the datapath loop leaves it alone (the loop's
  // quiet ports, docs/architecture.md). Owner thread.
  bool txBusy() const noexcept { return tx_busy_ || tx_handed_.load(std::memory_order_relaxed); }
  // The receive side's counterpart, kept by the datapath loop: rounds in a
  // row in which none of its queues received, up to kQuietRounds.
  static constexpr uint32_t kQuietRounds = 16;
  bool rxQuiet() const noexcept { return rx_quiet_ >= kQuietRounds; }
  void noteRx(uint32_t got) noexcept { rx_quiet_ = got ? 0 : rx_quiet_ + (rx_quiet_ < kQuietRounds); }
  // Owner thread: reaps every completion on every queue. Returns frames freed.
  uint32_t reapCompletions(FramePool& pool) noexcept;

  // The link state machine (link_state.h): the port takes frames only while
  // live. live() from any thread; transitions on the owner thread.
  bool live() const noexcept { return link_.live(); }
  Link& link() noexcept { return link_; }
  const Link& link() const noexcept { return link_; }
  // A port without a device (tests, benches): up or down by hand.
  void setLive(bool up) noexcept {
    if (up)
      (void)link_.bound(0);
    else
      link_.closed();
  }

  const std::string& name() const { return name_; }
  uint16_t index() const { return index_; }
  int ifindex() const { return ifindex_; }
  uint32_t mtu() const { return mtu_.load(std::memory_order_relaxed); }
  void setMtu(uint32_t m) { mtu_.store(m, std::memory_order_relaxed); }
  const uint8_t* mac() const { return mac_; }
  std::vector<std::unique_ptr<Queue>>& queues() { return queues_; }
  const std::vector<std::unique_ptr<Queue>>& queues() const { return queues_; }
  XdpProgram* xdp() { return xdp_.get(); }
  const XdpProgram* xdp() const { return xdp_.get(); }
  bool zerocopy() const;
  // Its sockets take and send frames longer than a UMEM frame as chains
  // (XskSocket::multiBuffer()).
  bool multiBuffer() const;
  bool fastRx() const { return cfg_.fast_rx; }
  bool isolated() const { return cfg_.isolated; }
  const PortLimits& limits() const { return cfg_.limits; }
  // Datapath::setPort: new limits, enforced by the port's program (if it
  // has one now; otherwise from its attach) and by vdevd at once, every
  // bucket full; and the isolation flag (the caller forgets its MACs).
  // An error (the program's map refused them) leaves the port's limits as
  // they were, in vdevd and in the program.
  Status setLimits(const PortLimits& l);
  void setIsolated(bool on) { cfg_.isolated = on; }
  // VLANs (PortLimits::vlan): whether the port has VLAN settings; whether
  // it carries a VID (one without settings: the default VLAN only); whether
  // it sends that VID's frames with their tag.
  bool vlanOn() const noexcept { return vlan_on_; }
  const VlanConfig& vlan() const noexcept { return cfg_.limits.vlan; }
  bool carriesVid(uint16_t vid) const noexcept {
    return vlan_on_ ? cfg_.limits.vlan.carries(vid) : vid == kVidDefault;
  }
  bool tagsVid(uint16_t vid) const noexcept { return vlan_on_ && cfg_.limits.vlan.tagged[vid]; }
  // The VLANs the kernel fast path carries to and from the port (FastSync:
  // their stations behind it are in its MAC map; the programs take and
  // send their frames). fastVid(): the one the port has untagged
  // (untaggedVid(): the default VLAN for a port without VLAN settings, the
  // PVID of one with; 0: none, a trunk without a native VLAN); fastTagged():
  // those it carries with their tag (a trunk's), none for a port without
  // VLAN settings. Both empty while the port has a capture the fast path's
  // programs do not copy (no fast path): every frame to and from it passes
  // vdevd.
  bool fastOff() const { return capture_ && !capture_on_fast_; }
  uint16_t fastVid() const { return fastOff() ? 0 : untaggedVid(cfg_.limits.vlan); }
  VidSet fastTagged() const { return fastOff() || !vlan_on_ ? VidSet() : cfg_.limits.vlan.tagged; }
  // The port's capture (capture.h), or null. Datapath thread.
  Capture* capture() const noexcept { return capture_; }
  // on_fast: the fast path's programs copy what they carry of the port's
  // frames, so they stay on it (capture.h).
  void setCapture(Capture* c, bool on_fast = false) noexcept {
    capture_ = c;
    capture_on_fast_ = c && on_fast;
  }
  bool captureOnFast() const noexcept { return capture_on_fast_; }
  // Unknown-unicast storm control (PortLimits::storm_unknown), vdevd's own
  // bucket (datapath thread): whether the port may flood one more unicast
  // frame to an unknown MAC now. The same bucket as the programs' (see
  // bpf/vdev_limits.h): time as credit, a frame costs 1e9 / rate ns.
  bool unknownFloodOk(uint64_t now_ns) noexcept {
    const uint32_t rate = cfg_.limits.storm_unknown;
    if (!rate) return true;
    constexpr int64_t kDepth = int64_t(PortLimits::kStormBurstMs) * 1000000;
    int64_t c = now_ns > unknown_last_ns_ + uint64_t(kDepth) ? kDepth
                                                              : unknown_credit_ns_ + int64_t(now_ns - unknown_last_ns_);
    unknown_last_ns_ = now_ns;
    unknown_credit_ns_ = std::min(c, kDepth);
    if (unknown_credit_ns_ < 0) return false;
    unknown_credit_ns_ -= int64_t(1000000000ull / rate);
    return true;
  }
  // Whether what it receives may take the fast path: fast-rx on and an
  // index inside the fast path's maps (kFastPathPorts).
  bool fastRxPossible() const { return cfg_.fast_rx && index_ < kFastPathPorts; }
  // The hook in use (kXdp or kTc once attached; the configured one before).
  PortHook hook() const { return hook_; }
  // Why the port is not at the hook `auto` chose for it ("" if it is): its
  // tc attach failed, and it went to XDP (attachDevice()).
  const std::string& hookNote() const { return hook_note_; }
  // PortConfig::peer_napi.
  bool peerNapi() const { return cfg_.peer_napi; }
  // Whether its skb program is attached to its device (the tc hook).
  bool tcAttached() const { return tc_attached_; }
  // Whether its sockets receive (kXdp): the datapath polls them for RX and
  // keeps their fill rings full. A kTc port's frames come through the punt
  // device.
  bool receives() const { return hook_ != PortHook::kTc; }
  // Its receiving queues' fill ring size (XskConfig::fill_size).
  uint32_t fillSize() const { return cfg_.xsk.fill_size; }
  // The device is a veth.
  bool isVeth() const { return driver_ == "veth"; }
  // The device is a netkit's primary end: its skb program is the pair's
  // peer program (TcPath::attach), never at XDP.
  bool isNetkit() const { return driver_ == "netkit"; }
  // A container's or VM's end, not an uplink: a veth, a tap, a netkit.
  bool isGuestEnd() const { return driver_ == "veth" || driver_ == "tun" || driver_ == "netkit"; }
  // A veth whose peer is in another network namespace than vdevd's: the
  // skb fast path delivers into the peer with bpf_redirect_peer. The kernel
  // drops a peer redirect to a peer in the caller's own namespace
  // (skb_do_redirect), so a veth with its peer here (a host-side port) is
  // sent to with bpf_redirect to its egress, which arrives at the peer
  // too. As the kernel reported it when the port was attached or its link
  // last came up (refreshPeerNetns()).
  bool redirectPeer() const { return redirect_peer_; }
  // Owner thread: asks the kernel again where the veth's peer is (it may
  // have moved: its link went down and up with the move). Returns whether
  // redirectPeer() changed.
  bool refreshPeerNetns();
  // The device identity it attaches to only (PortConfig::identity).
  const std::optional<DeviceIdentity>& identity() const { return cfg_.identity; }
  // Why the port is not attached while it waits for a device ("" while it
  // has one): the device of its name that it refused, and why, or which
  // device it waits for. Owner thread (and statistics on it).
  std::string linkNote() const;
  // Owner thread: a device of the port's name (ifindex) does not carry its
  // identity; `why` says how. Remembered so that the same device is looked
  // at once, not on every check.
  void refuseDevice(int ifindex, std::string why) {
    refused_ifindex_ = ifindex;
    refused_why_ = std::move(why);
  }
  int refusedIfindex() const { return refused_ifindex_; }
  const std::string& driver() const { return driver_; }
  // An uplink: a device that is neither a veth nor a tap (a NIC, a VXLAN or
  // Geneve tunnel, a bond) -- the way to stations behind other hosts.
  bool isUplink() const { return !driver_.empty() && !isGuestEnd(); }
  // Owner thread (Datapath::checkUplinkMtus): whether the port's MTU is
  // larger than an uplink's, as last looked at (and logged).
  bool mtuOverUplink() const noexcept { return mtu_over_uplink_; }
  void setMtuOverUplink(bool over) noexcept { mtu_over_uplink_ = over; }

  // The calling thread's counter block.
  PortCounters& counters() noexcept { return counters_[threadIndex() % kMaxThreads]; }
  PortCounterSnapshot snapshot() const;
  uint64_t txOutstanding() const;  // owner thread or quiescent
  // Frames on a TX ring that the kernel has not taken yet (a backed-up
  // device: a tap whose VM stopped reading). Copy mode sends only on a
  // kick, so they wait for kickPending() (housekeeping, every 100 ms while
  // there are any: Datapath::idleTimeoutMs). Owner thread.
  bool txPending() const noexcept;
  void kickPending() noexcept;
  QueueAccounting accounting() const;  // owner thread or quiescent

  // A port whose device does not exist yet: kAbsent until a device of that
  // name appears (then attachDevice()).
  static Result<std::unique_ptr<Port>> absent(const std::string& ifname, uint16_t index,
                                              const PortConfig& cfg,
                                              const std::vector<std::array<uint8_t, 6>>& host_macs);

  // Owner thread: opens one socket per queue the device has (up to the
  // port's queue count) and registers it with the XDP program (after a link
  // came back up). Does not change the link state. A receiving port whose
  // device offers zero-copy shares anchors.zerocopy (or registers the area
  // anew and tries XDP_ZEROCOPY there); every other socket shares
  // anchors.copy (or registers it anew in copy mode).
  Status openSockets(FramePool& pool, const UmemAnchors& anchors);
  // Queues of the port without a socket: the device has fewer RX queues
  // than the port (a multi-queue tap before the VM opened them all).
  uint32_t unboundQueues() const;
  // Owner thread, live port: binds queues that appeared on the device since.
  // Returns how many were bound.
  Result<uint32_t> bindNewQueues(FramePool& pool, const UmemAnchors& anchors);
  // Owner thread: takes the port down (link down, device gone, removal): no
  // new frames are accepted (a live port goes kDown), frames in the delivery
  // rings and frames on the TX rings that the kernel never took are dropped
  // (port_down), the sockets are closed, and every frame they still held is
  // swept back into the pool. The port can be opened again with
  // openSockets(). Returns frames returned.
  uint32_t shutdown(FramePool& pool) noexcept;
  bool hasSockets() const;
  // XDP_STATISTICS summed over the open sockets and every socket the port
  // had before (owner thread).
  struct xdp_statistics xdpStats() const;
  // The same in two parts, for a reader on another thread: the closed
  // sockets' sum, and the open sockets' fds to ask (owner thread).
  const struct xdp_statistics& xdpStatsClosed() const { return xdp_closed_; }
  void socketFds(std::vector<int>& out) const;
  // Whether the host is a station behind the port (an uplink): its device
  // is not a veth or a tap (a NIC, a bond, a VLAN), or the host has an IPv4
  // address or an IPv6 address other than a link-local one on it. Then
  // multicast and broadcast frames for the host reach its stack
  // (bpf/vdev_frame_class.h). Set by HostAddrs once a second.
  bool carriesHost() const { return carries_host_; }
  void setCarriesHost(bool on) { carries_host_ = on; }
  // Puts carriesHost() into the port's program: at tc, the skb path's row;
  // at XDP, its flags, and the copy program at its ingress (tc: the skb
  // path, or null: none can be had; then the frames both need are switched
  // only). Idempotent.
  void applyHost(TcPath* tc);
  // An XDP port whose copies of frames for the host and the guests reach
  // vdevd through the punt device (applyHost).
  bool copiesToVdevd() const { return copy_tc_ != nullptr; }
  // Detaches the port's program, XDP or tc (device kept).
  void detachXdp();
  // The device was deleted with its program: never detach (the ifindex may
  // name another device by now), only forget it.
  void forgetProgram();
  // Owner thread: (re)binds to the device now carrying the port's name --
  // after it was deleted and created again: new ifindex, MAC, MTU, XDP
  // program, sockets. On success the port is live (Link::attached()).
  Status attachDevice(FramePool& pool, const UmemAnchors& anchors);

 private:
  // Drops a program counted for the port's limits whose counters go away
  // (its device's, or the copy program's row): into the port's own.
  void addLimitDrops(const LimitDrops& d);
  uint32_t kick(Queue& q) noexcept;
  uint32_t reap(Queue& q, FramePool& pool) noexcept;

  std::string name_;
  uint16_t index_;
  // What the datapath loop reads of every port in every round, together:
  // rxQuiet(), txBusy().
  uint32_t rx_quiet_ = 0;
  bool tx_busy_ = false;                 // drainTx's last look: frames in flight or left
  std::atomic<bool> tx_handed_{false};   // xmitBulk handed frames over since drainTx took them
  int ifindex_ = 0;
  std::atomic<uint32_t> mtu_;
  uint8_t mac_[6] = {};
  PortConfig cfg_;
  bool vlan_on_ = false;  // cfg_.limits.vlan.configured(), kept (the hot path asks per frame)
  Link link_;
  std::unique_ptr<XdpProgram> xdp_;
  PortHook hook_ = PortHook::kAuto;
  std::string hook_note_;  // hookNote()
  std::string driver_;  // ETHTOOL_GDRVINFO: "veth", "tun", a NIC's driver
  bool redirect_peer_ = false;  // redirectPeer()
  int refused_ifindex_ = 0;     // refuseDevice(): the last device refused, and why
  std::string refused_why_;
  bool tc_attached_ = false;
  bool carries_host_ = false;
  TcPath* copy_tc_ = nullptr;  // vdev_tc_copy is attached at the device's ingress (applyHost)
  bool copy_warned_ = false;   // "no copies" was logged
  std::vector<std::array<uint8_t, 6>> host_macs_;
  std::vector<std::unique_ptr<Queue>> queues_;
  uint32_t bound_ = 0;  // TX picks among queues [0, bound_): those with a socket, once opened
  struct xdp_statistics xdp_closed_ {};  // XDP_STATISTICS of sockets closed before
  std::unique_ptr<PortCounters[]> counters_;
  std::vector<Frame*> scratch_;  // drain burst (owner thread)
  int64_t unknown_credit_ns_ = 0;  // unknownFloodOk's bucket (datapath thread)
  uint64_t unknown_last_ns_ = 0;
  Capture* capture_ = nullptr;  // owned by the Datapath (datapath thread)
  bool capture_on_fast_ = false;
  bool mtu_over_uplink_ = false;
};

}  // namespace vdev::datapath
