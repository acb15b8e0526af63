// Datapath: one datapath thread, its UMEM (frame pool), its ports, and the
// switching logic between them.
//
// The thread polls its ports' RX rings in bursts, switches each burst (L2
// learning switch, or a static cross-connect), delivers per destination with
// one Port::xmitBulk() per burst, drains the delivery rings onto the TX rings
// and keeps the fill rings topped up. With no traffic it sleeps in
// epoll_wait() on its sockets and an eventfd that producers' doorbells and
// control requests write; under load it makes no syscall but the copy-mode
// TX kicks.
//
// Thread safety: addPort() before start(); stats() from any thread;
// stop()/teardown() from the thread that called start(). The public
// methods are vdevd's; unit tests reach further in through
// DatapathTestAccess (tests/unit/datapath_test_access.h).
//
// The class is a façade over objects that own one concern each, with the
// invariant in their header (FillBudget, IdleSleep, CaptureRegistry,
// Batches, PortTable, HostAddrs, FastSync, HeldFrames, ControlChannel), and
// over one file per concern (vdev/datapath/src):
//   datapath.cpp      creation, the thread and its loop, housekeeping
//   idle_sleep.cpp    the idle sleep: doorbells and one epoll_wait (IdleSleep)
//   switching.cpp     the hot path: RX burst, fill-ring refill, forward(), per-destination
//                     batches (Batches, batches.h)
//   fill_budget.cpp   the fill rings' share of the pool and each queue's target (FillBudget)
//   port_table.cpp    the ports by index (PortTable), adding and removing ports
//   link.cpp          the link state machine's checks (Link, link_state.h), the relink timer
//   host_addrs.cpp    the host's MACs and IP addresses (HostAddrs)
//   fast_sync.cpp     the kernel fast path kept in step with ports and FDB (FastSync)
//   control.cpp       control requests run on the datapath thread (ControlChannel)
//   capture.cpp       captures: start, stop, the fast path's copies (CaptureRegistry)
//   teardown.cpp      shutdown: drain, close, every frame back
//   held_frames.cpp   a closed zero-copy socket's frames until the kernel lets go (HeldFrames)
//   stats.cpp         statistics
#pragma once

#include <linux/if_xdp.h>

#include <array>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "datapath/batches.h"
#include "datapath/capture_registry.h"
#include "datapath/control_channel.h"
#include "datapath/fast_path.h"
#include "datapath/fast_sync.h"
#include "datapath/fdb.h"
#include "datapath/fill_budget.h"
#include "datapath/frame_pool.h"
#include "datapath/held_frames.h"
#include "datapath/host_addrs.h"
#include "datapath/idle_sleep.h"
#include "datapath/link_state.h"
#include "datapath/port.h"
#include "datapath/port_table.h"
#include "datapath/punt.h"
#include "datapath/stats.h"
#include "datapath/tc_path.h"
#include "spec/port_spec.h"

