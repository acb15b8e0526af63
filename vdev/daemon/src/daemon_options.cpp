// vdevd's command line: see daemon_options.h.
#include "daemon_options.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "base/parse.h"

namespace vdev::daemon {

const char kVdevdHelp[] = R"(Usage: vdevd [--port IFNAME ...] [OPTIONS]

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
      --host-mac MAC       frames to MAC go to the host stack (repeatable, at
                           most 64); every port's own MAC always does

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
      --ring-size N        AF_XDP RX, TX and completion ring size, power of two
                           (default: RX 4096, TX and completion 1024; the fill
                           ring is twice the RX ring)
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

namespace {

// --uid-max-capture: bytes, with k, M or G for 2^10, 2^20, 2^30 (memory,
// not a rate).
uint64_t captureBytesArg(std::string_view v) {
  const std::string msg = "--uid-max-capture must be bytes: a number, or one with k, M or G (256M)";
  uint64_t unit = 1;
  if (!v.empty() && (v.back() == 'k' || v.back() == 'M' || v.back() == 'G')) {
    unit = v.back() == 'k' ? 1ull << 10 : v.back() == 'M' ? 1ull << 20 : 1ull << 30;
    v.remove_suffix(1);
  }
  return cli::u64(v, 0, (1ull << 50) / unit, msg) * unit;
}

// "vdp" + 8 hex digits of a hash of `key` (FNV-1a, 32 bits): 11 characters,
// leaving room for the ends' suffix.
std::string puntName(const std::string& key) {
  uint32_t h = 2166136261u;
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof buf, "vdp%08x", h);
  return buf;
}

bool given(const std::vector<std::string>& ports, const std::string& name) {
  return std::find(ports.begin(), ports.end(), name) != ports.end();
}

// The checks that need more than one option, after every option is read:
// --no-fast-rx may come before its --port.
void check(const DaemonOptions& o) {
  for (const auto& [n, h] : o.hooks)
    if (!given(o.ports, n))
      cli::fail("--hook " + n + "=...: not a port given with --port (ports added with vdevctl take \"hook xdp|tc\")");
  for (const auto& n : o.no_fast_rx)
    if (!given(o.ports, n))
      cli::fail("--no-fast-rx " + n + ": not a port given with --port (ports added with vdevctl take \"fast-rx off\")");
  if (o.ports.empty() && o.socket_path.empty())
    cli::fail("no ports and no control socket: give --port IFNAME, or leave the socket on");
  if (o.cfg.mode == datapath::SwitchMode::kXconnect && o.ports.size() != 2 && !o.ports.empty())
    cli::fail("xconnect mode takes exactly two ports: give both with --port, or none and add them with vdevctl");
  // Any port may come to the XDP hook (a --port, a port add with hook xdp),
  // and each there holds every host MAC: more would fail those ports' adds.
  if (o.cfg.host_macs.size() > datapath::kMaxHostMacs)
    cli::fail(std::to_string(o.cfg.host_macs.size()) + " host MACs (--host-mac): at most " +
              std::to_string(datapath::kMaxHostMacs));
}

// The defaults that are other options' values.
void finish(DaemonOptions& o, FILE* err) {
  datapath::DatapathConfig& cfg = o.cfg;
  if (!o.tx_budget_given) cfg.port.xsk.tx_budget = cfg.port.xsk.tx_size;
  // A quarter: four tenants at their cap still leave the table room.
  if (!o.fdb_cap_given) o.caps.fdb = std::max<uint32_t>(cfg.fdb_size / 4, 1);
  cfg.fdb_max_per_group = o.caps.fdb;
  // The punt device (datapath/punt.h): one per vdevd, named after its
  // control socket (or its first port, without one), so that two vdevds in
  // one network namespace never share it and a restarted one finds its own.
  cfg.punt_name =
      puntName(o.socket_path.empty() ? (o.ports.empty() ? std::string() : o.ports.front()) : o.socket_path);
  cfg.port.xsk.busy_poll_budget = cfg.port.batch;
  // Half the pool is for the fill rings' floors (Datapath::refill): ports at
  // the XDP hook beyond them are refused.
  const uint32_t floors = cfg.frames / 2 / std::min<uint32_t>(64, cfg.port.xsk.fill_size);
  if (o.ports.size() > floors)
    std::fprintf(err,
                 "vdevd: warning: %u frames hold the fill-ring floors of %u ports at the XDP hook; of %zu, the "
                 "others fail unless at the tc hook (raise --frames)\n",
                 cfg.frames, floors, o.ports.size());
}

}  // namespace

