// vdevd's side of the control protocol: turns requests from vdevctl (and the
// CNI plugin) into datapath and device operations, and keeps the persistent
// state in step.
//
// Who may do what. Root may do everything. Any other client (a member of
// --group) may read everything (ports, counters, MAC table, info) and
// change only what is its own:
//   - PORT_ADD only with CREATE: no existing device (an uplink, another
//     user's tap) can be attached; and only with the fields a port's owner
//     may set (port_policy.h: its device's MAC, MTU, peer, owner, group,
//     fast rx, tag), never what bounds its traffic or takes of the host
//     (VLANs, isolation, anti-spoofing, guards, storm control, policer,
//     queues, hook, XDP mode): those are vdevd's defaults on its port;
//   - a tap only owned by the caller (OWNER_UID absent means the caller),
//     with a GROUP_GID only of a group the caller is in;
//   - a veth only with its peer in a network namespace the caller
//     administers: one owned by a user namespace the caller's uid created
//     (rootless runtimes, `unshare -Urn`), and for PEER_NETNS_PID a process
//     of the caller's; never vdevd's own namespace;
//   - PORT_DEL only of a port the caller added (the adder's uid is kept
//     with the port, in the state file too);
//   - no FDB_ADD or FDB_DEL (a static entry can take any MAC from any port);
//   - PORT_SET only of fields the table gives the port's owner, on its
//     own port; none of PORT_SET's is (a port's isolation and limits bound
//     what its guest may send and reach, the operator's to set, not the
//     guest owner's).
// A refusal is EPERM with the rule that refused it. And a member is
// capped (uid_quota.h): its ports, its captures' memory, its requests a
// second (EDQUOT, ENOBUFS, EAGAIN, each naming the cap and the use).
//
// Every change is all or nothing: a port whose device vdevd created is
// removed again when attaching it fails, and a change whose state cannot be
// saved is undone; the reply says what failed.
//
// Thread safety: the control thread only.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "datapath/datapath.h"
#include "daemon/snapshot_gate.h"
#include "daemon/state_file.h"
#include "proto/server.h"
#include "uid_quota.h"

namespace vdev::daemon {

struct ControlContext {
  datapath::Datapath* dp = nullptr;
  DaemonState* state = nullptr;
  std::string state_path;  // empty: no persistence
  datapath::SwitchMode mode = datapath::SwitchMode::kSwitch;
  bool fast_path = false;  // --fast-path: veths vdevd creates get GRO on their container end
  // --default-hook: a veth vdevd creates for a port at the XDP hook gets its
  // container end's TX checksum offload turned off (see rtnl::VethSpec).
  datapath::PortHook default_hook = datapath::PortHook::kAuto;
  std::chrono::steady_clock::time_point started;
  std::vector<std::string> start_issues;  // what could not be restored at start (INFO)
  // The caps per non-root uid (uid_quota.h); null: none (tests).
  UidQuota* quota = nullptr;
};

// Open-file budget of one port with one queue: what `vdevctl info` divides
// the free part of RLIMIT_NOFILE by. A port holds its AF_XDP socket (one a
// queue; at tc a TX-only one): the XDP program and its maps, or the skb
// path's, are one set for every port, loaded once (measured: 250 ports at
// the XDP hook hold 262 descriptors). One more for a margin.
inline constexpr uint32_t kFdsPerPort = 2;

// Starts a saved port from its record (at start and on each retry): the
// record's own options over vdevd's defaults; a device not there (or not
// the one vdev made) is waited for, not an error. A member's port learns
// within its uid's cap (quota; the cap on its ports is not applied: root
// may have lowered it). Control thread only.
Status restorePort(datapath::Datapath& dp, const PortRecord& rec, UidQuota* quota);

// Retrying a saved port that failed to start: the first retry after
// kRetryFirst, each later one after twice the wait before, at most kRetryMax.
inline constexpr std::chrono::milliseconds kRetryFirst{1000};
inline constexpr std::chrono::milliseconds kRetryMax{30000};

class DaemonControl : public vdev::proto::ControlHandler {
 public:
  explicit DaemonControl(ControlContext ctx)
      : ctx_(std::move(ctx)),
        stats_(kStatsPeriod, [this] { return ctx_.dp->stats(); }),
        metrics_(kStatsPeriod, [this] { return renderMetrics(); }) {}
  // How often at most GET /metrics takes a statistics snapshot
  // (SnapshotGate; its datapath-thread step, and its map and sysfs reads
  // on this thread: Datapath::stats): whoever can connect may scrape in a loop.
  static constexpr std::chrono::milliseconds kStatsPeriod{250};
  vdev::proto::Reply handle(const vdev::proto::Request& req, const vdev::proto::PeerCred& peer) override;
  // Stops the captures of a connection that closed.
  void disconnected(uint64_t conn) override;