namespace vdev::datapath {

using spec::SwitchMode;  // spec/port_spec.h
using spec::switchModeName;

// Host MACs a port at the XDP hook holds (DatapathConfig::host_macs, every
// one of them; vdevd refuses more --host-mac): more fail that port's add.
// The skb path's map is sized for however many there are.
inline constexpr size_t kMaxHostMacs = 64;

struct DatapathConfig {
  SwitchMode mode = SwitchMode::kSwitch;
  PortConfig port;
  uint32_t frames = 32768;
  uint32_t frame_size = 2048;
  uint32_t fdb_size = 4096;
  uint64_t fdb_ageing_ns = 300ull * 1000 * 1000 * 1000;
  // Hostile guests. A port learns at most fdb_max_per_port MACs (0: no
  // limit); a learned MAC moves to another port only after fdb_hold_ns of
  // silence on its own; a port's frames in flight (received, not yet back
  // in the pool) are bounded by max_inflight (0: frames / 4).
  uint32_t fdb_max_per_port = 256;
  // Learned MACs on the ports of one FDB group together (PortOptions::
  // fdb_group; vdevd: a uid's ports, --uid-max-fdb); 0: no limit.
  uint32_t fdb_max_per_group = 0;
  uint64_t fdb_hold_ns = 1000ull * 1000 * 1000;
  uint32_t max_inflight = 0;
  // The MAC table's hash key (Fdb); none: a random one (tests set it).
  std::optional<FdbKey> fdb_key;
  // Tests: the frames of a closed copy-mode socket wait for the kernel to
  // release its queue, as a zero-copy socket's do (HeldFrames).
  bool hold_copy_mode_frames = false;
  // Tests: every receiving port takes the path of a device that offers
  // zero-copy -- a registration of the UMEM area of its own, XDP_ZEROCOPY
  // tried there -- which on veth falls back to copy mode on that
  // registration: frames then cross registrations as they do between a
  // zero-copy NIC and the copy-mode ports.
  bool zerocopy_path_everywhere = false;
  // The kernel fast path for learned unicast (fast_path.h), switch mode
  // only. On by default; when it cannot be set up (a kernel without BTF or
  // raw tracepoints) vdevd warns and switches everything itself, unless
  // fast_path_required (--fast-path given explicitly) makes that an error.
  bool fast_path = true;
  bool fast_path_required = false;
  uint64_t idle_spin_ns = 50 * 1000;  // keep polling this long after the last frame before sleeping
  std::vector<std::array<uint8_t, 6>> host_macs;  // at most kMaxHostMacs for XDP ports
  // The skb path (tc_path.h) for ports whose hook is kTc, set up with the
  // first such port: its punt device is named punt_name + "k"/"u" (at
  // most 13 characters; one per vdevd in a network namespace).
  std::string punt_name = "vdevpunt";
  // How the skb programs are attached (tc_path.h): kAuto probes the
  // kernel once (tcx where it has it, else classic tc: clsact).
  TcAttach tc_attach = TcAttach::kAuto;
  // How a device's XDP features are known (xdp_features.h): kAuto asks the
  // netdev family where the kernel has it (6.3), else goes by the driver.
  XdpFeatures::Source xdp_features = XdpFeatures::Source::kAuto;
  // Every port's storm control and policer unless it has its own
  // (PortOptions::limits): by default a guest may send 10000 broadcast,
  // 10000 multicast and 10000 unknown-unicast frames a second, enough for
  // ARP, ND, DHCP and mDNS of many stations, and little enough that one
  // guest's flood costs the others next to nothing; no policer.
  PortLimits limits{.storm_bcast = 10000, .storm_mcast = 10000, .storm_unknown = 10000};
};

class Datapath {
 public:
  static Result<std::unique_ptr<Datapath>> create(const DatapathConfig& cfg);
  ~Datapath();

