// vdevd: the vdev datapath daemon (foreground).
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon_control.h"
#include "datapath/datapath.h"
#include "daemon/sd_notify.h"
#include "daemon/state_file.h"
#include "daemon/stats_format.h"
#include "base/version.h"
#include "rtnl/monitor.h"
#include "proto/server.h"

namespace {

const char kUsage[] = R"(Usage: vdevd [--port IFNAME ...] [OPTIONS]

vdevd switches frames between netdevs -- the host ends of containers' veth
pairs, VMs' tap devices, uplinks -- in userspace. An XDP program on each port
redirects frames into AF_XDP sockets (frames for the host's own MACs still go
to the host stack); vdevd switches them and delivers them in bulk.

Ports and mode:
  -p, --port IFNAME        attach this netdev as a port (repeatable). Ports can
                           also be added at run time with vdevctl; those are
                           saved in the state file and restored at start
  -m, --mode MODE          switch: L2 learning switch (default)
                           xconnect: exactly two ports, each one's frames go to the other
  -x, --xdp-mode MODE      native, generic or auto (default: native where the
                           driver has it, generic otherwise)
  -f, --force              replace an XDP program that someone else attached
                           (a program left by a killed vdevd is always replaced)
      --host-mac MAC       frames to MAC go to the host stack (repeatable);
                           every port's own MAC always does

Sizes and tuning:
      --frames N           UMEM frames (default 32768)
      --frame-size N       2048 or 4096 bytes per frame (default 2048)
      --ring-size N        AF_XDP RX and TX ring size, power of two (default 1024;
                           the fill ring is twice that)
      --port-ring N        per-port delivery ring capacity in frames (default 1024)
      --batch N            RX/TX burst, 1..256 (default 64)
      --tx-budget N        copy-mode frames per TX kick, where the kernel supports
                           it (default: the TX ring size; 0 = the kernel default)
      --completion MODE    eager (default): reap TX completions on every drain;
                           lazy[:N]: only once N frames (default 256) are
                           outstanding -- fewer ring touches per batch, but
                           frames come back to the pool later, so a small pool
                           or a sender waiting for buffers stalls
      --idle-spin-us N     keep polling N microseconds after the last frame
                           before sleeping in poll() (default 50)
      --busy-poll USECS    preferred busy polling on every AF_XDP socket
                           (SO_PREFER_BUSY_POLL, SO_BUSY_POLL USECS, budget =
                           --batch): while vdevd polls, an empty RX ring makes
                           it run the queue's NAPI itself (0 = off, default).
                           Measured on veth/tap it gains nothing (their NAPI
                           runs in the sender's softirq at once); for NICs,
                           with napi_defer_hard_irqs and gro_flush_timeout set
                           on the device (docs/vdevd.md)
      --no-fast-path       turn the kernel fast path off: every frame goes
                           through vdevd (AF_XDP)
      --fast-path          require it: refuse to start if it cannot be set up
                           (by default vdevd warns and carries on without)
                           The kernel fast path (switch mode, on by default):
                           unicast between stations vdevd has learned (source
                           on the ingress port, destination on another) is
                           redirected by each port's XDP program through a
                           devmap -- the kernel's bulk ndo_xdp_xmit -- without
                           a trip through vdevd; everything else (unknown,
                           broadcast, new or moving stations, 802.3, runts)
                           still goes through vdevd. Counters stay exact
                           (fast_xmit counts what a device did not take). A
                           veth destination needs NAPI on its container end
                           (GRO on, or an XDP program): vdevd turns GRO on for
                           the veths it creates; a port whose device cannot
                           take redirected frames is switched by vdevd until
                           it can. See docs/vdevd.md for what it costs.
      --no-fast-rx IFNAME  frames received on the --port IFNAME always go
                           through vdevd, never on the fast path; frames to
                           IFNAME may still arrive by it (repeatable). For a
                           VM whose single sending thread is its bottleneck:
                           a tap's XDP program runs inside the VM's write(),
                           so the fast path delivers on the VM's CPU, where
                           vdevd takes the delivery onto its own (measured:
                           1.75 Mpps through vdevd, 1.14 with the fast path);
                           costs latency. Ports added with vdevctl:
                           "port add ... fast-rx off"
      --fdb-aging SECONDS  learned MAC ageing time (default 300)
      --fdb-size N         MAC table slots (default 4096)

Hostile guests (frames refused are counted by reason, see docs/vdevd.md):
      --fdb-port-limit N   MACs one port may have learned at a time (default 256,
                           0 = no limit); frames from further new source MACs
                           are dropped (mac_limit), so a MAC flood from one
                           guest cannot fill the table
      --fdb-hold-ms MS     a MAC learned on one port moves to another only after
                           MS milliseconds of silence on the first (default 1000;
                           0 = at once); until then frames from it elsewhere are
                           dropped (mac_locked). A static entry never moves.
      --max-inflight N     frames received on one port that may be in flight at
                           once (in delivery rings, TX rings, the kernel) before
                           its further frames are dropped (inflight_limit), so
                           one port cannot take the frame pool from the others
                           (default: a quarter of --frames; at least --batch)

Control and state:
  -s, --socket PATH        control socket for vdevctl (default /run/vdev/vdevd.sock;
                           its directory is created 0755, the socket is 0660)
      --no-socket          no control socket (ports from the command line only)
  -g, --group NAME         members of this group may use the control socket
                           (besides root); the socket file gets this group
      --state FILE         ports added at run time, restored at start (default
                           /var/lib/vdev/vdevd.state; a corrupt file is refused)
      --no-state           keep nothing across restarts

Output:
      --stats-json PATH    on SIGUSR1 and at exit, write statistics as JSON to
                           PATH (via PATH.tmp and rename)
  -v, --verbose            libbpf/libxdp informational messages
  -V, --version
  -h, --help

vdevd prints "vdevd: ready" once every port is attached (and, under
systemd with Type=notify, sends READY=1, then STATUS= lines, WATCHDOG=1 when
WatchdogSec is set, STOPPING=1 at the end). Signals: SIGUSR1
prints per-port statistics (and writes --stats-json); SIGTERM or SIGINT stop
it: the XDP programs are detached, every frame is returned to the pool, final
statistics are printed, and the exit status is 0 (1 if a frame was lost).

Exit status: 0 clean stop, 1 runtime failure or leaked frame, 2 bad usage.
See docs/vdevd.md for the statistics and their meaning.
)";

bool parseU32(const char* s, uint32_t lo, uint32_t hi, uint32_t& out) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(s, &end, 10);
  if (errno || !end || *end || end == s || v < lo || v > hi) return false;
  out = uint32_t(v);
  return true;
}

