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

#include "base/cli.h"
#include "base/parse.h"
#include "daemon_control.h"
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

// "vdp" + 8 hex digits of a hash of `key` (FNV-1a, 32 bits): 11 characters,
// leaving room for the ends' suffix.
std::string puntName(const std::string& key) {
  uint32_t h = 2166136261u;
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof buf, "vdp%08x", h);
  return buf;
}

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
      --frames N           UMEM frames (default 32768). Each port at the XDP
                           hook keeps at least 64 in its fill ring, and more
                           while busy; half the pool is for those floors, so
                           N / 128 ports fit (256 by default; more are refused)
      --frame-size N       2048 or 4096 bytes per frame (default 2048); longer
                           frames are chains of them (AF_XDP multi-buffer,
                           Linux 6.6; without it, vdevd's own path carries
                           frames of one UMEM frame at most)
      --no-multi-buffer    do without AF_XDP multi-buffer, as on a kernel before
                           6.6: vdevd's own path carries frames of one UMEM frame
                           at most (TCP has its MSS lowered to fit on the skb
                           path; other longer frames are dropped as oversize)
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
                           For NICs, with napi_defer_hard_irqs and
                           gro_flush_timeout set on the device (docs/vdevd.md);
                           what it does on veth and tap: docs/performance.md
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
      --hook IFNAME=xdp|tc|auto
                           where the frames the --port IFNAME receives enter
                           vdev (repeatable). tc: the skb-level program at the
                           device's ingress (--tc-attach) -- for senders that hand the
                           kernel skbs, a container's veth or a VM's tap, whose
                           TSO and checksum offload it keeps, or a VXLAN
                           uplink (the default for veth and tun devices and
                           for every device whose driver has no native XDP).
                           xdp: vdevd's XDP program and AF_XDP sockets -- for
                           XDP-native sources, a NIC uplink (the default for
                           every device with native XDP). See
                           docs/architecture.md, "Two kinds of sources".
      --default-hook xdp|tc|auto
                           the hook of every port that names none (a --port
                           without --hook, a port added with vdevctl without
                           "hook", a saved port without one); default auto.
                           A port at auto whose tc attach fails goes to XDP
                           (the reason in this log and in `vdevctl port show`)
      --tc-attach auto|tcx|clsact
                           how the skb-level programs are attached to a
                           device: tcx (Linux 6.6), or classic tc -- a cls_bpf
                           filter in direct-action mode at the clsact qdisc's
                           ingress (handle 0x7664, priority 1; the qdisc is
                           made if the device has none, and never deleted).
                           auto (default): tcx where the kernel has it, else
                           clsact. clsact on a kernel with tcx takes an older
                           kernel's path (tests)
      --xdp-features auto|driver
                           how vdevd knows what a device does for XDP (native
                           XDP for the auto hook, taking redirected frames for
                           the kernel fast path, zero-copy): the kernel's netdev
                           family (Linux 6.3), or before it the device's driver
                           -- veth (when vdevd made it, GRO on its peer) and tun
                           take redirected frames, virtual devices such as VXLAN
                           have no native XDP. auto (default): the netdev family
                           where the kernel has it, else the driver. driver on
                           a newer kernel takes an older kernel's path (tests)
      --no-fast-rx IFNAME  frames received on the --port IFNAME always go
                           through vdevd, never on the fast path; frames to
                           IFNAME may still arrive by it (repeatable). For a
                           VM whose single sending thread is its bottleneck:
                           a tap's XDP program runs inside the VM's write(),
                           so the fast path delivers on the VM's CPU, where
                           vdevd takes the delivery onto its own (figures in
                           docs/performance.md); costs latency. Ports added
                           with vdevctl: "port add ... fast-rx off"
      --fdb-aging SECONDS  learned MAC ageing time (default 300)
      --fdb-size N         MAC table entries (default 4096)

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
      --storm-bcast PPS    broadcast frames one port may send a second (default
                           10000, 0 = no limit): ARP and DHCP of many stations
                           pass, one guest's broadcast storm costs the others
                           next to nothing. Beyond it frames are dropped by the
                           port's program, before vdevd or the fast path
                           (storm_bcast). A token bucket holding 100 ms of the
                           rate: short bursts pass
      --storm-mcast PPS    the same for multicast, broadcast aside (IPv6 ND,
                           mDNS; storm_mcast); default 10000
      --storm-unknown PPS  the same for unicast to MACs not learned, which vdevd
                           floods to every port; vdevd drops what is beyond
                           (storm_unknown); default 10000
      --police-pps PPS     every port's ingress policer: frames a second a port
                           may send, of any kind (default 0 = no policer).
                           Beyond it, dropped by the port's program (police)
      --police-rate RATE   ... and bits a second (frames with their Ethernet
                           header): a number, or one with k, M or G for 10^3,
                           10^6, 10^9 (100M; default 0 = none). With both, a
                           frame passes only while neither is exceeded
      --police-burst MS    the policer's burst: its buckets hold MS milliseconds
                           of its rates, and never less than one frame (default
                           250, 1..10000). A TCP stream gets about MS / 200
                           of the rate below 200 ms (its retransmission
                           timeout); smaller holds the rate more tightly
                           Each of these six is the default of every port; a
                           port added with vdevctl may have its own ("port add
                           ... storm-bcast PPS", vdev-cni's "stormControl",
                           "ingressPolicer"), which it keeps across restarts

