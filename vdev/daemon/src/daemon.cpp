// vdevd as an object: see daemon.h.
#include "daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "daemon/sd_notify.h"
#include "daemon/stats_format.h"
#include "datapath/punt.h"
#include "port_policy.h"

namespace vdev::daemon {

Daemon::Daemon(DaemonOptions options)
    : o_(std::move(options)), quota_(o_.caps, datapath::Fdb::kMaxGroups) {}

int Daemon::start() {
  datapath::setupBpfLogging(o_.verbose);
  if (!bindMetrics()) return 1;
  if (!resolveGroup()) return 2;
  raiseFileLimit();
  if (!readState() || !takeSignals()) return 1;
  // The punt pairs of vdevds killed without teardown (on other control
  // sockets: a pair of this one's own name is replaced when it is made).
  for (const std::string& gone : datapath::PuntDevice::removeOrphans())
    std::fprintf(stderr, "vdevd: removed punt device %s: its vdevd is gone\n", gone.c_str());
  if (!startDatapath()) return 1;
  if (!serveControl(restoreSaved()) || !serveMetrics()) return 1;
  watchDevices();
  dp_->start();
  ready();
  return 0;
}

// The metrics socket is bound before anything is attached: an address in
// use or not on this host stops vdevd here, naming it.
bool Daemon::bindMetrics() {
  if (!o_.metrics_addr) return true;
  auto l = listenTcp(*o_.metrics_addr);
  if (!l) {
    std::fprintf(stderr, "vdevd: --metrics-listen %s: %s\n", o_.metrics_text.c_str(), l.error().message().c_str());
    return false;
  }
  metrics_listener_ = std::move(l.value());
  return true;
}

bool Daemon::resolveGroup() {
  if (o_.group_name.empty()) return true;
  auto g = proto::groupByName(o_.group_name);
  if (!g) {
    std::fprintf(stderr, "vdevd: group %s: %s\n", o_.group_name.c_str(), g.error().message().c_str());
    return false;
  }
  group_ = g.value();
  return true;
}

// A port holds a descriptor a queue (kFdsPerPort): systemd's soft limit
// of 1024 would stop vdevd short of a thousand ports, fewer with
// multi-queue taps. Raise the soft limit to the hard one (which
// LimitNOFILE= in the unit sets).
void Daemon::raiseFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) != 0)
      std::fprintf(stderr, "vdevd: warning: cannot raise the open-file limit from %llu to %llu: %s\n",
                   (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, std::strerror(errno));
  }
}

// What cannot be used at start is reported and left out, never a reason
// not to start: under systemd a refusal would be a restart loop.
void Daemon::issue(const std::string& what) {
  std::fprintf(stderr, "vdevd: warning: %s\n", what.c_str());
  start_issues_.push_back(what);
}

// The state file is read before anything is attached.
bool Daemon::readState() {
  const std::string& path = o_.state_path;
  if (path.empty()) return true;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (auto st = ensurePrivateDir(dir, 0700); !st) {
    std::fprintf(stderr, "vdevd: state directory: %s\n", st.error().message().c_str());
    return false;
  }
  auto loaded = loadStateLenient(path);
  for (const auto& p : loaded.problems) issue(p);
  resave_ = set_aside_ = !loaded.problems.empty();
  state_ = std::move(loaded.state);
  // A newer vdevd's keys and records: kept and saved back, not applied
  // (state_file.h, "Versions"); said, since a setting it enforced is not.
  for (const auto& rec : state_.ports) {
    if (rec.unknown.empty()) continue;
    std::string keys;
    for (const auto& kv : rec.unknown) keys += (keys.empty() ? "" : " ") + kv;
    issue("port " + rec.name + " from " + path + ": keys this vdevd does not know (a newer one's) " +
          "kept in the file, not applied: " + keys);
  }
  for (const auto& line : state_.other_records)
    issue("state file " + path + ": a record this vdevd does not know (a newer one's) kept in the file, " +
          "not applied: " + line);
  return true;
}

// Signals are taken synchronously by this thread (signalfd); the datapath
// thread inherits the blocked mask and never sees them.
bool Daemon::takeSignals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGUSR1);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  sigfd_ = FileDesc(signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd_.valid()) {
    std::fprintf(stderr, "vdevd: signalfd: %s\n", std::strerror(errno));
    return false;
  }
  return true;
}

// The datapath with the command line's ports; one that fails stops vdevd
// (what was attached so far detached).
bool Daemon::startDatapath() {
  auto dp = datapath::Datapath::create(o_.cfg);
  if (!dp) {
    std::fprintf(stderr, "vdevd: %s\n", dp.error().message().c_str());
    return false;
  }
  dp_ = std::move(dp.value());
  for (const auto& name : o_.ports) {
    datapath::Datapath::PortOptions po;
    if (std::find(o_.no_fast_rx.begin(), o_.no_fast_rx.end(), name) != o_.no_fast_rx.end()) po.fast_rx = false;
    for (const auto& [n, h] : o_.hooks)
      if (n == name) po.hook = h;
    if (auto st = dp_->addPort(name, po); !st) {
      std::fprintf(stderr, "vdevd: %s\n", st.error().message().c_str());
      dp_->teardown();  // detaches what was attached so far
      return false;
    }
  }
  return true;
}