bool parseMac(const char* s, std::array<uint8_t, 6>& mac) {
  unsigned v[6];
  char tail;
  if (std::sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    return false;
  for (int i = 0; i < 6; i++) {
    if (v[i] > 255) return false;
    mac[size_t(i)] = uint8_t(v[i]);
  }
  return true;
}

[[noreturn]] void usageError(const std::string& msg) {
  std::fprintf(stderr, "vdevd: %s\nTry 'vdevd --help'.\n", msg.c_str());
  std::exit(2);
}

bool writeFileAtomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return false;
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

void report(vdev::datapath::Datapath& dp, const std::string& json_path) {
  vdev::datapath::DatapathStats s = dp.stats();
  std::fputs(vdev::daemon::statsTable(s).c_str(), stdout);
  std::fflush(stdout);
  if (!json_path.empty() && !writeFileAtomic(json_path, vdev::daemon::statsJson(s)))
    std::fprintf(stderr, "vdevd: cannot write %s: %s\n", json_path.c_str(), std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  vdev::datapath::DatapathConfig cfg;
  cfg.port.xsk.tx_budget = 1;  // placeholder: "ring size" unless given
  bool tx_budget_given = false;
  std::vector<std::string> ports;
  std::vector<std::string> no_fast_rx;  // --no-fast-rx: names among `ports`
  std::string json_path;
  bool verbose = false;

  std::string socket_path = vdev::proto::kDefaultSocketPath;
  std::string state_path = "/var/lib/vdev/vdevd.state";
  std::string group_name;
  enum {
    kHostMac = 256, kFrames, kFrameSize, kRingSize, kPortRing, kBatch, kTxBudget, kCompletion,
    kIdleSpin, kFdbAging, kFdbSize, kStatsJson, kNoSocket, kState, kNoState, kFdbPortLimit,
    kFdbHold, kMaxInflight, kFastPath, kNoFastPath, kBusyPoll, kNoFastRx
  };
  static const struct option opts[] = {
      {"port", required_argument, nullptr, 'p'},
      {"mode", required_argument, nullptr, 'm'},
      {"xdp-mode", required_argument, nullptr, 'x'},
      {"force", no_argument, nullptr, 'f'},
      {"host-mac", required_argument, nullptr, kHostMac},
      {"frames", required_argument, nullptr, kFrames},
      {"frame-size", required_argument, nullptr, kFrameSize},
      {"ring-size", required_argument, nullptr, kRingSize},
      {"port-ring", required_argument, nullptr, kPortRing},
      {"batch", required_argument, nullptr, kBatch},
      {"tx-budget", required_argument, nullptr, kTxBudget},
      {"completion", required_argument, nullptr, kCompletion},
      {"idle-spin-us", required_argument, nullptr, kIdleSpin},
      {"fdb-aging", required_argument, nullptr, kFdbAging},
      {"fdb-size", required_argument, nullptr, kFdbSize},
      {"fdb-port-limit", required_argument, nullptr, kFdbPortLimit},
      {"fdb-hold-ms", required_argument, nullptr, kFdbHold},
      {"max-inflight", required_argument, nullptr, kMaxInflight},
      {"fast-path", no_argument, nullptr, kFastPath},
      {"no-fast-path", no_argument, nullptr, kNoFastPath},
      {"no-fast-rx", required_argument, nullptr, kNoFastRx},
      {"busy-poll", required_argument, nullptr, kBusyPoll},
      {"stats-json", required_argument, nullptr, kStatsJson},
      {"socket", required_argument, nullptr, 's'},
      {"no-socket", no_argument, nullptr, kNoSocket},
      {"group", required_argument, nullptr, 'g'},
      {"state", required_argument, nullptr, kState},
      {"no-state", no_argument, nullptr, kNoState},
      {"verbose", no_argument, nullptr, 'v'},
      {"version", no_argument, nullptr, 'V'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  int c;
  uint32_t v = 0;
  while ((c = getopt_long(argc, argv, "p:m:x:fs:g:vVh", opts, nullptr)) != -1) {
    switch (c) {
      case 'p': ports.emplace_back(optarg); break;
      case 'm':
        if (!std::strcmp(optarg, "switch")) cfg.mode = vdev::datapath::SwitchMode::kSwitch;
        else if (!std::strcmp(optarg, "xconnect")) cfg.mode = vdev::datapath::SwitchMode::kXconnect;
        else usageError(std::string("unknown mode '") + optarg + "' (switch or xconnect)");
        break;
      case 'x':
        if (!std::strcmp(optarg, "native")) cfg.port.xdp_mode = vdev::datapath::XdpMode::kNative;
        else if (!std::strcmp(optarg, "generic")) cfg.port.xdp_mode = vdev::datapath::XdpMode::kGeneric;
        else if (!std::strcmp(optarg, "auto")) cfg.port.xdp_mode = vdev::datapath::XdpMode::kAuto;
        else usageError(std::string("unknown XDP mode '") + optarg + "' (native, generic or auto)");
        break;
      case 'f': cfg.port.force = true; break;
      case kHostMac: {
        std::array<uint8_t, 6> mac;
        if (!parseMac(optarg, mac)) usageError(std::string("invalid MAC address '") + optarg + "'");
        cfg.host_macs.push_back(mac);
        break;
      }
      case kFrames:
        if (!parseU32(optarg, 512, 1u << 22, cfg.frames)) usageError("--frames must be 512..4194304");
        break;
      case kFrameSize:
        if (!parseU32(optarg, 2048, 4096, cfg.frame_size) || (cfg.frame_size != 2048 && cfg.frame_size != 4096))
          usageError("--frame-size must be 2048 or 4096");
        break;
      case kRingSize:
        if (!parseU32(optarg, 64, 16384, v) || (v & (v - 1)))
          usageError("--ring-size must be a power of two, 64..16384");
        cfg.port.xsk.rx_size = cfg.port.xsk.tx_size = cfg.port.xsk.comp_size = v;
        cfg.port.xsk.fill_size = 2 * v;
        break;
      case kPortRing:
        if (!parseU32(optarg, 1, 1u << 20, cfg.port.ring_capacity)) usageError("--port-ring must be 1..1048576");
        break;
      case kBatch:
        if (!parseU32(optarg, 1, 256, cfg.port.batch)) usageError("--batch must be 1..256");
        break;
      case kTxBudget:
        if (!parseU32(optarg, 0, 16384, cfg.port.xsk.tx_budget)) usageError("--tx-budget must be 0..16384");
        tx_budget_given = true;
        break;
      case kCompletion:
        if (!std::strcmp(optarg, "eager")) {
          cfg.port.completion = vdev::datapath::CompletionMode::kEager;
        } else if (!std::strncmp(optarg, "lazy", 4) && (optarg[4] == 0 || optarg[4] == ':')) {
          cfg.port.completion = vdev::datapath::CompletionMode::kLazy;
          if (optarg[4] == ':' && !parseU32(optarg + 5, 1, 1u << 20, cfg.port.lazy_threshold))
            usageError("--completion lazy:N needs N in 1..1048576");
        } else {
          usageError(std::string("unknown completion mode '") + optarg + "' (eager or lazy[:N])");
        }
        break;
      case kIdleSpin:
        if (!parseU32(optarg, 0, 1000000, v)) usageError("--idle-spin-us must be 0..1000000");
        cfg.idle_spin_ns = uint64_t(v) * 1000;
        break;
      case kFdbAging:
        if (!parseU32(optarg, 1, 1000000, v)) usageError("--fdb-aging must be 1..1000000 seconds");
        cfg.fdb_ageing_ns = uint64_t(v) * 1000000000ull;
        break;
      case kFdbSize:
        if (!parseU32(optarg, 16, 1u << 20, cfg.fdb_size)) usageError("--fdb-size must be 16..1048576");
        break;
      case kFdbPortLimit:
        if (!parseU32(optarg, 0, 1u << 20, cfg.fdb_max_per_port))
          usageError("--fdb-port-limit must be 0..1048576 (0: no limit)");
        break;
      case kFdbHold:
        if (!parseU32(optarg, 0, 3600000, v)) usageError("--fdb-hold-ms must be 0..3600000");
        cfg.fdb_hold_ns = uint64_t(v) * 1000000ull;
        break;
      case kFastPath: cfg.fast_path = cfg.fast_path_required = true; break;
      case kNoFastPath: cfg.fast_path = cfg.fast_path_required = false; break;
      case kNoFastRx: no_fast_rx.emplace_back(optarg); break;
      case kBusyPoll:
        if (!parseU32(optarg, 0, 10000, cfg.port.xsk.busy_poll_us)) usageError("--busy-poll must be 0..10000");
        break;
      case kMaxInflight:
        if (!parseU32(optarg, 1, 1u << 24, cfg.max_inflight)) usageError("--max-inflight must be 1..16777216");
        break;
      case kStatsJson: json_path = optarg; break;
      case 's': socket_path = optarg; break;
      case kNoSocket: socket_path.clear(); break;
      case 'g': group_name = optarg; break;
      case kState: state_path = optarg; break;
      case kNoState: state_path.clear(); break;
      case 'v': verbose = true; break;
      case 'V': std::printf("vdevd %s\n", VDEV_VERSION); return 0;
      case 'h': std::fputs(kUsage, stdout); return 0;
      default: usageError("bad option");
    }
  }
  if (optind < argc) usageError(std::string("unexpected argument '") + argv[optind] + "'");
  // Checked after every option is read: --no-fast-rx may come before its --port.
  for (const auto& n : no_fast_rx)
    if (std::find(ports.begin(), ports.end(), n) == ports.end())
      usageError("--no-fast-rx " + n + ": not a port given with --port (ports added with vdevctl take \"fast-rx off\")");
  if (ports.empty() && socket_path.empty())
    usageError("no ports and no control socket: give --port IFNAME, or leave the socket on");
  if (cfg.mode == vdev::datapath::SwitchMode::kXconnect && ports.size() != 2 && !ports.empty())
    usageError("xconnect mode takes exactly two ports: give both with --port, or none and add them with vdevctl");
  if (!tx_budget_given) cfg.port.xsk.tx_budget = cfg.port.xsk.tx_size;
  cfg.port.xsk.busy_poll_budget = cfg.port.batch;
  uint32_t need = uint32_t(ports.size()) * (cfg.port.xsk.fill_size + cfg.port.xsk.tx_size) + 1024;
  if (cfg.frames < need)
    std::fprintf(stderr, "vdevd: warning: %u frames for %zu ports: fill rings will run short (want >= %u)\n",
                 cfg.frames, ports.size(), need);

  vdev::datapath::setupBpfLogging(verbose);

  std::optional<gid_t> group;
  if (!group_name.empty()) {
    auto g = vdev::proto::groupByName(group_name);
    if (!g) {
      std::fprintf(stderr, "vdevd: group %s: %s\n", group_name.c_str(), g.error().message().c_str());
      return 2;
    }
    group = g.value();
  }

  // The state file is read before anything is attached: a corrupt one stops
  // vdevd here, with nothing half applied.
  vdev::daemon::DaemonState state;
  if (!state_path.empty()) {
    auto st = vdev::daemon::loadState(state_path);
    if (!st) {
      std::fprintf(stderr, "vdevd: refusing to start: %s\n", st.error().message().c_str());
      return 1;
    }
    state = std::move(st.value());
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

  auto dp = vdev::datapath::Datapath::create(cfg);
  if (!dp) {
    std::fprintf(stderr, "vdevd: %s\n", dp.error().message().c_str());
    return 1;
  }
  vdev::datapath::Datapath& d = *dp.value();
  for (const auto& name : ports) {
    vdev::datapath::Datapath::PortOptions o;
    if (std::find(no_fast_rx.begin(), no_fast_rx.end(), name) != no_fast_rx.end()) o.fast_rx = false;
    if (auto st = d.addPort(name, o); !st) {
      std::fprintf(stderr, "vdevd: %s\n", st.error().message().c_str());
      d.teardown();  // detaches what was attached so far
      return 1;
    }
  }
  for (const auto& rec : state.ports) {
    vdev::datapath::Datapath::PortOptions o;
    if (rec.queues) o.queues = rec.queues;
    o.xdp_mode = rec.xdp_mode == "native"    ? vdev::datapath::XdpMode::kNative
                 : rec.xdp_mode == "generic" ? vdev::datapath::XdpMode::kGeneric
                                             : vdev::datapath::XdpMode::kAuto;
    o.fast_rx = rec.fast_rx;
    o.allow_absent = true;  // a saved port whose device is not back yet waits for it
    if (auto st = d.addPort(rec.name, o); !st) {
      std::fprintf(stderr, "vdevd: port %s from %s: %s\n", rec.name.c_str(), state_path.c_str(),
                   st.error().message().c_str());
      d.teardown();
      return 1;
    }
  }

  vdev::daemon::ControlContext ctx;
  ctx.dp = &d;
  ctx.state = &state;
  ctx.state_path = state_path;
  ctx.mode = cfg.mode;
  ctx.fast_path = d.fastPath();
  ctx.started = std::chrono::steady_clock::now();
  vdev::daemon::DaemonControl control(ctx);
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

  // Link events (RTM_NEWLINK/RTM_DELLINK) make the datapath look at its
  // ports at once; its 100 ms housekeeping check remains the fallback.
  std::optional<vdev::rtnl::LinkMonitor> links;
  if (auto lm = vdev::rtnl::LinkMonitor::open(); lm) {
    links.emplace(std::move(lm.value()));
  } else {
    std::fprintf(stderr, "vdevd: link monitor: %s; checking links every 100 ms only\n",
                 lm.error().message().c_str());
  }

  d.start();
  std::printf("vdevd: ready (%zu ports, %s mode%s)\n", d.numPorts(),
              cfg.mode == vdev::datapath::SwitchMode::kSwitch ? "switch" : "xconnect",
              d.fastPath() ? ", kernel fast path" : "");
  std::fflush(stdout);
  char status[128];
  std::snprintf(status, sizeof status, "%zu ports, %s mode", d.numPorts(),
                cfg.mode == vdev::datapath::SwitchMode::kSwitch ? "switch" : "xconnect");
  (void)vdev::daemon::sd::notifyReady(status);
  const auto wd = vdev::daemon::sd::watchdogInterval();
  const int poll_ms = wd.count() > 0 ? int(std::max<int64_t>(1, wd.count() / 2000)) : -1;

  for (bool run = true; run;) {
    struct pollfd fds[3] = {{sigfd.get(), POLLIN, 0},
                            {server ? server->fd() : -1, POLLIN, 0},
                            {links ? links->fd() : -1, POLLIN, 0}};
    int n = ::poll(fds, 3, poll_ms);  // negative fds are ignored by poll()
    if (wd.count() > 0) (void)vdev::daemon::sd::notifyWatchdog();
    if (n < 0) continue;  // EINTR
    if (server && (fds[1].revents & POLLIN)) server->processEvents();
    if (links && (fds[2].revents & POLLIN)) {
      bool any = false;
      auto r = links->processEvents([&](const vdev::rtnl::LinkEvent&) { any = true; });
      if (any || !r) d.checkLinks();  // ENOBUFS (events lost): check everything anyway
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