  // Attach / detach a port. Before start() or while running (the work is
  // done on the datapath thread between bursts). Errors: EEXIST, ENOENT,
  // ENOSPC, and whatever opening the device reports.
  Status addPort(const std::string& ifname);
  // Per-port options. allow_absent: a device that does not exist (yet) is
  // not an error: the port waits for it and is attached when it appears.
  // fast_rx false: frames received on the port always go through vdevd
  // (PortConfig::fast_rx); absent: on.
  struct PortOptions {
    std::optional<uint32_t> queues;
    std::optional<XdpMode> xdp_mode;
    std::optional<bool> fast_rx;
    std::optional<PortHook> hook;
    bool isolated = false;  // PortConfig::isolated
    PortLimitOptions limits;  // over DatapathConfig::limits
    bool peer_napi = false;   // PortConfig::peer_napi: a veth vdevd made with GRO on its peer
    bool allow_absent = false;
    // A device vdev made for the port (PortConfig::identity): the port
    // attaches only to the device that carries it. With allow_absent, a
    // device of the name that does not is waited past; without, it is an
    // error (EPERM).
    std::optional<DeviceIdentity> identity;
    // The port's index, which must be free (tests: a port beyond the fast
    // path's maps without a thousand before it); absent: the lowest free one.
    std::optional<uint16_t> index;
    // Its FDB group (Fdb::setPortGroup, 1..Fdb::kMaxGroups - 1; 0: none),
    // whose ports together learn at most fdb_max_per_group MACs.
    uint16_t fdb_group = 0;
  };
  Status addPort(const std::string& ifname, const PortOptions& opts);
  // The MACs learned on the ports of each group, by group (control path).
  std::vector<uint32_t> fdbGroupUse(std::span<const uint16_t> groups);
  Status removePort(const std::string& ifname);
  // A running port's options, changed (vdevctl port set): each field given
  // replaces the port's, the others stay. isolated: at once, for vdevd and
  // the kernel fast path (its MACs' entries are rewritten with the new
  // mark; nothing is forgotten). limits: the port's program and vdevd
  // enforce the new ones at once, their buckets full. ENOENT: no such port.
  struct PortChange {
    std::optional<bool> isolated;
    PortLimitOptions limits;
  };
  Status setPort(const std::string& ifname, const PortChange& change);
  size_t numPorts() const { return ports_.size(); }
  // Whether learned unicast may take the kernel fast path (set up at create).
  bool fastPath() const { return fast_ != nullptr; }
  // How the skb programs are attached (kTcx or kClsact: decided at create),
  // and how devices' XDP features are known (kNetdev or kDriver).
  TcAttach tcAttach() const { return cfg_.tc_attach; }
  XdpFeatures::Source xdpFeaturesSource() const { return features_.source(); }
  // The kernel features the datapath uses now (control path): those the
  // kernel may lack, which vdevd does without (docs/architecture.md,
  // "Kernel features").
  struct KernelUse {
    bool tcx = false;            // the skb programs at tcx (else clsact), once the skb path is set up
    bool clsact = false;         // ... at clsact
    bool multi_buffer = false;   // AF_XDP multi-buffer (XDP_USE_SG) on vdevd's copy-mode sockets
    bool xdp_features = false;   // the netdev family's xdp-features (else the driver's name)
    bool xdp_frags = false;      // the XDP program loaded frags-aware (xdp.frags)
    bool redirect_peer = false;  // the skb path's fast path delivers into veth peers (bpf_redirect_peer)
    bool busy_poll = false;      // preferred busy polling on the AF_XDP sockets
  };
  KernelUse kernelUse();
  bool hasPort(const std::string& name);
  // Checks every port's device, link and MTU now (as housekeeping does every
  // 100 ms without link events): the control thread calls it on rtnetlink
  // link events.
  void checkLinks();
  // The devices link events named (RTM_NEWLINK / RTM_DELLINK): only the
  // ports whose device, refused device or name is one of them are looked at
  // (checkLinks() for each of those), not every port -- anyone who is root
  // in a user namespace can make link events in a loop. After lost events
  // (ENOBUFS) the caller calls checkLinks().
  struct LinkRef {
    int ifindex = 0;
    std::string name;
  };
  void checkLinks(const std::vector<LinkRef>& named);
  // on: the caller calls checkLinks() on every link event, and after events
  // were lost (ENOBUFS). Housekeeping then stops looking at live ports with
  // every queue bound (their link state and MTU change only with an event);
  // it still polls ports that are down, absent or waiting for queues.
  void setLinkEvents(bool on);
  // Whether the kernel fast path's destinations (devices that take
  // redirected XDP frames) are checked again every second (off) or only
  // when the caller calls checkFastPorts() -- on a netdev notification that
  // a device's XDP features changed, or after some were lost (on).
  void setXdpFeatureEvents(bool on);
  // on: the caller calls refreshHostAddrs() whenever an address was added
  // or removed on this host (rtnetlink address events) and after events
  // were lost; housekeeping then stops reading every address once a second
  // (getifaddrs: a dump of every link and address, the largest idle cost
  // with many ports).
  void setAddrEvents(bool on);
  void refreshHostAddrs();
  // ifindexes: the devices to look at (empty: every port).
  void checkFastPorts(const std::vector<int>& ifindexes = {});
  Result<std::vector<Fdb::Entry>> fdbDump();
  // A static entry of mac in VLAN vid (a VLAN the port carries).
  Status fdbAdd(const uint8_t mac[6], const std::string& port, uint16_t vid = kVidDefault);
  Status fdbDel(const uint8_t mac[6], uint16_t vid = kVidDefault);
  // How many more ports fit (control path). pool: one-queue ports at the
  // XDP hook whose fill-ring floor the frame pool has room for (port add
  // refuses the next one; ports at the tc hook take none). maps: ports the
  // kernel fast path's and the skb path's per-port maps have entries for.
  struct PortRoom {
    uint32_t pool = 0, maps = 0;
  };
  PortRoom portRoom();
  // Captures (capture.h; vdevctl capture). Control path. captureStart:
  // the port's frames in dirs (Capture::kRx, kTx or both), at most snaplen
  // bytes of each, up to `slots` frames held for the reader. With the
  // kernel fast path the port keeps it: its programs copy what they carry
  // (capture.h); without, its frames all pass vdevd, which copies them. Errors:
  // ENOENT (no such port), ENOSPC (kMaxCaptures running, or one on the
  // port already), or what `admit` returned. The slots are allocated (and
  // zeroed) on the calling thread, never the datapath's: admit(bytes) is
  // called there first with Capture::bytes() of the capture to be made
  // (the caps per uid), and a refusal leaves nothing behind. captureGet:
  // the capture, or null (stopped, or never started); its frames are read
  // from the calling thread (Capture::read). captureStop: ends it; the
  // unread frames go with it. filter: only the frames it matches are
  // copied (capture_filter.h; no fields: all), by vdevd and by the programs.
  static constexpr size_t kMaxCaptures = CaptureRegistry::kMax;
  using CaptureAdmit = std::function<Status(uint64_t bytes)>;
  Result<uint32_t> captureStart(const std::string& ifname, uint8_t dirs, uint32_t snaplen, uint32_t slots,
                                const CaptureAdmit& admit = {}, const CaptureFilter& filter = {});
  Capture* captureGet(uint32_t id);
  void captureStop(uint32_t id);