Caps per member of --group (root is never capped; docs/vdevd.md):
      --uid-max-ports N    ports one uid may have added (default 64: a CNI
                           host's containers of one rootless runtime user;
                           0 = members add none)
      --uid-max-fdb N      MACs learned on all the ports of one uid together
                           (default a quarter of --fdb-size, 0 = no limit);
                           beyond, frames from further new source MACs on them
                           are dropped (mac_limit), as at --fdb-port-limit
      --uid-max-capture BYTES
                           memory of one uid's running captures: slots of
                           'buffer' x 'snaplen' (default 256M; k, M and G
                           are 2^10, 2^20, 2^30; 0 = no captures)
      --uid-max-rate N     control requests a second one uid may send (default
                           100, 0 = no limit); beyond, refused with EAGAIN
      --uid-rate-burst N   ... and at once after a quiet time (default 200)

Control and state:
  -s, --socket PATH        control socket for vdevctl (default /run/vdev/vdevd.sock;
                           its directory is created 0755, the socket is 0660;
                           a directory that is a symlink, not vdevd's, or
                           writable by group or others is refused)
      --no-socket          no control socket (ports from the command line only)
  -g, --group NAME         members of this group may use the control socket
                           (besides root) for what is their own: their taps,
                           veths into namespaces they administer, ports they
                           added (docs/vdevctl.md); the socket gets this group
      --state FILE         ports added at run time, restored at start (default
                           /var/lib/vdev/vdevd.state; its directory is created
                           0700 and checked like the socket's). What cannot
                           be restored (a bad line, a record vdevd would not
                           have written, one also given with --port) is
                           logged, shown by `vdevctl info`, and left out; a
                           file that had such problems is kept as
                           FILE.rejected. A saved port that fails to start
                           (a --frames too small for it, a device refusing
                           XDP) is kept, shown inactive with the reason by
                           `vdevctl port show` and `info`, and retried (after
                           1 s, doubling up to 30 s) until it starts or is
                           deleted
      --no-state           keep nothing across restarts

Output:
      --stats-json PATH    on SIGUSR1 and at exit, write statistics as JSON to
                           PATH (via PATH.tmp and rename)
      --metrics-listen [ADDR:]PORT
                           serve the metrics of `vdevctl stats --prometheus`
                           (Prometheus text format) at http://ADDR:PORT/metrics,
                           from the control thread, never the datapath's. ADDR:
                           a numeric IPv4 address, or an IPv6 one in brackets
                           ([::1]:9469); none: 127.0.0.1. PORT 0: any free one
                           (vdevd prints where). At most 16 connections at once,
                           8 from one address, each closed after 10 s idle;
                           every port's name and counters to whoever may
                           connect; one collection per 250 ms at most, whatever
                           the scrapers. Off by default
      --metrics-allow CIDR[,CIDR...]
                           only these clients may connect to --metrics-listen
                           (e.g. 127.0.0.1,10.0.0.0/24,::1); others are closed
                           at accept. Default: any that can reach ADDR
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

// --uid-max-capture: bytes, with k, M or G for 2^10, 2^20, 2^30 (memory,
// not a rate).
uint64_t captureBytesArg(std::string_view v) {
  const std::string msg = "--uid-max-capture must be bytes: a number, or one with k, M or G (256M)";
  uint64_t unit = 1;
  if (!v.empty() && (v.back() == 'k' || v.back() == 'M' || v.back() == 'G')) {
    unit = v.back() == 'k' ? 1ull << 10 : v.back() == 'M' ? 1ull << 20 : 1ull << 30;
    v.remove_suffix(1);
  }
  return vdev::cli::u64(v, 0, (1ull << 50) / unit, msg) * unit;
}

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
  vdev::datapath::DatapathConfig cfg;
  cfg.port.xsk.tx_budget = 1;  // placeholder: "ring size" unless given
  bool tx_budget_given = false;
  std::vector<std::string> ports;
  std::vector<std::string> no_fast_rx;  // --no-fast-rx: names among `ports`
  std::vector<std::pair<std::string, vdev::datapath::PortHook>> hooks;  // --hook IFNAME=xdp|tc
  std::string json_path;
  bool verbose = false;
  std::string metrics_text;  // --metrics-listen as given
  std::optional<vdev::daemon::ListenAddress> metrics_addr;
  std::vector<vdev::daemon::AllowedNet> metrics_allow;  // --metrics-allow

  std::string socket_path = vdev::proto::kDefaultSocketPath;
  std::string state_path = "/var/lib/vdev/vdevd.state";
  std::string group_name;
  vdev::daemon::UidCaps caps;
  bool fdb_cap_given = false;
  namespace cli = vdev::cli;
  using cli::Arg;
  const cli::Parser parser({"vdevd", kUsage}, {
      {"port", 'p', Arg::kRequired, [&](std::string_view v) { ports.emplace_back(v); }},
      {"mode", 'm', Arg::kRequired, [&](std::string_view v) {
         if (v == "switch") cfg.mode = vdev::datapath::SwitchMode::kSwitch;
         else if (v == "xconnect") cfg.mode = vdev::datapath::SwitchMode::kXconnect;
         else cli::fail("unknown mode '" + std::string(v) + "' (switch or xconnect)");
       }},
      {"xdp-mode", 'x', Arg::kRequired, [&](std::string_view v) {
         if (v == "native") cfg.port.xdp_mode = vdev::datapath::XdpMode::kNative;
         else if (v == "generic") cfg.port.xdp_mode = vdev::datapath::XdpMode::kGeneric;
         else if (v == "auto") cfg.port.xdp_mode = vdev::datapath::XdpMode::kAuto;
         else cli::fail("unknown XDP mode '" + std::string(v) + "' (native, generic or auto)");
       }},
      {"force", 'f', Arg::kNone, [&](std::string_view) { cfg.port.force = true; }},
      {"host-mac", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.host_macs.push_back(cli::mac(v, "invalid MAC address '" + std::string(v) + "'"));
       }},
      {"frames", 0, Arg::kRequired,
       [&](std::string_view v) { cfg.frames = cli::u32(v, 512, 1u << 22, "--frames must be 512..4194304"); }},
      {"frame-size", 0, Arg::kRequired, [&](std::string_view v) {
         const auto n = vdev::parseU32(v, 2048, 4096);
         if (!n || (*n != 2048 && *n != 4096)) cli::fail("--frame-size must be 2048 or 4096");
         cfg.frame_size = *n;
       }},
      {"no-multi-buffer", 0, Arg::kNone, [&](std::string_view) { cfg.port.xsk.multi_buffer = false; }},
      {"ring-size", 0, Arg::kRequired, [&](std::string_view v) {
         const auto n = vdev::parseU32(v, 64, 16384);
         if (!n || (*n & (*n - 1))) cli::fail("--ring-size must be a power of two, 64..16384");
         cfg.port.xsk.rx_size = cfg.port.xsk.tx_size = cfg.port.xsk.comp_size = *n;
         cfg.port.xsk.fill_size = 2 * *n;
       }},
      {"port-ring", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.port.ring_capacity = cli::u32(v, 1, 1u << 20, "--port-ring must be 1..1048576");
       }},
      {"batch", 0, Arg::kRequired,
       [&](std::string_view v) { cfg.port.batch = cli::u32(v, 1, 256, "--batch must be 1..256"); }},
      {"tx-budget", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.port.xsk.tx_budget = cli::u32(v, 0, 16384, "--tx-budget must be 0..16384");
         tx_budget_given = true;
       }},
      {"completion", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "eager") {
           cfg.port.completion = vdev::datapath::CompletionMode::kEager;
         } else if (v == "lazy" || v.starts_with("lazy:")) {
           cfg.port.completion = vdev::datapath::CompletionMode::kLazy;
           if (v.size() > 4)
             cfg.port.lazy_threshold = cli::u32(v.substr(5), 1, 1u << 20, "--completion lazy:N needs N in 1..1048576");
         } else {
           cli::fail("unknown completion mode '" + std::string(v) + "' (eager or lazy[:N])");
         }
       }},
      {"idle-spin-us", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.idle_spin_ns = uint64_t(cli::u32(v, 0, 1000000, "--idle-spin-us must be 0..1000000")) * 1000;
       }},
      {"fdb-aging", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.fdb_ageing_ns =
             uint64_t(cli::u32(v, 1, 1000000, "--fdb-aging must be 1..1000000 seconds")) * 1000000000ull;
       }},
      {"fdb-size", 0, Arg::kRequired,
       [&](std::string_view v) { cfg.fdb_size = cli::u32(v, 16, 1u << 20, "--fdb-size must be 16..1048576"); }},
      {"fdb-port-limit", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.fdb_max_per_port = cli::u32(v, 0, 1u << 20, "--fdb-port-limit must be 0..1048576 (0: no limit)");
       }},
      {"fdb-hold-ms", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.fdb_hold_ns = uint64_t(cli::u32(v, 0, 3600000, "--fdb-hold-ms must be 0..3600000")) * 1000000ull;
       }},
      {"max-inflight", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.max_inflight = cli::u32(v, 1, 1u << 24, "--max-inflight must be 1..16777216");
       }},
      {"storm-bcast", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.limits.bcast_pps = cli::u32(v, 0, UINT32_MAX, "--storm-bcast must be 0..4294967295 frames/s (0: no limit)");
       }},
      {"storm-mcast", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.limits.mcast_pps = cli::u32(v, 0, UINT32_MAX, "--storm-mcast must be 0..4294967295 frames/s (0: no limit)");
       }},
      {"storm-unknown", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.limits.unknown_pps =
             cli::u32(v, 0, UINT32_MAX, "--storm-unknown must be 0..4294967295 frames/s (0: no limit)");
       }},
      {"police-pps", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.limits.police_pps = cli::u64(v, 0, UINT64_MAX, "--police-pps must be a number of packets/s (0: no policer)");
       }},
      {"police-rate", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.limits.police_bps =
             cli::rate(v, "--police-rate must be bits/s: a number, or one with k, M or G (100M; 0: no policer)");
       }},
      {"police-burst", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.limits.police_burst_ms = cli::u32(v, 1, 10000, "--police-burst must be 1..10000 milliseconds");
       }},
      {"fast-path", 0, Arg::kNone, [&](std::string_view) { cfg.fast_path = cfg.fast_path_required = true; }},
      {"no-fast-path", 0, Arg::kNone, [&](std::string_view) { cfg.fast_path = cfg.fast_path_required = false; }},
      {"no-fast-rx", 0, Arg::kRequired, [&](std::string_view v) { no_fast_rx.emplace_back(v); }},
      {"hook", 0, Arg::kRequired,
       [&](std::string_view v) {
         const size_t eq = v.find('=');
         const std::string_view name = v.substr(0, eq), h = eq == v.npos ? "" : v.substr(eq + 1);
         if (eq == v.npos || name.empty() || (h != "xdp" && h != "tc" && h != "auto"))
           cli::fail("--hook takes IFNAME=xdp, IFNAME=tc or IFNAME=auto, not '" + std::string(v) + "'");
         hooks.emplace_back(std::string(name), h == "xdp"  ? vdev::datapath::PortHook::kXdp
                                               : h == "tc" ? vdev::datapath::PortHook::kTc
                                                           : vdev::datapath::PortHook::kAuto);
       }},
      {"default-hook", 0, Arg::kRequired,
       [&](std::string_view v) {
         if (v != "xdp" && v != "tc" && v != "auto")
           cli::fail("--default-hook takes xdp, tc or auto, not '" + std::string(v) + "'");
         cfg.port.hook = v == "xdp" ? vdev::datapath::PortHook::kXdp
                         : v == "tc" ? vdev::datapath::PortHook::kTc
                                     : vdev::datapath::PortHook::kAuto;
       }},
      {"tc-attach", 0, Arg::kRequired,
       [&](std::string_view v) {
         if (v != "auto" && v != "tcx" && v != "clsact")
           cli::fail("--tc-attach takes auto, tcx or clsact, not '" + std::string(v) + "'");
         cfg.tc_attach = v == "tcx"      ? vdev::datapath::TcAttach::kTcx
                         : v == "clsact" ? vdev::datapath::TcAttach::kClsact
                                         : vdev::datapath::TcAttach::kAuto;
       }},
      {"xdp-features", 0, Arg::kRequired,
       [&](std::string_view v) {
         if (v != "auto" && v != "driver")
           cli::fail("--xdp-features takes auto or driver, not '" + std::string(v) + "'");
         cfg.xdp_features =
             v == "driver" ? vdev::datapath::XdpFeatures::Source::kDriver : vdev::datapath::XdpFeatures::Source::kAuto;
       }},
      {"busy-poll", 0, Arg::kRequired, [&](std::string_view v) {
         cfg.port.xsk.busy_poll_us = cli::u32(v, 0, 10000, "--busy-poll must be 0..10000");
       }},
      {"stats-json", 0, Arg::kRequired, [&](std::string_view v) { json_path = v; }},
      {"metrics-listen", 0, Arg::kRequired, [&](std::string_view v) {
         auto a = vdev::daemon::parseListenAddress(v);
         if (!a) cli::fail("--metrics-listen " + a.error().what);
         metrics_text = v;
         metrics_addr = *a;
       }},
      {"uid-max-ports", 0, Arg::kRequired,
       [&](std::string_view v) { caps.ports = cli::u32(v, 0, 1u << 16, "--uid-max-ports must be 0..65536"); }},
      {"uid-max-fdb", 0, Arg::kRequired, [&](std::string_view v) {
         caps.fdb = cli::u32(v, 0, 1u << 20, "--uid-max-fdb must be 0..1048576 (0: no limit)");
         fdb_cap_given = true;
       }},
      {"uid-max-capture", 0, Arg::kRequired, [&](std::string_view v) {
         caps.capture_bytes = captureBytesArg(v);
       }},
      {"uid-max-rate", 0, Arg::kRequired, [&](std::string_view v) {
         caps.rate = cli::u32(v, 0, 1000000, "--uid-max-rate must be 0..1000000 requests/s (0: no limit)");
       }},
      {"uid-rate-burst", 0, Arg::kRequired, [&](std::string_view v) {
         caps.burst = cli::u32(v, 1, 1000000, "--uid-rate-burst must be 1..1000000 requests");
       }},
      {"metrics-allow", 0, Arg::kRequired, [&](std::string_view v) {
         auto a = vdev::daemon::parseAllowList(v);
         if (!a) cli::fail("--metrics-allow " + a.error().what);
         metrics_allow = std::move(a.value());
       }},
      {"socket", 's', Arg::kRequired, [&](std::string_view v) { socket_path = v; }},
      {"no-socket", 0, Arg::kNone, [&](std::string_view) { socket_path.clear(); }},
      {"group", 'g', Arg::kRequired, [&](std::string_view v) { group_name = v; }},
      {"state", 0, Arg::kRequired, [&](std::string_view v) { state_path = v; }},
      {"no-state", 0, Arg::kNone, [&](std::string_view) { state_path.clear(); }},
      {"verbose", 'v', Arg::kNone, [&](std::string_view) { verbose = true; }},
  });
  parser.parseOrExit(argc, argv, [&](const std::vector<std::string>&) {
    // After every option is read: --no-fast-rx may come before its --port.
    for (const auto& [n, h] : hooks)
      if (std::find(ports.begin(), ports.end(), n) == ports.end())
        cli::fail("--hook " + n + "=...: not a port given with --port (ports added with vdevctl take \"hook xdp|tc\")");
    for (const auto& n : no_fast_rx)
      if (std::find(ports.begin(), ports.end(), n) == ports.end())
        cli::fail("--no-fast-rx " + n + ": not a port given with --port (ports added with vdevctl take \"fast-rx off\")");
    if (ports.empty() && socket_path.empty())
      cli::fail("no ports and no control socket: give --port IFNAME, or leave the socket on");
    if (cfg.mode == vdev::datapath::SwitchMode::kXconnect && ports.size() != 2 && !ports.empty())
      cli::fail("xconnect mode takes exactly two ports: give both with --port, or none and add them with vdevctl");
  });
  if (!tx_budget_given) cfg.port.xsk.tx_budget = cfg.port.xsk.tx_size;
  // A quarter: four tenants at their cap still leave the table room.
  if (!fdb_cap_given) caps.fdb = std::max<uint32_t>(cfg.fdb_size / 4, 1);
  cfg.fdb_max_per_group = caps.fdb;
  vdev::daemon::UidQuota quota(caps, vdev::datapath::Fdb::kMaxGroups);
  // The punt device (datapath/punt.h): one per vdevd, named after its
  // control socket (or its first port, without one), so that two vdevds in
  // one network namespace never share it and a restarted one finds its own.
  cfg.punt_name = puntName(socket_path.empty() ? (ports.empty() ? std::string() : ports.front()) : socket_path);
  cfg.port.xsk.busy_poll_budget = cfg.port.batch;
  // Half the pool is for the fill rings' floors (Datapath::refill): ports at
  // the XDP hook beyond them are refused.
  const uint32_t floors = cfg.frames / 2 / std::min<uint32_t>(64, cfg.port.xsk.fill_size);
  if (ports.size() > floors)
    std::fprintf(stderr,
                 "vdevd: warning: %u frames hold the fill-ring floors of %u ports at the XDP hook; of %zu, the "
                 "others fail unless at the tc hook (raise --frames)\n",
                 cfg.frames, floors, ports.size());

  vdev::datapath::setupBpfLogging(verbose);

  // The metrics socket is bound before anything is attached: an address in
  // use or not on this host stops vdevd here, naming it.
  vdev::FileDesc metrics_listener;
  if (metrics_addr) {
    auto l = vdev::daemon::listenTcp(*metrics_addr);
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
    mc.allow = metrics_allow;
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