// The saved ports, each through the one path a saved record takes, at start
// and on every retry: checkRestoredPort() (port_policy.h), then restorePort().
// Returns the ports that failed to start, with why: parked, retried.
std::vector<std::pair<std::string, std::string>> Daemon::restoreSaved() {
  const std::string& path = o_.state_path;
  std::vector<std::pair<std::string, std::string>> parked;
  bool refused = false;  // a record port_policy.h refuses
  for (auto it = state_.ports.begin(); it != state_.ports.end();) {
    const PortRecord& rec = *it;
    if (std::find(o_.ports.begin(), o_.ports.end(), rec.name) != o_.ports.end()) {
      issue("port " + rec.name + " is saved in " + path +
            " and given with --port: the command line's is kept, the saved one dropped");
      it = state_.ports.erase(it);
      resave_ = true;
      continue;
    }
    // A member's record is trusted in what root may have set on its port
    // since (port_policy.h, "Restore"), not in what only its add set.
    if (auto st = checkRestoredPort(rec); !st) {
      issue("port " + rec.name + " from " + path + " not restored: " + st.error().what);
      it = state_.ports.erase(it);
      resave_ = true;
      refused = true;
      continue;
    }
    // A well-formed, allowed record whose port fails to start is kept (in
    // the state and the file) and retried: the failure may be this start's
    // options (--frames) or the host's state, not the record's.
    if (auto st = restorePort(*dp_, rec, &quota_); !st) {
      std::fprintf(stderr, "vdevd: warning: port %s from %s not started: %s; kept, retried\n", rec.name.c_str(),
                   path.c_str(), st.error().message().c_str());
      parked.emplace_back(rec.name, st.error().message());
    }
    ++it;
  }
  // The file then says what runs and what waits to (what it had that could
  // not be used was reported above, and a damaged file is kept as
  // .rejected). A record the policy refuses is a forged one (only vdevd
  // writes the file): it is left out of the file, never retried, and the
  // file as found is kept as .rejected for whoever looks into it.
  if (refused && !set_aside_) {
    const std::string aside = path + ".rejected";
    if (::rename(path.c_str(), aside.c_str()) == 0)
      issue("state file " + path + " kept as " + aside);
    else
      issue("state file " + path + ": cannot keep it as " + aside + ": " + std::strerror(errno));
  }
  if (resave_ && !path.empty())
    if (auto st = saveState(path, state_); !st) issue(st.error().message());
  return parked;
}

bool Daemon::serveControl(std::vector<std::pair<std::string, std::string>> parked) {
  ControlContext ctx;
  ctx.dp = dp_.get();
  ctx.state = &state_;
  ctx.state_path = o_.state_path;
  ctx.mode = o_.cfg.mode;
  ctx.fast_path = dp_->fastPath();
  ctx.default_hook = o_.cfg.port.hook;
  ctx.started = std::chrono::steady_clock::now();
  ctx.start_issues = start_issues_;
  ctx.quota = &quota_;
  control_.emplace(ctx);
  for (auto& [name, why] : parked) control_->park(name, std::move(why));
  if (o_.socket_path.empty()) return true;
  proto::ServerConfig sc;
  sc.path = o_.socket_path;
  sc.group = group_;
  sc.log = [](std::string_view m) { std::fprintf(stderr, "vdevd: control: %.*s\n", int(m.size()), m.data()); };
  auto srv = proto::ControlServer::create(sc, *control_);
  if (!srv) {
    std::fprintf(stderr, "vdevd: control socket %s: %s\n", o_.socket_path.c_str(), srv.error().message().c_str());
    dp_->teardown();
    return false;
  }
  server_ = std::move(srv.value());
  return true;
}

// GET /metrics, answered on this thread (run()) from a snapshot at most
// DaemonControl::kStatsPeriod old.
bool Daemon::serveMetrics() {
  if (!metrics_listener_.valid()) return true;
  MetricsServer::Config mc;
  mc.allow = o_.metrics_allow;
  mc.log = [](std::string_view m) { std::fprintf(stderr, "vdevd: metrics: %.*s\n", int(m.size()), m.data()); };
  DaemonControl& control = *control_;
  auto ms = MetricsServer::start(std::move(metrics_listener_), mc, [&control] { return control.metricsText(); });
  if (!ms) {
    std::fprintf(stderr, "vdevd: --metrics-listen %s: %s\n", o_.metrics_text.c_str(), ms.error().message().c_str());
    server_.reset();
    dp_->teardown();
    return false;
  }
  metrics_ = std::move(ms.value());
  return true;
}

