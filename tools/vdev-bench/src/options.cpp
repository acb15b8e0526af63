// options.cpp - see options.h.
#include "options.h"

#include <sstream>
#include <string_view>

#include "base/cli.h"
#include "base/parse.h"
#include "datapath.h"
#include "frame.h"
#include "real.h"
#include "two_host.h"

namespace vdev::bench {

namespace cli = vdev::cli;
using cli::Arg;

const char* napiTimingName(NapiTiming t) {
  switch (t) {
    case NapiTiming::kSplit: return "split";
    case NapiTiming::kOn: return "on";
    case NapiTiming::kOff: return "off";
  }
  return "?";
}

const char* latencyModeName(LatencyMode m) {
  switch (m) {
    case LatencyMode::kOn: return "on";
    case LatencyMode::kOff: return "off";
    case LatencyMode::kOnly: return "only";
  }
  return "?";
}

namespace {

constexpr const char kHelp[] = R"(NAME
    vdev-bench - forwarding benchmark: vdevd against the Linux bridge and kernel XDP redirect

SYNOPSIS
    vdev-bench [--scenario veth-veth|veth-tap|tap-veth|switch] [--datapath LIST]
               [--duration S] [--runs N] [--frame-size B] [--latency on|off|only]
               [--find-rate] [--rate PPS] [--idle-ports N] [--json] [--vdevd PATH] [OPTIONS]
    vdev-bench --real [--runs N] [--duration S] [--mtu LIST] [--datapath LIST]
               [--vdevd PATH] [--vdev-vm PATH] [--idle-ports N [--idle-cpu S]] [--json]
    vdev-bench --two-host [--uplink vxlan|veth|both] [--runs N] [--duration S]
               [--datapath LIST] [--vdevd PATH] [--vdevctl PATH] [--json]

DESCRIPTION
    Builds a private topology of network namespaces, offers a continuous stream of
    identical UDP frames to one port of a device under test (DUT) and counts, exactly,
    what arrives at the other port; then measures round-trip latency between the
    containers and the VM stand-in with UDP request/response probes. Each datapath in
    LIST forwards between the SAME ports, one after the other, in the same invocation:

