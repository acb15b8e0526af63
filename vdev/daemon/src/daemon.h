// vdevd as an object: start() brings it up from its options, run() is the
// control thread's loop until SIGTERM or SIGINT, stop() takes it down.
//
//   Daemon d(std::move(options));        // nothing done yet
//   if (int st = d.start()) return st;   // printed why; nothing left attached
//   d.run();
//   return d.stop();                     // 0, or 1 if a frame was lost
//
// Each step prints what it does or why it failed (stderr, "vdevd: ..."), as
// vdevd's log. Owns, in the order they are made and the reverse of the one
// they go: the uid caps, the metrics socket, the saved state, the signalfd,
// the datapath, the control handlers, the control and metrics servers and the
// rtnetlink monitors. Signals SIGTERM, SIGINT, SIGUSR1 and SIGHUP are blocked
// in the thread that calls start() (and in the datapath threads it starts):
// call it from the main thread, before any other thread exists. Not thread
// safe; neither copied nor moved (its parts point at each other).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "daemon/metrics_server.h"
#include "daemon/state_file.h"
#include "daemon_control.h"
#include "daemon_options.h"
#include "datapath/datapath.h"
#include "proto/server.h"
#include "rtnl/monitor.h"
#include "rtnl/netdev.h"
#include "uid_quota.h"

namespace vdev::daemon {

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Everything up to "vdevd: ready" and READY=1: the metrics socket bound,
  // the state file read, the datapath made with the command line's ports,
  // the saved ports restored, the control socket and metrics served, the
  // datapath threads started. 0, or the exit status when it cannot start:
  // 1 (a runtime failure), 2 (--group names no group). A saved port that
  // cannot be used never stops it (restoreSaved()).
  int start();

  // The control thread until SIGTERM or SIGINT: control requests, scrapes,
  // link and XDP-feature events, parked ports' retries, the watchdog;
  // SIGUSR1 and SIGHUP print the statistics. Only after start() returned 0.
  void run();

  // After run(): servers closed, datapath stopped and torn down, final
  // statistics. 0, or 1 if a frame did not come back to the pool.
  int stop();

 private:
  bool bindMetrics();
  bool resolveGroup();
  void raiseFileLimit();
  bool readState();
  bool takeSignals();
  bool startDatapath();
  std::vector<std::pair<std::string, std::string>> restoreSaved();
  bool serveControl(std::vector<std::pair<std::string, std::string>> parked);
  bool serveMetrics();
  void watchDevices();
  void ready();
  void issue(const std::string& what);
  void report();

  const DaemonOptions o_;
  UidQuota quota_;
  FileDesc metrics_listener_;
  std::optional<gid_t> group_;
  std::vector<std::string> start_issues_;  // what could not be used at start (INFO)
  DaemonState state_;
  bool resave_ = false;
  bool set_aside_ = false;  // the state file as found is kept as .rejected already
  FileDesc sigfd_;
  std::unique_ptr<datapath::Datapath> dp_;
  std::optional<DaemonControl> control_;
  std::unique_ptr<proto::ControlServer> server_;
  std::unique_ptr<MetricsServer> metrics_;
  std::optional<rtnl::LinkMonitor> links_;
  std::optional<rtnl::XdpFeaturesMonitor> xdp_features_;
};

}  // namespace vdev::daemon