void Daemon::watchDevices() {
  datapath::Datapath& d = *dp_;
  // Link events (RTM_NEWLINK/RTM_DELLINK) make the datapath look at its
  // ports at once, and are then the only thing that does for a live port
  // (lost events: ENOBUFS, everything is checked); without them, its
  // 100 ms housekeeping checks every port. Address events do the same for
  // the host's addresses on the ports (else read once a second).
  if (auto lm = rtnl::LinkMonitor::open(); lm) {
    links_.emplace(std::move(lm.value()));
    d.setLinkEvents(true);
    d.setAddrEvents(true);
  } else {
    std::fprintf(stderr, "vdevd: link monitor: %s; checking links every 100 ms only\n",
                 lm.error().message().c_str());
  }
  // The same for devices' XDP features (the fast path's destinations):
  // notifications where the kernel has them, else a check every second.
  if (d.fastPath() && d.xdpFeaturesSource() == datapath::XdpFeatures::Source::kNetdev) {
    if (auto xm = rtnl::XdpFeaturesMonitor::open(); xm) {
      xdp_features_.emplace(std::move(xm.value()));
      d.setXdpFeatureEvents(true);
    }
  }
}

void Daemon::ready() {
  datapath::Datapath& d = *dp_;
  const char* mode = spec::switchModeName(o_.cfg.mode);
  if (metrics_) std::printf("vdevd: metrics at http://%s/metrics\n", metrics_->address().c_str());
  std::printf("vdevd: ready (%zu ports, %s mode%s; skb programs at %s, XDP features by %s)\n", d.numPorts(), mode,
              d.fastPath() ? ", kernel fast path" : "", datapath::tcAttachName(d.tcAttach()),
              datapath::XdpFeatures::sourceName(d.xdpFeaturesSource()));
  std::fflush(stdout);
  char status[128];
  std::snprintf(status, sizeof status, "%zu ports, %s mode", d.numPorts(), mode);
  (void)sd::notifyReady(status);
}

void Daemon::run() {
  datapath::Datapath& d = *dp_;
  const auto wd = sd::watchdogInterval();
  const int poll_ms = wd.count() > 0 ? int(std::max<int64_t>(1, wd.count() / 2000)) : -1;
  for (bool run = true; run;) {
    struct pollfd fds[5] = {{sigfd_.get(), POLLIN, 0},
                            {server_ ? server_->fd() : -1, POLLIN, 0},
                            {links_ ? links_->fd() : -1, POLLIN, 0},
                            {xdp_features_ ? xdp_features_->fd() : -1, POLLIN, 0},
                            {metrics_ ? metrics_->fd() : -1, POLLIN, 0}};
    // libmicrohttpd says how long it may wait (a connection's idle timeout).
    int timeout_ms = poll_ms;
    // Saved ports that failed to start are retried here, on this thread.
    if (const int t = control_->retryParked(); t >= 0) timeout_ms = timeout_ms < 0 ? t : std::min(timeout_ms, t);
    if (metrics_)
      if (const int t = metrics_->timeoutMs(); t >= 0) timeout_ms = timeout_ms < 0 ? t : std::min(timeout_ms, t);
    int n = ::poll(fds, 5, timeout_ms);  // negative fds are ignored by poll()
    if (wd.count() > 0) (void)sd::notifyWatchdog();
    if (n < 0) continue;  // EINTR
    if (server_ && (fds[1].revents & POLLIN)) server_->processEvents();
    if (metrics_) metrics_->run();  // never blocks; also after its timeout
    if (links_ && (fds[2].revents & POLLIN)) {
      std::vector<datapath::Datapath::LinkRef> named;
      auto r = links_->processEvents([&](const rtnl::LinkEvent& e) { named.push_back({e.ifindex, e.name}); });
      if (!r)
        d.checkLinks();  // ENOBUFS (events lost): check everything
      else
        d.checkLinks(named);  // the ports those devices are (or were refused for)
      if (links_->takeAddressChange()) d.refreshHostAddrs();  // also after ENOBUFS
    }
    if (xdp_features_ && (fds[3].revents & POLLIN)) {
      auto r = xdp_features_->processEvents();
      if (!r)
        d.checkFastPorts();  // some were lost: ask every device
      else if (!r->empty())
        d.checkFastPorts(*r);
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (::read(sigfd_.get(), &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGHUP) {
          report();
        } else {
          run = false;
        }
      }
    }
  }
}

int Daemon::stop() {
  (void)sd::notifyStopping();
  metrics_.reset();  // no more scrapes: connections and the socket closed
  server_.reset();   // no more requests
  dp_->stop();
  const uint32_t leaked = dp_->teardown();
  report();
  if (leaked) {
    std::fprintf(stderr, "vdevd: BUG: %u frames not back in the pool at exit\n", leaked);
    return 1;
  }
  std::printf("vdevd: stopped, all %u frames back in the pool\n", dp_->pool().total());
  return 0;
}

// The statistics table on stdout and, with --stats-json, the JSON file.
void Daemon::report() {
  datapath::DatapathStats s = dp_->stats();
  std::fputs(statsTable(s).c_str(), stdout);
  std::fflush(stdout);
  if (o_.json_path.empty()) return;
  // PATH.tmp is created O_EXCL | O_NOFOLLOW, fsync'ed, renamed (state_file.h).
  if (auto st = writeFileAtomic(o_.json_path, statsJson(s), 0644); !st)
    std::fprintf(stderr, "vdevd: cannot write %s: %s\n", o_.json_path.c_str(), st.error().message().c_str());
}

}  // namespace vdev::daemon