      vdevd          vdevd --port A --port B --mode xconnect (the AF_XDP datapath)
      vdevd-switch   the same with --mode switch --no-fast-path (L2 learning switch,
                     every frame through vdevd)
      vdevd-spin     vdevd (xconnect; switch --no-fast-path in the switch scenario) with
                     --idle-spin-us 1000000: it never sleeps while frames come more than
                     once a second; vdevd's nearest to busy polling
      vdevd-fast     vdevd --mode switch --fast-path (vdevd's default mode): learned
                     unicast is redirected by the ports' XDP programs through a devmap
                     (the kernel's bulk ndo_xdp_xmit), everything else goes through
                     vdevd. The sink veth gets GRO on, as vdevd gives the container end
                     of every veth it creates (a veth takes redirected frames only with
                     NAPI)
      vdevd-rx-off   vdevd-fast with --no-fast-rx on the ingress port A: what the
                     generator (or the VM, in tap-veth) sends goes through vdevd's
                     thread, the answers may take the fast path; the per-port choice
                     for a VM whose sending thread is its bottleneck
      bridge         a Linux bridge enslaving the ports (STP off; a static FDB entry for
                     the sink, except in the switch scenario, where it learns)
      xdp-redirect   an XDP program on A redirecting into B through a devmap (and one on
                     B back into A, for the latency probes' answers): the kernel's
                     cheapest forwarding, the upper bound. Two ports only.
      dpdk-af-xdp    dpdk-testpmd forwarding A <-> B through DPDK's AF_XDP poll-mode
                     driver (io mode, no hugepages): another userspace AF_XDP datapath,
                     in copy mode on veths and taps as vdevd. Its forwarding lcore
                     polls on the datapath CPU without ever sleeping (a whole core);
                     the main lcore waits on the generator CPU. Needs dpdk-testpmd
                     (Debian: dpdk-dev and librte-net-af-xdp23); two ports only.
      ovs-af-xdp     Open vSwitch's userspace datapath (datapath_type=netdev) with A and
                     B as afxdp ports joined by two flows (in_port=A -> B, B -> A);
                     ovsdb-server and ovs-vswitchd started from a private directory in
                     the DUT namespace, the PMD thread on the datapath CPU (it polls
                     without sleeping). Needs Debian's openvswitch-switch, which is
                     built with afxdp; no host service is used. Two ports only.

    Topology (P = vb<pid>; everything lives in namespaces created for the run and is
    removed at exit, also on error and SIGINT/SIGTERM):

      veth-veth: P-gen: Pg (veth) == P-dut: Pa (veth) [datapath] Pb (veth) == P-sink: Ps (veth)
      veth-tap:  ... Pb is a tap, read() by a thread of vdev-bench (the VM)
      tap-veth:  Pa is a tap the VM write()s the frames into (one write() per frame, as
                 QEMU without vhost); Pb, Ps as veth-veth
      switch:    veth-veth plus Pc, a tap read by the VM: two containers and a VM on one
                 learning switch (vdevd-switch, vdevd-spin, vdevd-fast, bridge); traffic Pg -> Ps;
                 frames flooded to the VM are counted

    The generator runs an XDP program with BPF_PROG_RUN in live-frames mode
    (BPF_F_TEST_XDP_LIVE_FRAMES) from 2 threads pinned to the generator CPU; it returns
    XDP_TX, which sends each frame out of Pg into Pa. Where the kernel refuses live
    frames (EPERM), it relays instead: the threads write() the frame into a packet socket
    on a veth pair of its own (Pgw -> Pgr, in P-gen), and an XDP program on Pgr clones
    each frame into --relay-copies XDP frames out of Pg (BPF_F_BROADCAST over a devmap
    whose entries all name Pg): Pa still receives XDP frames through ndo_xdp_xmit, in
    bulk. The sink is a BPF program on Ps's tc ingress that counts and drops (veth-veth;
    Ps has no XDP program and GRO off, as a container's veth, except for xdp-redirect,
    which needs NAPI there), or a thread reading the tap (veth-tap), standing in for a VM.
    Offered load is sampled every 10 ms and gaps are reported.

    Frames: Ethernet/IPv4/UDP, 198.18.0.1 -> 198.18.1.1, port 1024 -> 9, locally
    administered MACs 02:76:62:00:00:01 -> 02:76:62:00:00:02, valid IPv4 checksum,
    UDP checksum 0. Needs root (CAP_NET_ADMIN, CAP_BPF, CAP_SYS_ADMIN).

OPTIONS
    -s, --scenario NAME   veth-veth (default), veth-tap, tap-veth or switch.
    -d, --datapath LIST   comma-separated datapaths, in order (default:
                          vdevd,vdevd-switch,vdevd-fast,bridge,xdp-redirect,dpdk-af-xdp,
                          ovs-af-xdp; switch: vdevd-switch,vdevd-fast,bridge; with the
                          default list a vdevd, DPDK or Open vSwitch that cannot be found is
                          skipped with a note, a listed one is an error).
    -t, --duration S      measured seconds per run (default 5).
    -w, --warmup S        seconds of traffic before each measurement (default 1).
    -n, --runs N          runs per datapath (default 3); the table shows medians. Runs are
                          interleaved: run 1 of every datapath, then run 2, ...
    -b, --size, --frame-size B
                          frame size in bytes on the wire with the 4-byte FCS, as in
                          RFC 2544: 64 (default) .. 1518. The buffer is B - 4 bytes.
                          Latency probes have the same size.
    -j, --json            print one JSON document on stdout instead of the table.
        --vdevd PATH      the vdevd binary (default: ../../daemon/vdevd relative to
                          vdev-bench in the build tree, then PATH).
        --vdevd-arg ARG   pass ARG to vdevd (repeatable), e.g. --vdevd-arg=--batch=128.
        --gen-cpu N       CPU of the generator threads (default 0).
        --dp-cpu N        CPU of the datapath: vdevd, and with --napi threaded the ingress
                          port's NAPI kthread (default 1).
        --boost on|off|auto
                          run vdev-bench's session at autogroup nice -20 (restored at exit):
                          with CONFIG_SCHED_AUTOGROUP, CFS splits a CPU between sessions
                          first, so another session's build takes half of any CPU it shares
                          with the generator or vdevd (a child: same session). auto (default):
                          on while paced (--rate, --find-rate), which needs its CPU; on: for
                          every measurement, on a shared machine. Rates are unaffected, but
                          on Linux 6.18 the run times in /proc/TID/schedstat were wrong for
                          boosted threads sharing a CPU with an RT task (the tap reader;
                          docs/performance.md): the CPU split of veth-tap runs is not to be
                          trusted with --boost on.
        --dp-prio N       run vdevd at SCHED_FIFO priority N (default 0: SCHED_OTHER, as
                          installed), as a unit with CPUSchedulingPolicy=fifo would. A
                          vdevd at normal priority shares its CPU with whatever else runs
                          there; the kernel paths run in softirq.
        --sink-cpu N      CPU of the tap reader thread (default: the generator CPU). The
                          sink veth's receive work (its NAPI, or the backlog) runs on the
                          CPU that transmitted into it.
        --sink-prio N     SCHED_FIFO priority of that work, 0 for normal (default 50): the
                          sink takes what it needs from the CPU it shares with the
                          generator, which offers with the rest, so the sink is not what
                          limits or drops (egress drops in the per-run lines show if it did).
        --napi MODE       softirq (default): NAPI runs where the kernel runs it, in softirq on
                          the CPU that queued the frames, as for any veth: the kernel
                          paths then run on the generator's CPU (run to completion), and
                          vdevd's ingress XDP program too. threaded: the ingress port's
                          NAPI runs in a kthread pinned to the datapath CPU.
        --gen-threads N   generator threads calling BPF_PROG_RUN, or writing into the
                          relay (default 2; with 1 the offered load has a gap while each
                          BPF_PROG_RUN call sets up and tears down its page pool, see
                          docs/performance.md; the relay needs no second thread).
        --repeat N        frames per BPF_PROG_RUN call (default 2000000).
        --batch N         frames per kernel batch inside a call, 1..256 (default 64).
        --sport-count N   vary the UDP source port over N values, per frame (default off).
        --relay-copies N  where live frames are refused: XDP frames the relay makes of each
                          frame written, 1..64 (default 64; while paced, --pace-batch up to
                          64: a burst per slot).
        --gap-fraction F  a 10 ms interval below F x the median rate is a gap (default 0.1).
        --timeline        add every run's 10 ms offered/forwarded rates to the JSON.
        --napi-timing MODE
                          when to time the NAPI polls that run in softirq (BPF programs on
                          the softirq_entry/softirq_exit/napi_poll tracepoints; this is what
                          splits softirq work between datapath, generator and sink). They
                          cost time in every NET_RX softirq, and copy-mode AF_XDP transmit
                          into a veth without NAPI (vdevd -> tc sink) raises one softirq
                          per frame: attached during the measurement they slow vdevd down
                          (by how much: docs/performance.md, CPU accounting).
                          split (default): not during the measured window; they
                          are attached for a CPU window (--cpu-window) right after it, and
                          the CPU figures come from that window. on: attached throughout,
                          CPU figures from the measured window (rates are then lower).
                          off: never; CPU figures from /proc/stat and task times only.
        --cpu-window S    length of the CPU window with --napi-timing split (default 2).
        --bridge-nf-call on|off
                          set net.bridge.bridge-nf-call-{iptables,ip6tables,arptables} in
                          the DUT namespace (default: leave them as the kernel has them,
                          1 wherever br_netfilter is built in or loaded, as on Docker and
                          Kubernetes hosts). While on, every bridged IPv4 frame goes through
                          br_netfilter's hooks, a large part of the bridge's cost. The value
                          in effect is in the table header and the JSON.
        --rate PPS        offer PPS frames per second (suffix k or M allowed) instead of
                          as many as possible: the generator paces itself (the BPF
                          program spins until each burst's time slot; frames leave in
                          bursts of --pace-batch), so CPU per frame is measured at a fixed
                          load. After a stall it catches up by at most 256 frames (a
                          veth's ring) and skips the rest: the table's offered column
                          shows what was really offered.
        --pace-batch N    frames per burst while paced, 1..256 (default 16; the kernel
                          transmits a BPF_PROG_RUN batch at its end).
        --tap-writers N   the VM's writer threads in tap-veth (default 1).

  Latency (round trip, UDP request/response; see docs/performance.md):
        --latency MODE    on (default): after the throughput runs of each round, start
                          each datapath again and probe; off; only: no throughput runs.
                          Pairs: container1 -> container2 (veth-veth, switch), container ->
                          VM (veth-tap, tap-veth, switch). The requester is a UDP socket in
                          a container's namespace; a container answers with a UDP socket,
                          the VM from its tap reader.
        --lat-samples N   light load: N probes per pair and run (default 1000) ...
        --lat-interval-us U
                          ... one every U microseconds (default 1000), nothing else on the
                          wire. p50/p90/p99/max of the round trip.
        --lat-pause-samples N
                          first frame after a pause: N more probes (default 20) ...
        --lat-pause-ms M  ... each sent after M ms without any traffic (default 200), so
                          that vdevd has gone to sleep. Reported apart.
        --lat-prio N      SCHED_FIFO priority of the requester and the UDP responder
                          (default 50; 0 = normal).
        --lat-timeout-ms M
                          a probe without an answer after M ms is lost (default 200).
        --lat-udp-checksum
                          send the probes with UDP checksums, as applications do (a veth
                          offloads them: CHECKSUM_PARTIAL), instead of checksum 0.

  Loss search (RFC 2544 throughput; see docs/performance.md):
        --find-rate       instead of the throughput runs: per datapath and run, a peak
                          trial (unpaced), then a binary search on the paced offered rate
                          for the highest one with at most --loss-max loss, then a
                          --duration trial at 90% of vdevd's peak (the first vdevd
                          datapath's, same run; vdevd datapaths are measured first).
                          Latency is off unless --latency is given.
        --loss-max PCT    loss allowed in a passing trial, in % (default 0.01).
        --trial S         seconds per trial (default 2).
        --resolution F    stop when the bounds are within F x the upper one (default 0.02).
        --max-trials N    trials per search at most (default 12).

  Real senders (see docs/performance.md, "Real senders"):
        --real            instead of generated frames, what the kernel stacks of two
                          containers and a VM send, each datapath on a fresh topology of
                          its own (P = vb<pid>):
                            P-a: eth0 (veth) == P-dut: Pa [datapath] Pb == P-b: eth0 (veth)
                                                       Pt (tap) == vdev-vm guest == P-g: eth0
                          The containers' veths keep their default offloads (TSO, checksum
                          offload). The VM is vdev-vm's guest mode: it opens Pt as QEMU does
                          by default (IFF_VNET_HDR, TUNSETOFFLOAD) and relays the stack of
                          netns P-g through it, so the guest sends TCP with partial
                          checksums and 64 KB GSO frames. Addresses 198.18.0.1 (A), 198.18.1.1
                          (B), 198.18.2.1 (VM), static neighbour entries, IPv6 off; nothing
                          is pinned but the round trips' two threads. Per datapath, MTU and
                          run:
                            tcp-a-b, tcp-b-a  TCP A -> B and B -> A: iperf3 -s in the
                                              receiver's namespace, iperf3 -c -t S -J in the
                                              sender's, one stream; Gbit/s at the receiver
                            udp-a-b           UDP A -> B: one thread sendmmsg()s 18-byte
                                              payloads (64-byte frames) for S seconds, a
                                              thread in B counts them (recvmmsg); Mpps
                                              received. MTU 1500 only
                            tcp-vm-a, tcp-a-vm
                                              TCP VM -> A and A -> VM. MTU 1500 only
                            rtt-a-b, rtt-a-vm round trips A -> B -> A and A -> VM -> A: a
                                              UDP socket in A sends a 64-byte request
                                              every 2 ms for S seconds and waits for each
                                              answer, a socket at the other end sends it
                                              back (the stack's checksums, offloaded);
                                              p50 (the runs' median) and p99 (of all
                                              runs' probes pooled) in us, lower is
                                              better; both threads pinned to the first
                                              CPU; under the table, how far apart the
                                              bridge's odd and even runs are at p99
                                              (this run's noise). MTU 1500 only
                          --datapath takes these datapaths (default: all four, in order;
                          the order turns by one each run: run 2 begins with the second):
                            bridge       the Linux bridge, every port enslaved (the reference)
                            tc-redirect  a tc ingress program on each port that redirects
                                         each skb to its destination's port by MAC:
                                         bpf_redirect_peer() into a container's veth,
                                         bpf_redirect() to the tap (the upper bound)
                            vdevd        vdevd with its defaults: skb path, kernel fast path
                            vdevd-own    vdevd --no-fast-path: every frame through vdevd's
                                         AF_XDP path by way of the punt device (MTU 9216
                                         with AF_XDP multi-buffer, else 1774; TCP segments
                                         above it are clamped)
                          and, only when named:
                            bridge-wire  the bridge with TSO and GSO off on every port: the
                                         kernel segments what it forwards, and each
                                         receiver's stack takes wire frames one at a
                                         time, as from vdevd-own; the ceiling of any path
                                         that hands its receivers wire frames
                          --runs, --duration, --vdevd, --vdevd-arg, --dp-prio and --json
                          apply; the other options do not. Needs iperf3 and ping.
        --mtu LIST        comma-separated MTUs of the containers' veths and their ports,
                          576 .. 9000 (default 1500,9000).
        --only LIST       comma-separated scenarios of those above to run (default: all),
                          e.g. --only rtt-a-b,rtt-a-vm for many runs of the round trips.
        --vdev-vm PATH    the vdev-vm binary (default: ../vdev-vm/vdev-vm relative to
                          vdev-bench in the build tree, then PATH); without one the VM
                          scenarios are skipped with a note.
        --idle-ports N    scale: every datapath twice, as D (A and B only) and as D+N (N
                          more containers P-i1 .. P-iN, a veth each as for A and B, attached
                          to the datapath and idle); tcp-a-b and udp-a-b only, no VM, MTU
                          1500 unless --mtu says, default datapaths bridge,vdevd. The
                          tables add "x 2 ports" (D+N against D) and compare D+N with
                          bridge+N. Setting up N containers takes about 50 ms each.
                          Without --real (generated XDP frames): N more ports P-i1 .. P-iN
                          on the device under test, veths whose far ends sit idle in one
                          namespace, attached by every datapath (vdevd in switch mode; the
                          bridge enslaves them); default datapaths
                          vdevd-switch,vdevd-fast,bridge, none that joins two ports only.
        --idle-cpu S      with --idle-ports: after the traffic of each vdevd set-up, 2 s
                          to settle, then vdevd's CPU time (/proc/PID/stat, utime + stime)
                          over S seconds with no traffic (default 10; 0: not measured).

  Two hosts (see docs/performance.md, "Two hosts", and docs/multi-host.md):
        --two-host        instead of generated frames, real senders across two hosts: two
                          "hosts" with one "container" each, all network namespaces, the
                          hosts' switches joined by an uplink; each datapath runs on both
                          hosts, on a fresh topology of its own per run (P = vb<pid>):
                            P-ca: eth0 == P-ha: ctr0 [datapath] up0 ~~ uplink ~~
                                           P-hb: up0 [datapath] ctr0 == P-cb: eth0
                          A container's eth0 is a veth whose host end, ctr0, is in its host;
                          it keeps a veth's default offloads (TSO, checksum offload).
                          Addresses 198.18.97.1 (A) and 198.18.97.2 (B), /24; locally
                          administered MACs; a static neighbour entry for each other (no
                          ARP); IPv6 off in every namespace. The uplinks (--uplink):
                            vxlan  an underlay veth ul0 between the hosts (198.19.97.1 and
                                   198.19.97.2, /24) and a VXLAN device up0 on each host (id
                                   42, dstport 4789, local and remote over ul0), as flannel's
                                   VXLAN backend joins bridges; the containers at its MTU,
                                   1450
                            veth   up0 is one veth between the hosts, a NIC stand-in; the
                                   containers at MTU 1500
                          --datapath takes these datapaths (default: all three, in order):
                            bridge       a Linux bridge br0 on each host (STP off) enslaving
                                         up0 and ctr0 (the reference)
                            vdevd        one vdevd per host with its defaults (skb path at
                                         the tc hook, learned unicast on the kernel fast
                                         path): vdevd --port up0 --socket SOCK --no-state,
                                         a control socket of its own in a work directory;
                                         the container's veth made by vdevd: vdevctl -S
                                         SOCK port add ctr0 type veth create netns P-ca
                                         peer eth0 peer-mac MAC mtu MTU
                            tc-redirect  tc_fwd.bpf.c at clsact ingress of ctr0 and up0 on
                                         each host, by destination MAC: ctr0's program
                                         bpf_redirect()s out of up0, up0's
                                         bpf_redirect_peer()s into the container's eth0;
                                         the kernel's skb redirect with nothing around it
                                         (the upper bound)
                          Per uplink, datapath and run:
                            tcp-a-b, tcp-b-a  TCP container A -> B and B -> A: iperf3 -s in
                                              the receiver's namespace, iperf3 -c -t S -J in
                                              the sender's, one stream; Gbit/s at the
                                              receiver and the sender's retransmissions
                            udp-a-b           UDP A -> B: one thread sendmmsg()s 64-byte
                                              payloads (106-byte frames) for S seconds, a
                                              thread in B counts them (recvmmsg); Mpps
                                              received
                          Runs are interleaved: run 1 of every uplink and datapath, then run
                          2, ..., the datapaths' order turned by one each run (as with
                          --real). --runs, --duration, --datapath, --vdevd, --vdevd-arg (given to
                          both vdevd), --dp-prio, --verbose and --json apply; the other
                          options do not. With the default list a vdevd or vdevctl that
                          cannot be found skips vdevd with a note. Needs iperf3 and ping.
        --uplink U        vxlan, veth or both (default: both, vxlan first).
        --vdevctl PATH    the vdevctl binary (default: ../vdevctl/vdevctl relative to
                          vdev-bench in the build tree, then PATH).

    -v, --verbose         log every command and vdevd's output on stderr.
    -V, --version         print vdev-bench's version.
    -h, --help            this text.

OUTPUT
    Per datapath (medians over the runs; latency: medians over the runs of each run's
    percentiles, the pause samples of all runs pooled): forwarded Mpps (sink count / window), offered
    Mpps (generator count / window), loss % (1 - forwarded/offered), CPU s/Mfr: CPU seconds
    the datapath spent per million forwarded frames (vdevd's threads plus the NAPI work of
    the two ports, from scheduler run times and NAPI polls timed in softirq by tracepoints,
    in the CPU window that follows the measured one; the generator's and the sink's work
    excluded), and the gaps in the offered load. Per
    run: where the loss happened (ingress ring full = the DUT did not take frames in time;
    egress drops = the sink's queue overflowed), CPU split, and the check that the sink
    count is <= the generator count and equals the kernel's count. With --json every run
    with all raw figures, 10 ms rate statistics and vdevd's statistics.

    With --real, a table per scenario and MTU: per datapath the median over the runs
    (min-max), its ratio to the bridge's median, CPU s/Gbit (UDP: CPU s/Mpkt): CPU
    seconds of the benchmark's own tasks (iperf3 at both ends or the UDP sender and
    receiver, vdevd, vdev-vm, ksoftirqd, vdev-bench; utime + stime, so softirq work
    counts for the task it ran on top of) per Gbit (per million datagrams) received,
    "machine": all busy CPU time of the machine (/proc/stat) per Gbit, and how many runs
    were noisy (other load or steal above 15% of a CPU: a warning is printed as well).
    UDP adds the Mpps sent and the datagrams lost in the receiving socket's full
    buffer. With --json every run, the datapath's statistics (vdevd's, tc-redirect's
    counters) and the VM's counts of GSO and partial-checksum frames.

    With --two-host, a table per uplink: for each measure and datapath the median over the
    runs (min-max), its ratio to the bridge's median over the same uplink, CPU s/unit (CPU
    seconds of the benchmark's own tasks, both vdevd included, per Gbit or per million
    datagrams received, as --real's), machine, noisy runs, and per run the TCP sender's
    retransmissions ("-" where iperf3 reported none), or for UDP the Mpps sent and the
    datagrams lost in the receiving socket's full buffer. A measure that could not be
    taken shows as missing, with the reason. With --json every run and each set-up's
    datapath statistics on both hosts (vdevd's, tc-redirect's counters).

EXIT STATUS
    0  every datapath measured, counts consistent, nothing left behind
    1  a setup or run failure, a count mismatch, leftovers, or interrupted
    2  usage error

EXAMPLES
    vdev-bench
    vdev-bench --scenario veth-tap --size 1518 --runs 5 --json > tap.json
    vdev-bench --datapath bridge,xdp-redirect --duration 2 --runs 1
    vdev-bench --scenario switch --frame-size 512
    vdev-bench --latency only --datapath vdevd,vdevd-spin,bridge
    vdev-bench --find-rate --runs 3
    vdev-bench --real
    vdev-bench --real --mtu 1500 --datapath bridge,vdevd --runs 5 --json > real.json
    vdev-bench --real --idle-ports 248
    vdev-bench --two-host
    vdev-bench --two-host --uplink vxlan --datapath bridge,vdevd --runs 5 --json > two-host.json

SEE ALSO
    docs/performance.md (method and results), docs/vdevd.md, docs/multi-host.md
)";

// A rate with an optional k/M suffix: "1500000", "1.5M", "800k".
std::optional<uint64_t> parseRate(std::string_view s) {
  double unit = 1;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'K')) unit = 1e3;
  if (!s.empty() && (s.back() == 'M' || s.back() == 'm')) unit = 1e6;
  if (unit != 1) s.remove_suffix(1);
  const auto v = parseDouble(s, 0, 100e6 / unit);
  if (!v) return std::nullopt;
  return static_cast<uint64_t>(*v * unit);
}

// v split at its commas, empty items kept: --datapath, --mtu, --only.
std::vector<std::string> commaList(std::string_view v) {
  std::vector<std::string> items;
  std::stringstream ss{std::string(v)};
  std::string item;
  while (std::getline(ss, item, ',')) items.push_back(item);
  return items;
}

}  // namespace

std::optional<int> parseOptions(int argc, char** argv, Options* o) {
  for (int i = 0; i < argc; ++i) o->argv.emplace_back(argv[i]);
  // Each value's range, in the form every message of this tool has.
  const auto integer = [](std::string_view v, uint32_t lo, uint32_t hi, const std::string& message) {
    return cli::u32(v, lo, hi, message);
  };
  const auto seconds = [](std::string_view v, double lo, double hi, const std::string& message) {
    return cli::number(v, lo, hi, message);
  };
  const auto cpu = [](std::string_view v, const char* what) {
    return int(cli::u32(v, 0, 4095, std::string(what) + ": a CPU number"));
  };
  const auto onOff = [](std::string_view v, const char* message) {
    if (v == "on") return 1;
    if (v == "off") return 0;
    cli::fail(message);
  };
  const auto napi = [](std::string_view v, const char* message) {
    if (v == "threaded") return true;
    if (v == "softirq") return false;
    cli::fail(message);
  };
  const auto frameSize = [&](std::string_view v) {
    o->frameSize = integer(v, kMinFrameSize, kMaxFrameSize,
                           "--size: " + std::to_string(kMinFrameSize) + " .. " + std::to_string(kMaxFrameSize) +
                               " (frame size with FCS)");
  };
  const cli::Parser parser({"vdev-bench", kHelp}, {
      {"scenario", 's', Arg::kRequired, [&](std::string_view v) {
         if (!parseScenario(std::string(v), &o->scenario))
           cli::fail("unknown scenario '" + std::string(v) + "' (veth-veth, veth-tap, tap-veth or switch)");
       }},
      {"datapath", 'd', Arg::kRequired, [&](std::string_view v) {
         o->datapaths.clear();
         o->datapathsGiven = true;
         for (const std::string& item : commaList(v)) {
           if (item.empty()) continue;
           if (!isKnownDatapath(item) && !isRealDatapath(item) && !isTwoHostDatapath(item))
             cli::fail("unknown datapath '" + item +
                       "' (vdevd, vdevd-switch, vdevd-spin, vdevd-fast, vdevd-rx-off, bridge, xdp-redirect, dpdk-af-xdp, ovs-af-xdp; "
                       "--real: " + realDatapathNames() + "; --two-host: bridge, vdevd, tc-redirect)");
           o->datapaths.push_back(item);
         }
         if (o->datapaths.empty()) cli::fail("--datapath needs at least one datapath");
       }},
      {"duration", 't', Arg::kRequired,
       [&](std::string_view v) { o->duration = seconds(v, 0.1, 3600, "--duration: 0.1 .. 3600 seconds"); }},
      {"warmup", 'w', Arg::kRequired,
       [&](std::string_view v) { o->warmup = seconds(v, 0, 600, "--warmup: 0 .. 600 seconds"); }},
      {"runs", 'n', Arg::kRequired, [&](std::string_view v) { o->runs = int(integer(v, 1, 1000, "--runs: 1 .. 1000")); }},
      {"size", 'b', Arg::kRequired, frameSize},
      {"frame-size", 0, Arg::kRequired, frameSize},
      {"json", 'j', Arg::kNone, [&](std::string_view) { o->json = true; }},
      {"verbose", 'v', Arg::kNone, [&](std::string_view) { o->verbose = true; }},
      {"vdevd", 0, Arg::kRequired, [&](std::string_view v) { o->vdevdPath = v; }},
      {"vdevd-arg", 0, Arg::kRequired, [&](std::string_view v) { o->vdevdArgs.emplace_back(v); }},
      {"gen-cpu", 0, Arg::kRequired, [&](std::string_view v) { o->genCpu = cpu(v, "--gen-cpu"); }},
      {"dp-cpu", 0, Arg::kRequired, [&](std::string_view v) { o->dutCpu = cpu(v, "--dp-cpu"); }},
      {"sink-cpu", 0, Arg::kRequired, [&](std::string_view v) { o->sinkCpu = cpu(v, "--sink-cpu"); }},
      {"napi", 0, Arg::kRequired,
       [&](std::string_view v) { o->napiThreaded = napi(v, "--napi: threaded or softirq"); }},
      {"sink-prio", 0, Arg::kRequired,
       [&](std::string_view v) { o->sinkPrio = int(integer(v, 0, 99, "--sink-prio: 0 .. 99")); }},
      {"gen-threads", 0, Arg::kRequired,
       [&](std::string_view v) { o->genThreads = int(integer(v, 1, 16, "--gen-threads: 1 .. 16")); }},
      {"repeat", 0, Arg::kRequired, [&](std::string_view v) {
         o->repeat = integer(v, 1000, 1'000'000'000, "--repeat: 1000 .. 1000000000");
       }},
      {"batch", 0, Arg::kRequired, [&](std::string_view v) { o->batch = integer(v, 1, 256, "--batch: 1 .. 256"); }},
      {"sport-count", 0, Arg::kRequired,
       [&](std::string_view v) { o->sportCount = integer(v, 0, 65535, "--sport-count: 0 .. 65535"); }},
      {"relay-copies", 0, Arg::kRequired,
       [&](std::string_view v) { o->relayCopies = integer(v, 1, 64, "--relay-copies: 1 .. 64"); }},
      {"gap-fraction", 0, Arg::kRequired,
       [&](std::string_view v) { o->gapFraction = seconds(v, 0, 1, "--gap-fraction: 0 .. 1"); }},
      {"timeline", 0, Arg::kNone, [&](std::string_view) { o->timeline = true; }},
      {"napi-timing", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "split") o->napiTiming = NapiTiming::kSplit;
         else if (v == "on") o->napiTiming = NapiTiming::kOn;
         else if (v == "off") o->napiTiming = NapiTiming::kOff;
         else cli::fail("--napi-timing: split, on or off");
       }},
      {"cpu-window", 0, Arg::kRequired,
       [&](std::string_view v) { o->cpuWindow = seconds(v, 0.2, 600, "--cpu-window: 0.2 .. 600 seconds"); }},
      {"bridge-nf-call", 0, Arg::kRequired,
       [&](std::string_view v) { o->bridgeNfCall = onOff(v, "--bridge-nf-call: on or off"); }},
      {"rate", 0, Arg::kRequired, [&](std::string_view v) {
         const auto r = parseRate(v);
         if (!r) cli::fail("--rate: frames per second, e.g. 1500000 or 1.5M");
         o->ratePps = *r;
       }},
      {"pace-batch", 0, Arg::kRequired,
       [&](std::string_view v) { o->paceBatch = integer(v, 1, 256, "--pace-batch: 1 .. 256"); }},
      {"tap-writers", 0, Arg::kRequired,
       [&](std::string_view v) { o->tapWriters = int(integer(v, 1, 16, "--tap-writers: 1 .. 16")); }},
      {"latency", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "on") o->latency = LatencyMode::kOn;
         else if (v == "off") o->latency = LatencyMode::kOff;
         else if (v == "only") o->latency = LatencyMode::kOnly;
         else cli::fail("--latency: on, off or only");
         o->latencyGiven = true;
       }},
      {"lat-samples", 0, Arg::kRequired, [&](std::string_view v) {
         o->latSamples = int(integer(v, 1, 1'000'000, "--lat-samples: 1 .. 1000000"));
       }},
      {"lat-interval-us", 0, Arg::kRequired, [&](std::string_view v) {
         o->latIntervalS = integer(v, 0, 10'000'000, "--lat-interval-us: 0 .. 10000000") * 1e-6;
       }},
      {"lat-pause-samples", 0, Arg::kRequired, [&](std::string_view v) {
         o->latPauseSamples = int(integer(v, 0, 100'000, "--lat-pause-samples: 0 .. 100000"));
       }},
      {"lat-pause-ms", 0, Arg::kRequired, [&](std::string_view v) {
         o->latPauseS = integer(v, 1, 600'000, "--lat-pause-ms: 1 .. 600000") * 1e-3;
       }},
      {"lat-prio", 0, Arg::kRequired,
       [&](std::string_view v) { o->latPrio = int(integer(v, 0, 99, "--lat-prio: 0 .. 99")); }},
      {"lat-timeout-ms", 0, Arg::kRequired, [&](std::string_view v) {
         o->latTimeoutS = integer(v, 1, 60'000, "--lat-timeout-ms: 1 .. 60000") * 1e-3;
       }},
      {"find-rate", 0, Arg::kNone, [&](std::string_view) { o->findRate = true; }},
      {"loss-max", 0, Arg::kRequired,
       [&](std::string_view v) { o->lossMaxPct = seconds(v, 0, 100, "--loss-max: 0 .. 100 (%)"); }},
      {"trial", 0, Arg::kRequired,
       [&](std::string_view v) { o->trialS = seconds(v, 0.1, 600, "--trial: 0.1 .. 600 seconds"); }},
      {"resolution", 0, Arg::kRequired,
       [&](std::string_view v) { o->resolution = seconds(v, 0.001, 0.5, "--resolution: 0.001 .. 0.5"); }},
      {"max-trials", 0, Arg::kRequired,
       [&](std::string_view v) { o->maxTrials = int(integer(v, 1, 100, "--max-trials: 1 .. 100")); }},
      {"dp-prio", 0, Arg::kRequired,
       [&](std::string_view v) { o->dpPrio = int(integer(v, 0, 99, "--dp-prio: 0 .. 99")); }},
      {"lat-udp-checksum", 0, Arg::kNone, [&](std::string_view) { o->latUdpChecksum = true; }},
      {"real", 0, Arg::kNone, [&](std::string_view) { o->real = true; }},
      {"mtu", 0, Arg::kRequired, [&](std::string_view v) {
         o->mtus.clear();
         o->mtusGiven = true;
         for (const std::string& item : commaList(v))
           o->mtus.push_back(integer(item, 576, 9000, "--mtu: a comma-separated list of MTUs, 576 .. 9000"));
         if (o->mtus.empty()) cli::fail("--mtu needs at least one MTU");
       }},
      {"vdev-vm", 0, Arg::kRequired, [&](std::string_view v) { o->vdevVmPath = v; }},
      {"only", 0, Arg::kRequired, [&](std::string_view v) {
         o->realScenarios.clear();
         for (const std::string& item : commaList(v)) {
           if (!isRealScenario(item))
             cli::fail("--only: unknown scenario '" + item + "' (" + realScenarioNames() + ")");
           o->realScenarios.push_back(item);
         }
         if (o->realScenarios.empty()) cli::fail("--only needs at least one scenario");
       }},
      {"idle-ports", 0, Arg::kRequired,
       [&](std::string_view v) { o->idlePorts = uint32_t(integer(v, 1, 1000, "--idle-ports: 1 .. 1000")); }},
      {"idle-cpu", 0, Arg::kRequired, [&](std::string_view v) {
         o->idleCpuS = seconds(v, 0, 600, "--idle-cpu: 0 .. 600 seconds");
         o->idleCpuGiven = true;
       }},
      {"two-host", 0, Arg::kNone, [&](std::string_view) { o->twoHost = true; }},
      {"uplink", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "both") o->uplinks = {"vxlan", "veth"};
         else if (v == "vxlan" || v == "veth") o->uplinks = {std::string(v)};
         else cli::fail("--uplink: vxlan, veth or both");
         o->uplinksGiven = true;
       }},
      {"vdevctl", 0, Arg::kRequired, [&](std::string_view v) { o->vdevctlPath = v; }},
      {"boost", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "on") o->boost = 1;
         else if (v == "off") o->boost = 0;
         else if (v == "auto") o->boost = -1;
         else cli::fail("--boost: on, off or auto");
       }},
  });
  // Checks that need every option.
  const auto check = [&](const std::vector<std::string>&) {
    const bool realOnly = o->mtusGiven || !o->vdevVmPath.empty() || o->idleCpuGiven || !o->realScenarios.empty();
    if (o->twoHost) {
      if (o->real) cli::fail("--two-host and --real exclude each other");
      if (realOnly || o->idlePorts) cli::fail("--mtu, --only, --vdev-vm, --idle-ports and --idle-cpu go with --real");
      if (!o->datapathsGiven) o->datapaths = twoHostDatapaths();
      for (const auto& d : o->datapaths)
        if (!isTwoHostDatapath(d)) cli::fail(d + " is not a datapath of --two-host (bridge, vdevd, tc-redirect)");
      return;
    }
    if (o->uplinksGiven || !o->vdevctlPath.empty()) cli::fail("--uplink and --vdevctl go with --two-host");
    if (o->real) {
      if (!o->datapathsGiven) o->datapaths = o->idlePorts ? std::vector<std::string>{"bridge", "vdevd"} : realDatapaths();
      if (o->idlePorts && !o->mtusGiven) o->mtus = {1500};
      if (o->idlePorts && !o->vdevVmPath.empty()) cli::fail("--idle-ports measures containers only: drop --vdev-vm");
      if (o->idleCpuGiven && !o->idlePorts) cli::fail("--idle-cpu goes with --idle-ports");
      for (const auto& d : o->datapaths)
        if (!isRealDatapath(d))
          cli::fail(d + " is not a datapath of --real (" + realDatapathNames() + ")");
      return;
    }
    if (realOnly) cli::fail("--mtu, --only, --vdev-vm and --idle-cpu go with --real");
    for (const auto& d : o->datapaths)
      if (!isKnownDatapath(d)) cli::fail(d + " is a datapath of --real only");
    if (!o->datapathsGiven && (o->scenario == Scenario::kSwitch || o->idlePorts))
      o->datapaths = {"vdevd-switch", "vdevd-fast", "bridge"};
    for (const auto& d : o->datapaths) {
      std::string why = datapathFitsScenario(d, o->idlePorts ? Scenario::kSwitch : o->scenario);
      if (!why.empty())
        cli::fail(d + (o->idlePorts ? std::string(" with --idle-ports") : " in scenario " + std::string(scenarioName(o->scenario))) +
                  ": " + why);
    }
    if (o->findRate && !o->latencyGiven) o->latency = LatencyMode::kOff;
    if (o->findRate && o->latency == LatencyMode::kOnly) cli::fail("--find-rate and --latency only exclude each other");
    if (o->findRate && o->ratePps) cli::fail("--find-rate sets the rate itself; drop --rate");
    if (o->napiThreaded && o->scenario == Scenario::kTapVeth)
      cli::fail("--napi threaded: the ingress port of tap-veth is a tap (no NAPI; the VM's write() does the work)");
  };
  return parser.parse(argc, argv, check).exit;
}

}  // namespace vdev::bench
