// vdevd: the vdev datapath daemon (foreground).
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daemon_control.h"
#include "daemon_options.h"
#include "port_policy.h"
#include "datapath/datapath.h"
#include "datapath/punt.h"
#include "daemon/datapath_convert.h"
#include "daemon/metrics_server.h"
#include "daemon/sd_notify.h"
#include "daemon/state_file.h"
#include "daemon/stats_format.h"
#include "rtnl/monitor.h"
#include "rtnl/netdev.h"
#include "proto/server.h"

namespace {

void report(vdev::datapath::Datapath& dp, const std::string& json_path) {
  vdev::datapath::DatapathStats s = dp.stats();
  std::fputs(vdev::daemon::statsTable(s).c_str(), stdout);
  std::fflush(stdout);
  if (json_path.empty()) return;
  // PATH.tmp is created O_EXCL | O_NOFOLLOW, fsync'ed, renamed (state_file.h).
  if (auto st = vdev::daemon::writeFileAtomic(json_path, vdev::daemon::statsJson(s), 0644); !st)
    std::fprintf(stderr, "vdevd: cannot write %s: %s\n", json_path.c_str(), st.error().message().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  vdev::daemon::DaemonOptions opts;
  if (auto r = vdev::daemon::parseVdevdOptions(argc, argv, opts); r.exit) return *r.exit;
  const vdev::datapath::DatapathConfig& cfg = opts.cfg;
  const auto& ports = opts.ports;
  const auto& no_fast_rx = opts.no_fast_rx;
  const auto& hooks = opts.hooks;
  const std::string& json_path = opts.json_path;
  const std::string& metrics_text = opts.metrics_text;
  const std::string& socket_path = opts.socket_path;
  const std::string& state_path = opts.state_path;
  const std::string& group_name = opts.group_name;
  vdev::daemon::UidQuota quota(opts.caps, vdev::datapath::Fdb::kMaxGroups);

  vdev::datapath::setupBpfLogging(opts.verbose);

  // The metrics socket is bound before anything is attached: an address in
  // use or not on this host stops vdevd here, naming it.
  vdev::FileDesc metrics_listener;
  if (opts.metrics_addr) {
    auto l = vdev::daemon::listenTcp(*opts.metrics_addr);
    if (!l) {
      std::fprintf(stderr, "vdevd: --metrics-listen %s: %s\n", metrics_text.c_str(), l.error().message().c_str());
      return 1;
    }
    metrics_listener = std::move(l.value());
  }

  std::optional<gid_t> group;
  if (!group_name.empty()) {
    auto g = vdev::proto::groupByName(group_name);
    if (!g) {
      std::fprintf(stderr, "vdevd: group %s: %s\n", group_name.c_str(), g.error().message().c_str());
      return 2;
    }
    group = g.value();
  }

  // A port holds a descriptor a queue (kFdsPerPort): systemd's soft limit
  // of 1024 would stop vdevd short of a thousand ports, fewer with
  // multi-queue taps. Raise the soft limit to the hard one (which
  // LimitNOFILE= in the unit sets).
  {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rlimit want = rl;
      want.rlim_cur = rl.rlim_max;
      if (::setrlimit(RLIMIT_NOFILE, &want) != 0)
        std::fprintf(stderr, "vdevd: warning: cannot raise the open-file limit from %llu to %llu: %s\n",
                     (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, std::strerror(errno));
    }
  }

  // The state file is read before anything is attached. What cannot be
  // used is reported and left out, never a reason not to start: under
  // systemd a refusal here would be a restart loop.
  std::vector<std::string> start_issues;
  auto issue = [&](const std::string& what) {
    std::fprintf(stderr, "vdevd: warning: %s\n", what.c_str());
    start_issues.push_back(what);
  };
  vdev::daemon::DaemonState state;
  bool resave = false;
  bool set_aside = false;  // the file as found is kept as .rejected already
  if (!state_path.empty()) {
    const size_t slash = state_path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : state_path.substr(0, slash);
    if (auto st = vdev::daemon::ensurePrivateDir(dir, 0700); !st) {
      std::fprintf(stderr, "vdevd: state directory: %s\n", st.error().message().c_str());
      return 1;
    }
    auto loaded = vdev::daemon::loadStateLenient(state_path);
    for (const auto& p : loaded.problems) issue(p);
    resave = set_aside = !loaded.problems.empty();
    state = std::move(loaded.state);
    // A newer vdevd's keys and records: kept and saved back, not applied
    // (state_file.h, "Versions"); said, since a setting it enforced is not.
    for (const auto& rec : state.ports) {
      if (rec.unknown.empty()) continue;
      std::string keys;
      for (const auto& kv : rec.unknown) keys += (keys.empty() ? "" : " ") + kv;
      issue("port " + rec.name + " from " + state_path + ": keys this vdevd does not know (a newer one's) " +
            "kept in the file, not applied: " + keys);
    }
    for (const auto& line : state.other_records)
      issue("state file " + state_path + ": a record this vdevd does not know (a newer one's) kept in the file, " +
            "not applied: " + line);
  }

  // Signals are taken synchronously by this thread (signalfd); the datapath
  // thread inherits the blocked mask and never sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGUSR1);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  vdev::FileDesc sigfd(signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd.valid()) {
    std::fprintf(stderr, "vdevd: signalfd: %s\n", std::strerror(errno));
    return 1;
  }

  // The punt pairs of vdevds killed without teardown (on other control
  // sockets: a pair of this one's own name is replaced when it is made).
  for (const std::string& gone : vdev::datapath::PuntDevice::removeOrphans())
    std::fprintf(stderr, "vdevd: removed punt device %s: its vdevd is gone\n", gone.c_str());

  auto dp = vdev::datapath::Datapath::create(cfg);
  if (!dp) {
    std::fprintf(stderr, "vdevd: %s\n", dp.error().message().c_str());
    return 1;
  }
  vdev::datapath::Datapath& d = *dp.value();
  for (const auto& name : ports) {
    vdev::datapath::Datapath::PortOptions o;
    if (std::find(no_fast_rx.begin(), no_fast_rx.end(), name) != no_fast_rx.end()) o.fast_rx = false;
    for (const auto& [n, h] : hooks)
      if (n == name) o.hook = h;
    if (auto st = d.addPort(name, o); !st) {
      std::fprintf(stderr, "vdevd: %s\n", st.error().message().c_str());
      d.teardown();  // detaches what was attached so far
      return 1;
    }
  }
  std::vector<std::pair<std::string, std::string>> parked;  // saved ports that failed to start: why
  bool refused = false;  // a record port_policy.h refuses
  for (auto it = state.ports.begin(); it != state.ports.end();) {
    const vdev::daemon::PortRecord& rec = *it;
    if (std::find(ports.begin(), ports.end(), rec.name) != ports.end()) {
      issue("port " + rec.name + " is saved in " + state_path +
            " and given with --port: the command line's is kept, the saved one dropped");
      it = state.ports.erase(it);
      resave = true;
      continue;
    }
    // A member's record is trusted in what root may have set on its port
    // since (port_policy.h, "Restore"), not in what only its add set.
    if (auto st = vdev::daemon::checkRestoredPort(rec); !st) {
      issue("port " + rec.name + " from " + state_path + " not restored: " + st.error().what);
      it = state.ports.erase(it);
      resave = true;
      refused = true;
      continue;
    }
    // A well-formed, allowed record whose port fails to start is kept (in
    // the state and the file) and retried: the failure may be this start's
    // options (--frames) or the host's state, not the record's.
    if (auto st = vdev::daemon::restorePort(d, rec, &quota); !st) {
      std::fprintf(stderr, "vdevd: warning: port %s from %s not started: %s; kept, retried\n", rec.name.c_str(),
                   state_path.c_str(), st.error().message().c_str());
      parked.emplace_back(rec.name, st.error().message());
    }
    ++it;
  }
  // The file then says what runs and what waits to (what it had that could
  // not be used was reported above, and a damaged file is kept as
  // .rejected). A record the policy refuses is a forged one (only vdevd
  // writes the file): it is left out of the file, never retried, and the
  // file as found is kept as .rejected for whoever looks into it.
  if (refused && !set_aside) {
    const std::string aside = state_path + ".rejected";
    if (::rename(state_path.c_str(), aside.c_str()) == 0)
      issue("state file " + state_path + " kept as " + aside);
    else
      issue("state file " + state_path + ": cannot keep it as " + aside + ": " + std::strerror(errno));
  }
  if (resave && !state_path.empty())
    if (auto st = vdev::daemon::saveState(state_path, state); !st) issue(st.error().message());

  vdev::daemon::ControlContext ctx;
  ctx.dp = &d;
  ctx.state = &state;
  ctx.state_path = state_path;
  ctx.mode = cfg.mode;
  ctx.fast_path = d.fastPath();
  ctx.default_hook = cfg.port.hook;
  ctx.started = std::chrono::steady_clock::now();
  ctx.start_issues = start_issues;
  ctx.quota = &quota;
  vdev::daemon::DaemonControl control(ctx);
  for (auto& [name, why] : parked) control.park(name, std::move(why));
  std::unique_ptr<vdev::proto::ControlServer> server;
  if (!socket_path.empty()) {
    vdev::proto::ServerConfig sc;
    sc.path = socket_path;
    sc.group = group;
    sc.log = [](std::string_view m) { std::fprintf(stderr, "vdevd: control: %.*s\n", int(m.size()), m.data()); };
    auto srv = vdev::proto::ControlServer::create(sc, control);
    if (!srv) {
      std::fprintf(stderr, "vdevd: control socket %s: %s\n", socket_path.c_str(), srv.error().message().c_str());
      d.teardown();
      return 1;
    }
    server = std::move(srv.value());
  }

  // GET /metrics, answered on this thread (run() below) from a snapshot at
  // most DaemonControl::kStatsPeriod old.
  std::unique_ptr<vdev::daemon::MetricsServer> metrics;
  if (metrics_listener.valid()) {
    vdev::daemon::MetricsServer::Config mc;
    mc.allow = opts.metrics_allow;
    mc.log = [](std::string_view m) { std::fprintf(stderr, "vdevd: metrics: %.*s\n", int(m.size()), m.data()); };
    auto ms = vdev::daemon::MetricsServer::start(std::move(metrics_listener), mc,
                                                 [&control] { return control.metricsText(); });
    if (!ms) {
      std::fprintf(stderr, "vdevd: --metrics-listen %s: %s\n", metrics_text.c_str(), ms.error().message().c_str());
      server.reset();
      d.teardown();
      return 1;
    }
    metrics = std::move(ms.value());
  }

  // Link events (RTM_NEWLINK/RTM_DELLINK) make the datapath look at its
  // ports at once, and are then the only thing that does for a live port
  // (lost events: ENOBUFS, everything is checked); without them, its
  // 100 ms housekeeping checks every port. Address events do the same for
  // the host's addresses on the ports (else read once a second).
  std::optional<vdev::rtnl::LinkMonitor> links;
  if (auto lm = vdev::rtnl::LinkMonitor::open(); lm) {
    links.emplace(std::move(lm.value()));
    d.setLinkEvents(true);
    d.setAddrEvents(true);
  } else {
    std::fprintf(stderr, "vdevd: link monitor: %s; checking links every 100 ms only\n",
                 lm.error().message().c_str());
  }

  // The same for devices' XDP features (the fast path's destinations):
  // notifications where the kernel has them, else a check every second.
  std::optional<vdev::rtnl::XdpFeaturesMonitor> xdp_features;
  if (d.fastPath() && d.xdpFeaturesSource() == vdev::datapath::XdpFeatures::Source::kNetdev) {
    if (auto xm = vdev::rtnl::XdpFeaturesMonitor::open(); xm) {
      xdp_features.emplace(std::move(xm.value()));
      d.setXdpFeatureEvents(true);
    }
  }

  d.start();
  if (metrics) std::printf("vdevd: metrics at http://%s/metrics\n", metrics->address().c_str());
  std::printf("vdevd: ready (%zu ports, %s mode%s; skb programs at %s, XDP features by %s)\n", d.numPorts(),
              cfg.mode == vdev::datapath::SwitchMode::kSwitch ? "switch" : "xconnect",
              d.fastPath() ? ", kernel fast path" : "", vdev::datapath::tcAttachName(d.tcAttach()),
              vdev::datapath::XdpFeatures::sourceName(d.xdpFeaturesSource()));
  std::fflush(stdout);
  char status[128];
  std::snprintf(status, sizeof status, "%zu ports, %s mode", d.numPorts(),
                cfg.mode == vdev::datapath::SwitchMode::kSwitch ? "switch" : "xconnect");
  (void)vdev::daemon::sd::notifyReady(status);
  const auto wd = vdev::daemon::sd::watchdogInterval();
  const int poll_ms = wd.count() > 0 ? int(std::max<int64_t>(1, wd.count() / 2000)) : -1;

  for (bool run = true; run;) {
    struct pollfd fds[5] = {{sigfd.get(), POLLIN, 0},
                            {server ? server->fd() : -1, POLLIN, 0},
                            {links ? links->fd() : -1, POLLIN, 0},
                            {xdp_features ? xdp_features->fd() : -1, POLLIN, 0},
                            {metrics ? metrics->fd() : -1, POLLIN, 0}};
    // libmicrohttpd says how long it may wait (a connection's idle timeout).
    int timeout_ms = poll_ms;
    // Saved ports that failed to start are retried here, on this thread.
    if (const int t = control.retryParked(); t >= 0) timeout_ms = timeout_ms < 0 ? t : std::min(timeout_ms, t);
    if (metrics)
      if (const int t = metrics->timeoutMs(); t >= 0) timeout_ms = timeout_ms < 0 ? t : std::min(timeout_ms, t);
    int n = ::poll(fds, 5, timeout_ms);  // negative fds are ignored by poll()
    if (wd.count() > 0) (void)vdev::daemon::sd::notifyWatchdog();
    if (n < 0) continue;  // EINTR
    if (server && (fds[1].revents & POLLIN)) server->processEvents();
    if (metrics) metrics->run();  // never blocks; also after its timeout
    if (links && (fds[2].revents & POLLIN)) {
      std::vector<vdev::datapath::Datapath::LinkRef> named;
      auto r = links->processEvents([&](const vdev::rtnl::LinkEvent& e) { named.push_back({e.ifindex, e.name}); });
      if (!r)
        d.checkLinks();  // ENOBUFS (events lost): check everything
      else
        d.checkLinks(named);  // the ports those devices are (or were refused for)
      if (links->takeAddressChange()) d.refreshHostAddrs();  // also after ENOBUFS
    }
    if (xdp_features && (fds[3].revents & POLLIN)) {
      auto r = xdp_features->processEvents();
      if (!r)
        d.checkFastPorts();  // some were lost: ask every device
      else if (!r->empty())
        d.checkFastPorts(*r);
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGHUP) {
          report(d, json_path);
        } else {
          run = false;
        }
      }
    }
  }
  (void)vdev::daemon::sd::notifyStopping();
  metrics.reset();  // no more scrapes: connections and the socket closed
  server.reset();  // no more requests
  d.stop();
  uint32_t leaked = d.teardown();
  report(d, json_path);
  if (leaked) {
    std::fprintf(stderr, "vdevd: BUG: %u frames not back in the pool at exit\n", leaked);
    return 1;
  }
  std::printf("vdevd: stopped, all %u frames back in the pool\n", d.pool().total());
  return 0;
}
