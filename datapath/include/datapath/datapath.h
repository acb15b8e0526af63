// Datapath: one datapath thread, its UMEM (frame pool), its ports, and the
// switching logic between them.
//
// The thread polls its ports' RX rings in bursts, switches each burst (L2
// learning switch, or a static cross-connect), delivers per destination with
// one Port::xmitBulk() per burst, drains the delivery rings onto the TX rings
// and keeps the fill rings topped up. With no traffic it sleeps in poll() on
// its sockets and an eventfd that producers' doorbells and control requests
// write; under load it makes no syscall but the copy-mode TX kicks.
//
// Thread safety: addPort() before start(); stats() from any thread;
// stop()/teardown() from the thread that called start().
#pragma once

#include <linux/if_xdp.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "datapath/fast_path.h"
#include "datapath/fdb.h"
#include "datapath/frame_pool.h"
#include "datapath/port.h"
#include "datapath/stats.h"
#include "base/result.h"

namespace vdev::datapath {

enum class SwitchMode { kSwitch, kXconnect };

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
  uint64_t fdb_hold_ns = 1000ull * 1000 * 1000;
  uint32_t max_inflight = 0;
  // The kernel fast path for learned unicast (fast_path.h), switch mode
  // only. On by default; when it cannot be set up (a kernel without BTF or
  // raw tracepoints) vdevd warns and switches everything itself, unless
  // fast_path_required (--fast-path given explicitly) makes that an error.
  bool fast_path = true;
  bool fast_path_required = false;
  uint64_t idle_spin_ns = 50 * 1000;  // keep polling this long after the last frame before sleeping
  std::vector<std::array<uint8_t, 6>> host_macs;
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
    bool allow_absent = false;
  };
  Status addPort(const std::string& ifname, const PortOptions& opts);
  Status removePort(const std::string& ifname);
  size_t numPorts() const { return active_.size(); }
  // Whether learned unicast may take the kernel fast path (set up at create).
  bool fastPath() const { return fast_ != nullptr; }
  bool hasPort(const std::string& name);
  // Checks every port's device and link now (as housekeeping does every
  // 100 ms): the control thread calls it on rtnetlink link events.
  void checkLinks();
  Result<std::vector<Fdb::Entry>> fdbDump();
  Status fdbAdd(const uint8_t mac[6], const std::string& port);  // static entry
  Status fdbDel(const uint8_t mac[6]);
  // The name of the port at index ("" if none), as FDB entries name it.
  std::string portName(uint16_t index);
  void start();
  // Stops the thread (returns once it has exited).
  void stop();
  // After stop(): detaches the XDP programs, forwards what is still in the
  // RX rings, lets TX finish (bounded), closes the sockets and returns every
  // frame to the pool. Returns the number of frames not back in the pool
  // (0 unless there is a bug).
  uint32_t teardown();
  DatapathStats stats();

  // Runs fn on the datapath thread between two bursts (here, if the thread
  // is not running) and returns once it has run. Control path only.
  void runOnDatapath(const std::function<void()>& fn);

  // Exposed for unit tests of the switching logic.
  void forward(Port& in, Frame** frames, uint32_t n, uint64_t now_ns) noexcept;
  FramePool& pool() { return *pool_; }
  Fdb& fdb() { return fdb_; }
  Port& port(size_t index) { return *ports_[index]; }
  // Adds a port object built elsewhere (tests: a Port without a device).
  void adoptPort(std::unique_ptr<Port> p);

 private:
  explicit Datapath(const DatapathConfig& cfg, std::unique_ptr<FramePool> pool);
  void run();
  uint32_t rxBurst(Port& p, Port::Queue& q, uint64_t now_ns) noexcept;
  void refill(Port::Queue& q) noexcept;
  void enqueue(Port& dst, Frame* f) noexcept;
  void flushPending() noexcept;
  void housekeeping(uint64_t now_ns);
  void sleepUntilWork();
  // Looks again at the ports waiting for the kernel to release their old
  // sockets (relink_at_ns_).
  void relink();
  void collectOwned(DatapathStats& out) const;
  void serveControl();
  void rebuildActive();
  Port* findPort(const std::string& name) const;
  Status addPortNow(const std::string& ifname, const PortOptions& opts);
  Status removePortNow(const std::string& ifname);
  PoolStats poolStats() const;
  void killPort(Port& p, const char* why, bool forget_macs);
  void checkLink(Port& p);
  void checkLinkNow(Port& p);
  int anyLiveSocket() const;
  // Kernel fast path: the port's devmap entry follows its state; the MAC
  // map follows the FDB; counters merge into the port's.
  // The host's IPv4 addresses on each port's device, for the XDP programs
  // (ARP requests for them go to the host stack). Every second and on add.
  void refreshHostAddrs();
  // The host's own MACs -- every port's device MAC and the configured host
  // MACs -- which the switch never learns from a guest (host_mac_keys_).
  void refreshHostMacKeys();
  bool isHostMac(uint64_t key) const noexcept;
  void syncFastPort(Port& p);
  void syncFastFdb(uint64_t now_ns);
  void fastHousekeeping(uint64_t now_ns);
  PortCounterSnapshot portSnapshot(const Port& p) const;
  uint64_t fastDropsCountedByDevice(const Port& p);

  DatapathConfig cfg_;
  std::unique_ptr<FastPath> fast_;  // before the pool and ports: programs share its maps
  std::vector<uint8_t> fast_state_;     // by port index: 0 off, 1 on, 2 cannot be (no devmap key)
  std::vector<uint64_t> fast_refused_;  // by port index: refused frames seen at the last check
  struct FastDevBase {
    int ifindex = 0;      // the device the figures below belong to
    bool counts = false;  // tun/veth: its tx_dropped counts fast-path queue-full drops
    uint64_t base = 0;    // queue-full drops before this device appeared
  };
  std::vector<FastDevBase> fast_dev_base_;  // by port index
  std::unique_ptr<FramePool> pool_;
  Fdb fdb_;
  std::vector<std::unique_ptr<Port>> ports_;  // by port index; null: a free index
  std::vector<Port*> active_;                  // the non-null ones, in order (hot loops)
  PortCounterSnapshot removed_;  // summed counters of removed ports
  uint64_t removed_ports_ = 0;
  // Per destination port: frames collected during one burst.
  std::vector<std::vector<Frame*>> pending_;
  std::vector<uint32_t> pending_n_;
  std::vector<uint16_t> pending_ports_;  // ports with pending frames this burst
  std::vector<uint64_t> host_mac_keys_;  // sorted macKey()s (refreshHostMacKeys)
  std::vector<Frame*> burst_;
  uint16_t next_tag_ = 0;  // the owner tag of the next socket (XskSocket::tag())
  FileDesc wake_fd_;  // eventfd: doorbells and control requests
  int wake_fd_raw_ = -1;  // its number, the notifier context of every delivery ring
  FileDesc ctl_sock_;  // for SIOCGIFFLAGS (link state) and ethtool (driver names)

  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool running_ = false;
  bool torn_down_ = false;
  uint64_t last_hk_ns_ = 0, last_mtu_ns_ = 0;
  // When to look again at ports whose link came up while the kernel was
  // still releasing their old sockets (EBUSY); 0 = none waiting.
  uint64_t relink_at_ns_ = 0;

  // Control requests (stats, port add/remove, FDB): run on the owner thread.
  std::mutex call_mu_;
  std::mutex ctl_mu_;
  std::condition_variable ctl_cv_;
  std::atomic<bool> ctl_req_{false};
  const std::function<void()>* ctl_fn_ = nullptr;
  bool ctl_done_ = false;
};

uint64_t monotonicNs() noexcept;

}  // namespace vdev::datapath