  // The hook the port is at now (kXdp or kTc; kAuto while its device has
  // never been attached); nullopt: no such port. Control path.
  std::optional<PortHook> portHook(const std::string& ifname);
  void start();
  // Stops the thread (returns once it has exited).
  void stop();
  // After stop(): detaches the XDP programs, forwards what is still in the
  // RX rings, lets TX finish (bounded), closes the sockets and returns every
  // frame to the pool. Returns the number of frames not back in the pool
  // (0 unless there is a bug).
  uint32_t teardown();
  // Any thread. The datapath thread is held for one step that copies
  // counters and ring accounting (no syscall); the BPF map and sysfs reads
  // run on the calling thread (see collectOwned below).
  DatapathStats stats();
  // The frame pool (vdevd: its size, at exit).
  FramePool& pool() { return *pool_; }

 private:
  // Tests reach inside through it (tests/unit/datapath_test_access.h):
  // forward(), fdb_, ports_, adoptPort(), runOnDatapath(), statsSplit().
  friend struct DatapathTestAccess;

  // How stats() took them so far: off_thread, with the BPF and sysfs reads
  // on the calling thread; fallback, all on the datapath thread (the ports
  // changed during kStatsRetries tries in a row); kernel_reads_on_datapath:
  // the times those reads ran on the datapath thread (= fallback, unless a
  // bug moved them back). Any thread.
  struct StatsSplit {
    uint64_t off_thread = 0, fallback = 0, kernel_reads_on_datapath = 0;
  };
  StatsSplit statsSplit() const {
    return {split_off_.load(std::memory_order_relaxed), split_fallback_.load(std::memory_order_relaxed),
            split_on_dp_.load(std::memory_order_relaxed)};
  }

  // Runs fn on the datapath thread between two bursts (here, if the thread
  // is not running) and returns once it has run. Control path only.
  void runOnDatapath(const std::function<void()>& fn);