std::vector<cli::Option> vdevdOptionTable(DaemonOptions& o) {
  using cli::Arg;
  return {
    {"port", 'p', Arg::kRequired, [&](std::string_view v) { o.ports.emplace_back(v); }},
    {"mode", 'm', Arg::kRequired, [&](std::string_view v) {
       const auto m = spec::byName(v, {datapath::SwitchMode::kSwitch, datapath::SwitchMode::kXconnect});
       if (!m) cli::fail("unknown mode '" + std::string(v) + "' (switch or xconnect)");
       o.cfg.mode = *m;
     }},
    {"xdp-mode", 'x', Arg::kRequired, [&](std::string_view v) {
       const auto m = xdpModeByName(v);
       if (!m) cli::fail("unknown XDP mode '" + std::string(v) + "' (native, generic or auto)");
       o.cfg.port.xdp_mode = *m;
     }},
    {"force", 'f', Arg::kNone, [&](std::string_view) { o.cfg.port.force = true; }},
    {"host-mac", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.host_macs.push_back(cli::mac(v, "invalid MAC address '" + std::string(v) + "'"));
     }},
    {"frames", 0, Arg::kRequired,
     [&](std::string_view v) { o.cfg.frames = cli::u32(v, 512, 1u << 22, "--frames must be 512..4194304"); }},
    {"frame-size", 0, Arg::kRequired, [&](std::string_view v) {
       const auto n = parseU32(v, 2048, 4096);
       if (!n || (*n != 2048 && *n != 4096)) cli::fail("--frame-size must be 2048 or 4096");
       o.cfg.frame_size = *n;
     }},
    {"no-multi-buffer", 0, Arg::kNone, [&](std::string_view) { o.cfg.port.xsk.multi_buffer = false; }},
    {"ring-size", 0, Arg::kRequired, [&](std::string_view v) {
       const auto n = parseU32(v, 64, 16384);
       if (!n || (*n & (*n - 1))) cli::fail("--ring-size must be a power of two, 64..16384");
       o.cfg.port.xsk.rx_size = o.cfg.port.xsk.tx_size = o.cfg.port.xsk.comp_size = *n;
       o.cfg.port.xsk.fill_size = 2 * *n;
     }},
    {"port-ring", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.port.ring_capacity = cli::u32(v, 1, 1u << 20, "--port-ring must be 1..1048576");
     }},
    {"batch", 0, Arg::kRequired,
     [&](std::string_view v) { o.cfg.port.batch = cli::u32(v, 1, 256, "--batch must be 1..256"); }},
    {"tx-budget", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.port.xsk.tx_budget = cli::u32(v, 0, 16384, "--tx-budget must be 0..16384");
       o.tx_budget_given = true;
     }},
    {"completion", 0, Arg::kRequired, [&](std::string_view v) {
       if (v == "eager") {
         o.cfg.port.completion = datapath::CompletionMode::kEager;
       } else if (v == "lazy" || v.starts_with("lazy:")) {
         o.cfg.port.completion = datapath::CompletionMode::kLazy;
         if (v.size() > 4)
           o.cfg.port.lazy_threshold = cli::u32(v.substr(5), 1, 1u << 20, "--completion lazy:N needs N in 1..1048576");
       } else {
         cli::fail("unknown completion mode '" + std::string(v) + "' (eager or lazy[:N])");
       }
     }},
    {"idle-spin-us", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.idle_spin_ns = uint64_t(cli::u32(v, 0, 1000000, "--idle-spin-us must be 0..1000000")) * 1000;
     }},
    {"fdb-aging", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.fdb_ageing_ns =
           uint64_t(cli::u32(v, 1, 1000000, "--fdb-aging must be 1..1000000 seconds")) * 1000000000ull;
     }},
    {"fdb-size", 0, Arg::kRequired,
     [&](std::string_view v) { o.cfg.fdb_size = cli::u32(v, 16, 1u << 20, "--fdb-size must be 16..1048576"); }},
    {"fdb-port-limit", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.fdb_max_per_port = cli::u32(v, 0, 1u << 20, "--fdb-port-limit must be 0..1048576 (0: no limit)");
     }},
    {"fdb-hold-ms", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.fdb_hold_ns = uint64_t(cli::u32(v, 0, 3600000, "--fdb-hold-ms must be 0..3600000")) * 1000000ull;
     }},
    {"max-inflight", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.max_inflight = cli::u32(v, 1, 1u << 24, "--max-inflight must be 1..16777216");
     }},
    {"storm-bcast", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.limits.storm_bcast = cli::u32(v, 0, UINT32_MAX, "--storm-bcast must be 0..4294967295 frames/s (0: no limit)");
     }},
    {"storm-mcast", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.limits.storm_mcast = cli::u32(v, 0, UINT32_MAX, "--storm-mcast must be 0..4294967295 frames/s (0: no limit)");
     }},
    {"storm-unknown", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.limits.storm_unknown =
           cli::u32(v, 0, UINT32_MAX, "--storm-unknown must be 0..4294967295 frames/s (0: no limit)");
     }},
    {"police-pps", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.limits.police_pps = cli::u64(v, 0, UINT64_MAX, "--police-pps must be a number of packets/s (0: no policer)");
     }},
    {"police-rate", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.limits.police_bps =
           cli::rate(v, "--police-rate must be bits/s: a number, or one with k, M or G (100M; 0: no policer)");
     }},
    {"police-burst", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.limits.police_burst_ms = cli::u32(v, 1, 10000, "--police-burst must be 1..10000 milliseconds");
     }},
    {"fast-path", 0, Arg::kNone, [&](std::string_view) { o.cfg.fast_path = o.cfg.fast_path_required = true; }},
    {"no-fast-path", 0, Arg::kNone, [&](std::string_view) { o.cfg.fast_path = o.cfg.fast_path_required = false; }},
    {"no-fast-rx", 0, Arg::kRequired, [&](std::string_view v) { o.no_fast_rx.emplace_back(v); }},
    {"hook", 0, Arg::kRequired,
     [&](std::string_view v) {
       const size_t eq = v.find('=');
       const std::string_view name = v.substr(0, eq), h = eq == v.npos ? "" : v.substr(eq + 1);
       const auto hook = portHookByName(h);
       if (eq == v.npos || name.empty() || !hook)
         cli::fail("--hook takes IFNAME=xdp, IFNAME=tc or IFNAME=auto, not '" + std::string(v) + "'");
       o.hooks.emplace_back(std::string(name), *hook);
     }},
    {"default-hook", 0, Arg::kRequired,
     [&](std::string_view v) {
       const auto hook = portHookByName(v);
       if (!hook) cli::fail("--default-hook takes xdp, tc or auto, not '" + std::string(v) + "'");
       o.cfg.port.hook = *hook;
     }},
    {"tc-attach", 0, Arg::kRequired,
     [&](std::string_view v) {
       const auto a = spec::byName(v, {datapath::TcAttach::kAuto, datapath::TcAttach::kTcx, datapath::TcAttach::kClsact});
       if (!a) cli::fail("--tc-attach takes auto, tcx or clsact, not '" + std::string(v) + "'");
       o.cfg.tc_attach = *a;
     }},
    {"xdp-features", 0, Arg::kRequired,
     [&](std::string_view v) {
       // Not "netdev": that source is what auto finds, never forced.
       const auto s = spec::byName(v, {datapath::XdpFeatures::Source::kAuto, datapath::XdpFeatures::Source::kDriver},
                                   datapath::XdpFeatures::sourceName);
       if (!s) cli::fail("--xdp-features takes auto or driver, not '" + std::string(v) + "'");
       o.cfg.xdp_features = *s;
     }},
    {"busy-poll", 0, Arg::kRequired, [&](std::string_view v) {
       o.cfg.port.xsk.busy_poll_us = cli::u32(v, 0, 10000, "--busy-poll must be 0..10000");
     }},
    {"stats-json", 0, Arg::kRequired, [&](std::string_view v) { o.json_path = v; }},
    {"metrics-listen", 0, Arg::kRequired, [&](std::string_view v) {
       auto a = parseListenAddress(v);
       if (!a) cli::fail("--metrics-listen " + a.error().what);
       o.metrics_text = v;
       o.metrics_addr = *a;
     }},
    {"uid-max-ports", 0, Arg::kRequired,
     [&](std::string_view v) { o.caps.ports = cli::u32(v, 0, 1u << 16, "--uid-max-ports must be 0..65536"); }},
    {"uid-max-fdb", 0, Arg::kRequired, [&](std::string_view v) {
       o.caps.fdb = cli::u32(v, 0, 1u << 20, "--uid-max-fdb must be 0..1048576 (0: no limit)");
       o.fdb_cap_given = true;
     }},
    {"uid-max-capture", 0, Arg::kRequired, [&](std::string_view v) {
       o.caps.capture_bytes = captureBytesArg(v);
     }},
    {"uid-max-rate", 0, Arg::kRequired, [&](std::string_view v) {
       o.caps.rate = cli::u32(v, 0, 1000000, "--uid-max-rate must be 0..1000000 requests/s (0: no limit)");
     }},
    {"uid-rate-burst", 0, Arg::kRequired, [&](std::string_view v) {
       o.caps.burst = cli::u32(v, 1, 1000000, "--uid-rate-burst must be 1..1000000 requests");
     }},
    {"metrics-allow", 0, Arg::kRequired, [&](std::string_view v) {
       auto a = parseAllowList(v);
       if (!a) cli::fail("--metrics-allow " + a.error().what);
       o.metrics_allow = std::move(a.value());
     }},
    {"socket", 's', Arg::kRequired, [&](std::string_view v) { o.socket_path = v; }},
    {"no-socket", 0, Arg::kNone, [&](std::string_view) { o.socket_path.clear(); }},
    {"group", 'g', Arg::kRequired, [&](std::string_view v) { o.group_name = v; }},
    {"state", 0, Arg::kRequired, [&](std::string_view v) { o.state_path = v; }},
    {"no-state", 0, Arg::kNone, [&](std::string_view) { o.state_path.clear(); }},
    {"verbose", 'v', Arg::kNone, [&](std::string_view) { o.verbose = true; }},
  };
}

cli::Parser::Outcome parseVdevdOptions(int argc, char** argv, DaemonOptions& o, FILE* out, FILE* err) {
  const cli::Parser parser({"vdevd", kVdevdHelp}, vdevdOptionTable(o));
  cli::Parser::Outcome r = parser.parse(argc, argv, [&](const std::vector<std::string>&) { check(o); }, out, err);
  if (!r.exit) finish(o, err);
  return r;
}

}  // namespace vdev::daemon