  // Conversions, shared with the stats printing paths.
  static vdev::proto::StatsReply toStatsReply(const datapath::DatapathStats& s, const DaemonState& st,
                                         const std::string& only);
  static vdev::proto::PortInfo toPortInfo(const datapath::PortStats& p, const DaemonState& st);

  // GET /metrics (--metrics-listen): the text `vdevctl stats --prometheus`
  // prints, from what a STATS_GET of every port and an INFO_GET would
  // answer; the same text for every scrape of a kStatsPeriod (the
  // statistics and INFO's figures are taken once).
  std::shared_ptr<const std::string> metricsText();
  // How many times the statistics were collected (Datapath::stats).
  uint64_t statsCollections() const { return stats_.collections(); }

  // A saved port that failed to start (its record well-formed and allowed,
  // the attach refused: a pool too small for its queues, a device that
  // refuses XDP, ...). It stays in the state and the state file, inactive:
  // `port show` lists it with the reason (LINK_NOTE), INFO's start issues
  // name it, PORT_SET changes its record, PORT_DEL removes it; and it is
  // retried with backoff (retryParked) until it starts.
  void park(const std::string& name, std::string reason);
  // Retries the parked ports that are due. Returns the milliseconds until
  // the next one is due, -1 if none is parked. Called from the main loop.
  int retryParked();

 private:
  vdev::proto::Reply portAdd(const vdev::proto::PortAddRequest& r, const vdev::proto::PeerCred& peer);
  vdev::proto::Reply portDel(const vdev::proto::PortDelRequest& r, const vdev::proto::PeerCred& peer);
  vdev::proto::Reply portSet(const vdev::proto::PortSetRequest& r, const vdev::proto::PeerCred& peer);
  vdev::proto::Reply fdbGet();
  vdev::proto::Reply captureStart(const vdev::proto::CaptureStartRequest& r, const vdev::proto::PeerCred& peer);
  vdev::proto::Reply captureRead(uint32_t id, const vdev::proto::PeerCred& peer);
  vdev::proto::Reply captureStop(uint32_t id, const vdev::proto::PeerCred& peer);
  // The capture id of the connection peer.conn, its id and ended flag in m;
  // null if it has none of that id.
  datapath::Capture* ownCapture(uint32_t id, const vdev::proto::PeerCred& peer, vdev::proto::CaptureMsg& m);
  static vdev::proto::ErrorReply noCapture(uint32_t id);
  vdev::proto::InfoMsg info() const;
  Status persist();
  ControlContext ctx_;
  // Every statistics snapshot goes through it: fresh() for the control
  // socket's clients (root or the control group; exact counters), recent()
  // for GET /metrics (anyone who can connect), through metrics_.
  SnapshotGate<datapath::DatapathStats> stats_;
  std::string renderMetrics();
  SnapshotGate<std::string> metrics_;
  // Port names by port index, for FDB dumps; rebuilt (one stats() call)
  // after this class added or removed a port. Only the control thread adds
  // and removes ports, so between two changes the indexes stay put.
  std::vector<std::string> names_by_index_;
  bool names_stale_ = true;
  // Running captures by id: the connection, uid and bytes of each.
  struct CaptureOwner {
    uint64_t conn = 0;
    uid_t uid = 0;
    uint64_t bytes = 0;
  };
  std::map<uint32_t, CaptureOwner> capture_conn_;
  void endCapture(std::map<uint32_t, CaptureOwner>::iterator it);
  struct Parked {
    std::string reason;  // the last attempt's error
    std::chrono::steady_clock::time_point next;
    std::chrono::milliseconds wait{kRetryFirst};
  };
  std::map<std::string, Parked> parked_;  // by port name; each has its record in ctx_.state
  vdev::proto::PortInfo parkedInfo(const std::string& name, const Parked& p) const;
};

}  // namespace vdev::daemon