  // An RX burst's frames of one ingress port switched and handed over
  // (switchFrames, then flushPending).
  void forward(Port& in, Frame** frames, uint32_t n, uint64_t now_ns) noexcept;
  // Adds a port object built elsewhere (addPortNow; tests: a Port without a device).
  void adoptPort(std::unique_ptr<Port> p);

  explicit Datapath(const DatapathConfig& cfg, std::unique_ptr<FramePool> pool);

  // The thread (datapath.cpp).
  void run();
  void housekeeping(uint64_t now_ns);
  // The idle sleep (IdleSleep) with what else decides it.
  void sleepUntilWork();

  // The hot path (switching.cpp).
  uint32_t rxBurst(Port& p, Port::Queue& q, uint64_t now_ns) noexcept;
  // A burst from the punt device: each frame carries the index of the
  // port it came from (VDEV_PUNT_VID), which is taken off before it is
  // switched as that port's.
  uint32_t rxPuntBurst(Port::Queue& q, uint64_t now_ns) noexcept;
  // The whole frames on the socket's RX ring, up to a burst's descriptors
  // (a chain longer than that alone), as vdevd's: their heads in the burst,
  // each chain linked (Frame::next). Returns the frames; descs: the
  // descriptors released, bytes: the frames' bytes.
  uint32_t takeRx(XskSocket& s, uint32_t& descs, uint64_t& bytes) noexcept;
  // forward() without the final flushPending(): frames of one ingress port,
  // switched into the per-destination batches.
  void switchFrames(Port& in, Frame** frames, uint32_t n, uint64_t now_ns) noexcept;
  // Tops q's fill ring up to its target, which follows its traffic
  // (FillBudget::want).
  void refill(Port::Queue& q) noexcept;
  void enqueue(Port& dst, Frame* f) noexcept;
  // One destination's batch to Port::xmitBulk: what it refuses for being
  // down is dropped here, what it takes is copied to its capture.
  void xmitPending(Port& dst, std::span<Frame* const> batch, uint32_t flags) noexcept;
  // Copies frames to cap (Capture::kRx or kTx), one timestamp for all.
  void captureFrames(const Port& port, Capture& cap, uint8_t dir, std::span<Frame* const> frames) noexcept;
  // enqueue() of a frame of VLAN vid (untagged, as inside the switch): with
  // its tag pushed if dst carries vid tagged.
  void enqueueIn(Port& dst, uint16_t vid, Frame* f) noexcept;
  void flushPending() noexcept;
  // Counts one drop of `why` in counters c (the port it is charged to) and
  // returns f to the pool: the end of every frame forward() refuses.
  void drop(PortCounters& c, DropReason why, Frame* f) noexcept {
    c.drops[why].add(1);
    pool_->free(f);
  }
  // The same for a whole batch (a destination that went down).
  void drop(PortCounters& c, DropReason why, std::span<Frame* const> fs) noexcept {
    c.drops[why].add(fs.size());
    pool_->freeBulk(fs);
  }

  // The host's view of each port (host_addrs.cpp): after host_.refresh(),
  // every port's program learns whether the host is behind it.
  void syncHostPorts();

  // Ports (port_table.cpp).
  Status addPortNow(const std::string& ifname, const PortOptions& opts);
  Status removePortNow(const std::string& ifname);
  Status setPortNow(const std::string& ifname, const PortChange& change);
  // Bound sockets of live ports whose UMEM registrations new sockets share,
  // one of each mode (-1: none).
  UmemAnchors anchors() const;
  // The skb path and its punt device, set up when the first port that
  // wants it is added. Errors: loading the program, creating the device.
  Status ensureTcPath();

  // Link state (link.cpp): a port transmits only while its device is up
  // with carrier.
  void checkLink(Port& p);
  void checkLinkNow(Port& p);
  void killPort(Port& p, const char* why, bool forget_macs);
  // Reads the device's MTU (one ioctl) into the port and the skb path.
  void refreshMtu(Port& p);
  // Logs each port whose MTU becomes larger than the smallest MTU of an
  // uplink (Port::isUplink), once: its longer frames to that uplink are
  // dropped as oversize.
  void checkUplinkMtus();
  // Looks again at the ports waiting for the kernel to release their old
  // sockets (LinkState::kReleasing), when relink_ is due.
  void relink();

  // A link event's look at one port: its refused device forgotten, its
  // link and MTU checked (control.cpp).
  void checkLinkEvent(Port& p);

  // Statistics (stats.cpp). stats() takes them in two parts: on the
  // datapath thread, in one step without syscalls, what must agree with its
  // own state (collectOwned: vdevd's counts, ring and pool accounting, and
  // a PortRows per port); then on the calling thread, from the PortRows
  // alone, the kernel's counters (readRows: BPF map rows, sysfs), checked
  // against rows_seq_ afterwards.
  //
  // Port lifetime: only the datapath thread creates, re-attaches and
  // destroys a Port and changes which BPF rows are a port's (an XDP counter
  // slot, a tc row, a fast-path row at its index: all reused by later
  // ports), and it does that only inside runOnDatapath() closures and
  // housekeeping's link and host checks, each bracketed by rows_seq_ (odd
  // while it runs). The calling thread touches no Port: it reads map rows
  // by the slot or index captured in the step, through objects that live as
  // long as the Datapath (XdpObject, TcPath, FastPath, PuntDevice: made
  // once, destroyed only by teardown()). If rows_seq_ moved during its
  // reads, a row may have been folded into a port's counts or reused, and
  // the statistics are taken again (kStatsRetries, then all of it on the
  // datapath thread, as before).
  struct PortRows {
    uint16_t index = 0;
    bool punt = false;
    std::string name;                    // the device's, for sysfs
    const XdpObject* xdp_obj = nullptr;  // at the XDP hook: its program's slot
    uint32_t xdp_slot = 0;
    const TcPath* tc = nullptr;  // the skb path, if there
    bool tc_hook = false;        // at the tc hook: the skb program's row at index
    bool copies = false;         // at XDP with the copy program: its row at index too
    int ifindex = 0;
    FastDevBase dev;  // the fast path's view of its device (FastSync's record)
    const PuntDevice* punt_dev = nullptr;  // punt: its device (lives until teardown)
    // XDP_STATISTICS: the port's closed sockets' sum, and its open sockets,
    // asked by fd (a socket closed or replaced meanwhile moves rows_seq_).
    struct xdp_statistics xdp_closed {};
    std::vector<int> xsk_fds;
  };
  static constexpr int kStatsRetries = 3;
  void collectOwned(DatapathStats& out, std::vector<PortRows>& rows);
  // What collectOwned leaves for the calling thread: every BPF and sysfs
  // read, into out.ports (rows[i] describes out.ports[i]). Any thread.
  void readKernel(DatapathStats& out, const std::vector<PortRows>& rows);
  PoolStats poolStats() const;
  PortRows rowsOf(const Port& p) const;
  // What a port's program dropped (limits, the skb path's oversize) and the
  // kernel fast path's counts, from its rows: any thread.
  PortCounterSnapshot readRows(const PortRows& r) const;
  // A port's counts: vdevd's and readRows' -- what stays in the totals when
  // it is removed. Datapath thread.
  PortCounterSnapshot portSnapshot(const Port& p) const;
  uint64_t fastDropsCountedByDevice(const PortRows& r);
  uint64_t dev_epoch_ = 0;  // FastDevBase::epoch's last value (datapath thread)
  // Bracket every change of a port's existence or BPF rows (see above);
  // datapath thread (or the one caller runOnDatapath runs inline for).
  // The release fence of begin pairs with the acquire fence in stats()
  // before it reads rows_seq_ again; end's release store with the step's
  // read of it, made on this same thread.
  void rowsChangeBegin() noexcept {
    rows_seq_.store(rows_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void rowsChangeEnd() noexcept {
    rows_seq_.store(rows_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  std::atomic<uint64_t> rows_seq_{0};
  std::atomic<uint64_t> split_off_{0}, split_fallback_{0}, split_on_dp_{0};  // statsSplit()
  // Statistics readers, one at a time: fast_dev_base_ is theirs.
  std::mutex stats_mu_;
  std::vector<FastDevBase> fast_dev_base_;  // by port index (fastDropsCountedByDevice)

  DatapathConfig cfg_;
  XdpFeatures features_;            // every port's PortConfig::features
  std::unique_ptr<FastPath> fast_;  // before the pool and ports: programs share its maps
  FastSync fast_sync_;              // fast_ kept in step with the ports and the FDB
  // The XDP program of every port at the XDP hook: after fast_ (it shares
  // its maps), before the ports (each port's attachment holds entries in
  // its maps). Loaded at the first such port.
  std::unique_ptr<XdpObject> xdp_;
  std::unique_ptr<TcPath> tc_;      // the skb path; null until a port wants it (ensureTcPath)
  bool tc_warned_ = false;          // "no skb path" was logged
  bool tc_tried_for_copies_ = false;  // syncHostPorts tried ensureTcPath for an uplink at XDP
  std::unique_ptr<FramePool> pool_;
  std::unique_ptr<HeldFrames> held_;  // closed zero-copy sockets' frames, until the kernel lets go
  Fdb fdb_;
  PortTable ports_;
  // The punt device (punt.h) and its far end's port: frames from the skb
  // path come in there. Destroyed before the pool, after the ports' tc
  // programs are gone (teardown).
  std::unique_ptr<PuntDevice> punt_dev_;
  std::unique_ptr<Port> punt_;
  PortCounterSnapshot removed_;  // summed counters of removed ports
  uint64_t removed_ports_ = 0;
  HostAddrs host_;
  Batches batches_;  // hot path: the RX burst, and its frames per destination port
  FillBudget fill_;  // the fill rings' share of the pool (refill, port add)
  // The loop's rounds, and how often a quiet port is looked at (run()):
  // its RX rings only after a round that received at least kBusyRound frames
  // (below that every port is looked at every round, in index order, as
  // the frames of a light load came).
  static constexpr uint32_t kScanRounds = 16;
  static constexpr uint32_t kBusyRound = 64;
  uint32_t round_ = 0;
  FileDesc wake_fd_;       // eventfd: doorbells and control requests
  int wake_fd_raw_ = -1;   // its number, the notifier context of every delivery ring
  FileDesc ctl_sock_;      // for SIOCGIFFLAGS (link state) and ethtool (driver names)
  IdleSleep idle_;  // the thread's sleep while there is no work (sleepUntilWork)

  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool running_ = false;
  bool torn_down_ = false;
  uint64_t last_hk_ns_ = 0, last_mtu_ns_ = 0;
  bool link_events_ = false;  // setLinkEvents
  bool xdp_feature_events_ = false;  // setXdpFeatureEvents
  bool addr_events_ = false;  // setAddrEvents
  RelinkTimer relink_;  // ports in LinkState::kReleasing are looked at again when due
  // Running captures by id, and those whose copies the fast path makes.
  CaptureRegistry captures_;
  // The port's capture stopped: its programs stop copying, or, unless the
  // port is being removed, its fast path comes back. Datapath thread.
  void detachCapture(Port& p, bool removing = false);
  // FastPath's copies (FastPath::CaptureFn): into the port's capture.
  static void fastCaptured(void* ctx, uint16_t port_index, uint8_t dir, uint64_t time_ns, uint32_t wire_len,
                           const uint8_t* bytes, uint32_t kept);
  // Port::fastVid() (its VLAN settings, whether it has a capture) into
  // FastSync's record and its programs' rows; the caller has its stations'
  // kernel entries follow (Fdb::notePort or flushPort).
  void applyFastVid(Port& p);
  ControlChannel control_;
};

uint64_t monotonicNs() noexcept;

}  // namespace vdev::datapath
