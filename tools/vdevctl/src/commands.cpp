// The command table of vdevctl and its help texts. Adding a command: a
// handler in a cmd_*.cpp file, declared in commands.h, and a row here.
#include "commands.h"

#include <array>
#include <string>
#include <type_traits>
#include <vector>

namespace vdev::ctl {

namespace {

constexpr const char kPortAddHelp[] = R"HELP(NAME
    vdevctl port add - attach a port to vdevd, creating its device if asked

SYNOPSIS
@KEYWORDS@
                     [create [netns NAME|PATH|pid PID] [peer IFNAME] [peer-mac MAC]
                             [mac MAC] [mtu N] [owner USER|UID] [group GROUP|GID]
                             [multi-queue]]

DESCRIPTION
    Attaches the network device IFNAME to vdevd as a switch port. A veth or a
    tap gets vdevd's skb-level program at the device's tcx ingress, which
    keeps the TSO and checksum offload of what containers and VMs send; any
    other device (a NIC uplink) vdevd's XDP program and AF_XDP sockets on its
    queues ("hook" chooses). The port is saved in vdevd's state file and
    comes back when vdevd restarts.

    Without "create" the device must exist (a veth end, a tap, an uplink).
    With "create" vdevd makes it first and marks it as its own (interface
    alias "vdev:managed"); "vdevctl port del" then deletes it again. A device
    vdevd did not create is never deleted by vdevd.

    type veth + create
        A veth pair: IFNAME stays in vdevd's namespace and is the port; the
        peer end goes into the container's network namespace. Both ends are
        brought up; IPv6 is turned off on IFNAME (a switch port sends nothing
        by itself).
    type netkit + create
        A netkit pair in L2 mode (Linux 6.7 or later with CONFIG_NETKIT), made
        like a veth pair (the same keywords): IFNAME is the primary end and the
        port, the peer goes into the container's namespace. vdevd's skb
        program is the pair's own peer program (hook tc only). A kernel
        without netkit refuses it.
    type tap + create
        A persistent tap, so that a VM started later (e.g. QEMU with
        "-netdev tap,ifname=IFNAME,script=no,downscript=no") can attach to it
        without privileges when "owner" or "group" allows it. Its link has no
        carrier (and the port stays down) until a VM attaches.

ARGUMENTS
    IFNAME              the port's interface name (1..15 characters)
    type T              tap, veth, netkit or netdev (default netdev: any existing
                        device). "create" needs tap, veth or netkit (netkit: only
                        with create)
    queues N            AF_XDP sockets (queues) to open, 1..64 (default: vdevd's,
                        every queue the device has). A tap with N > 1 needs
                        multi-queue
    xdp-mode M          native, generic or auto (default auto: native where the
                        driver has it, generic otherwise)
    hook xdp|tc         where the frames the port receives enter vdev (default:
                        tc for veths, taps and devices without native XDP --
                        VXLAN, Geneve --, xdp for the rest). tc: the skb-level
                        program at tcx ingress, for senders that hand the
                        kernel skbs (containers, VMs, tunnels): their GSO and
                        checksum offload survive. xdp: vdevd's XDP program and
                        AF_XDP sockets, for XDP-native sources (a NIC uplink,
                        zero-copy where the driver has it)
    fast-rx on|off      whether frames the port receives may take vdevd's
                        kernel fast path (default on; see vdevd --help).
                        off: the port's received unicast always goes through
                        vdevd's thread, which delivers it on its own CPU;
                        frames to the port may still arrive by the fast path.
                        Use it for a VM whose single sending thread is its
                        bottleneck: a tap's XDP program runs inside the VM's
                        write(), so with the fast path the whole delivery
                        runs on that thread (figures in docs/performance.md).
                        It costs latency and vdevd CPU: on has the lower
                        round-trip time
    isolated on|off     on: the port talks only to ports that are not isolated
                        (an uplink, a gateway), never to another isolated one,
                        as the Linux bridge's "isolated" (default off).
                        Unicast between two isolated ports is dropped and
                        counted (drops.isolated), on the kernel fast path too;
                        floods from an isolated port skip the others
    allowed-mac MAC|any anti-spoofing: the port may send only frames whose
                        source MAC is MAC (a container's or a VM's own);
                        any other is dropped by the port's program, on the
                        kernel fast path too, and counted (drops.spoof_mac).
                        any (default): every source. vdevd's own MAC
                        learning still keeps a host's or another port's
                        static MAC from being taken (drops.mac_locked)
    allowed-ip ADDR[,ADDR...]|any
                        anti-spoofing by address: the IPv4 and IPv6
                        addresses (up to 4 of each, no prefix length) the
                        port may send from. IPv4 from another source, ARP
                        whose sender is another, IPv6 from another (a
                        link-local one too, but the port's own: its MAC's
                        EUI-64 one or one listed), Neighbour Advertisements
                        for another,
                        and every other EtherType (VLAN tags too) are
                        dropped by the port's program and counted
                        (drops.spoof_ip); 0.0.0.0 and :: pass (DHCP, ARP
                        probes, duplicate address detection). any
                        (default): every address, every EtherType
    ra-guard on|off     on: Router Advertisements and Redirects (ICMPv6 134,
                        137; behind up to two VLAN tags too, more dropped
                        unread) from the port are dropped by its program
                        and counted
                        (drops.ra_guard): a guest is not the network's
                        router. Router Solicitations pass (default off)
    dhcp-guard on|off   on: DHCP servers' messages (UDP from port 67 or to
                        68, or a BOOTREPLY) and DHCPv6 servers' (from 547 or
                        to 546), behind VLAN tags too, from the port are dropped
                        by its program and counted (drops.dhcp_guard): a
                        guest hands out no addresses. Its own DHCP client
                        requests pass (default off)
    vlan VID|none       802.1Q: an access port of VLAN VID (1..4094): what
                        it receives untagged is VLAN VID's, what VLAN VID
                        sends it goes out untagged. A port reaches only
                        ports of its VLANs; the MAC table is kept per VLAN
                        (the same MAC may live in two). A tagged frame of
                        another VLAN, and an 802.1ad (QinQ) tag, is dropped
                        and counted (drops.vlan_filtered). Without VLAN
                        settings (default; none takes them away) a port is
                        in VLAN 1, untagged, and looks at no tag: a tagged
                        frame from it is VLAN 1's payload, as in a switch
                        without VLANs. Unicast between two access ports of
                        one VLAN at the tc hook takes the kernel fast path;
                        a trunk's frames, tagged ones and floods are
                        switched by vdevd's thread
    trunk VIDS          a trunk: the VLANs VIDS (10,20-29) carried with their
                        tag. Untagged frames are dropped (drops.vlan_filtered)
                        unless native names a VLAN for them
    native VID          the trunk's untagged VLAN (the same as "vlan VID")
    untagged VIDS       more VLANs the port is a member of and sends untagged
                        (bridge CNI's preserveDefaultVlan: VLAN 1 besides
                        the access VLAN)
    storm-bcast PPS|off
                        broadcast frames the port may send a second; beyond
                        that they are dropped, by the port's own program
                        before they reach vdevd or the fast path, and counted
                        (drops.storm_bcast). A token bucket that holds 100 ms
                        of the rate, so short bursts pass. off or 0: no limit.
                        Default: vdevd's --storm-bcast (10000), which the
                        port then follows, also after vdevd restarts with
                        another one; given here, the port keeps its own
    storm-mcast PPS|off
                        the same for multicast (broadcast aside: IPv6 neighbour
                        discovery, mDNS, ...): drops.storm_mcast; default
                        vdevd's --storm-mcast (10000)
    storm-unknown PPS|off
                        the same for unicast to MACs vdevd has not learned,
                        which it floods to every port: vdevd drops what is
                        beyond (drops.storm_unknown); default vdevd's
                        --storm-unknown (10000)
    police-pps PPS|off  the port's ingress policer: frames a second it may
                        send, of any kind; beyond, dropped by its program
                        (drops.police). Default vdevd's --police-pps (off)
    police-rate RATE|off
                        ... and bits a second (frames with their Ethernet
                        header): a number, or one with k, M or G for 10^3,
                        10^6, 10^9 (100M, 2500k, 10G); no fractions. With
                        police-pps too, a frame passes only while neither is
                        exceeded. Default vdevd's --police-rate (off)
    police-burst MS     the policer's burst: its buckets hold MS milliseconds
                        of its rates, never less than one frame (1 or more;
                        default vdevd's --police-burst, 250). Below 200 ms
                        (TCP's retransmission timeout) a TCP stream gets
                        about MS / 200 of the rate; a smaller burst holds
                        the rate more tightly
    create              create the device; the arguments after it describe it:

  veth only:
    netns NAME          put the peer in the namespace NAME (/run/netns/NAME, as
                        made by "ip netns add")
    netns PATH          ... in the namespace file PATH (absolute, e.g. a bind
                        mount or /proc/PID/ns/net)
    netns pid PID       ... in the network namespace of process PID
                        (no netns: the peer stays in vdevd's namespace)
    peer IFNAME         the peer's name (default eth0)
    peer-mac MAC        the peer's MAC address (default: random, locally administered)
  tap only:
    owner USER|UID      the user that may attach to the tap (QEMU's user)
    group GROUP|GID     members of this group may attach (with owner too: only
                        that user, while a member of that group)
    multi-queue         IFF_MULTI_QUEUE; the VM must ask for it as well
    mac MAC             the tap's own (host side) MAC address
  both:
    mtu N               MTU of the device (veth: both ends), 68..65535

    Users and groups are looked up on this host (names first, then numbers).
    MAC addresses are written xx:xx:xx:xx:xx:xx and must be unicast.

EXAMPLES
    Attach an existing uplink:
        vdevctl port add enp3s0f1
    A container interface: veth pair vdc1 <-> eth0 in namespace web1:
        vdevctl port add vdc1 type veth create netns web1 peer eth0 \
                peer-mac 02:00:00:00:01:01 mtu 1500
    The same, for a container known by the pid of its first process:
        vdevctl port add vdc2 type veth create netns pid 4242
    A tap for a VM run by user qemu:
        vdevctl port add vm1 type tap create owner qemu
    A 4-queue tap:
        vdevctl port add vm2 type tap queues 4 create owner qemu multi-queue
    A tap for a VM that sends from one thread, its frames switched by vdevd:
        vdevctl port add vm3 type tap fast-rx off create owner qemu
    A container held to 100 Mbit/s, its broadcast to 100 frames/s:
        vdevctl port add vdc3 type veth police-rate 100M storm-bcast 100 \
                create netns web3
    An uplink whose floods vdevd does not limit:
        vdevctl port add enp3s0f1 storm-bcast off storm-mcast off \
                storm-unknown off
    Two tenants' containers in VLAN 10 and VLAN 20, an uplink carrying both:
        vdevctl port add vdc4 type veth vlan 10 create netns tenant1
        vdevctl port add vdc5 type veth vlan 20 create netns tenant2
        vdevctl port add enp3s0f1 trunk 10,20 native 1

EXIT STATUS
    0 the port is attached; 1 vdevd refused (the port or a device of that name
    exists, no such namespace, ...) or cannot be reached; 2 bad usage.
)HELP";

constexpr const char kPortDelHelp[] = R"HELP(NAME
    vdevctl port del - detach a port from vdevd

SYNOPSIS
    vdevctl port del IFNAME

DESCRIPTION
    Detaches the port IFNAME: vdevd closes its sockets, removes its XDP
    program and forgets it (also in its state file). If vdevd created the
    device ("port add ... create"), the device is deleted too: a veth pair
    (both ends, the container's included) or the tap (a VM still attached
    loses its link). A device vdevd did not create is left as it is.

    Ports given on vdevd's command line (--port) cannot be deleted at run time.

EXAMPLES
    vdevctl port del vdc1

EXIT STATUS
    0 the port is gone; 1 no such port, or vdevd refused or cannot be reached;
    2 bad usage.
)HELP";

constexpr const char kPortSetHelp[] = R"HELP(NAME
    vdevctl port set - change a running port's isolation and limits

SYNOPSIS
@KEYWORDS@

DESCRIPTION
    Changes what a port may send into the switch (its rates, its allowed
    source MAC and addresses) and whom it may reach,
    while it runs: no frame in flight is touched, no socket reopened, the
    port's MAC table entries stay. Each keyword given replaces the port's
    value (the keywords and their values are those of "vdevctl port add
    --help"); the others stay as they are. At least one is needed.

    The port's program (at its XDP or tc hook) and vdevd take the new limits
    at once, every bucket full. A port made isolated stops reaching the
    other isolated ports at once, on the kernel fast path too (its MACs'
    entries there are rewritten with the new mark before vdevd's next
    burst); made open again, it reaches them again. VLAN keywords replace
    the port's VLAN settings whole (vlan none: none); its MAC table entries
    are forgotten then and learned again in its new VLANs.

    The change is saved with the port in vdevd's state file and holds after
    vdevd restarts. A value given here is the port's own from then on, also
    when it equals vdevd's default: the port no longer follows that
    default of vdevd's (see "vdevd --help") for it.

    Only root may change a port, whoever added it: the limits bound what a
    guest may send, the operator's to set. Ports given on vdevd's command
    line (--port) are not changed: their limits are vdevd's options; add the
    port with "vdevctl port add" to give it its own. The port's type,
    queues, hook, XDP mode, fast-rx and device are not changed here: delete
    the port and add it again.

EXAMPLES
    Hold a noisy container to 10 Mbit/s and 100 broadcast frames/s:
        vdevctl port set vdc3 police-rate 10M storm-bcast 100
    Lift the policer again:
        vdevctl port set vdc3 police-rate off
    Isolate a tenant's VM from the other isolated ones:
        vdevctl port set vm1 isolated on
    Let a VM send only from its own MAC:
        vdevctl port set vm1 allowed-mac 52:54:00:12:34:56
    And only from its addresses:
        vdevctl port set vm1 allowed-ip 198.18.7.2,2001:db8:7::2
    Keep a container from acting as the network's router or DHCP server:
        vdevctl port set vdc3 ra-guard on dhcp-guard on
    Move a container into VLAN 30:
        vdevctl port set vdc4 vlan 30

EXIT STATUS
    0 the port runs with the change; 1 no such port, a port from vdevd's
    command line, not root, or vdevd refused (the change is then neither
    running nor saved) or cannot be reached; 2 bad usage.
)HELP";

constexpr const char kPortShowHelp[] = R"HELP(NAME
    vdevctl port show - list vdevd's ports

SYNOPSIS
    vdevctl [-j] [-s] port show [IFNAME]
    vdevctl [-j] [-s] port

DESCRIPTION
    One line per port (or only IFNAME):

    NAME     interface name
    TYPE     how it was added: veth, tap (created or described so) or netdev
    IFINDEX  interface index (0 while the device does not exist)
    QUEUES   AF_XDP sockets (queues) in use
    XDP      XDP attach mode in use: native, generic (none while down)
    BIND     socket bind mode: copy, zerocopy (closed or none while down)
    MTU      the device's MTU
    STATE    up (sockets open and link up) or down
    FAST_RX  on, or off: frames the port receives always go through vdevd
             ("port add ... fast-rx off")
    HOOK     where its frames enter vdev: tc or xdp; a port with an
             skb-level program says how it is attached: tc/tcx (Linux
             6.6) or tc/clsact (classic tc), and xdp/clsact for a port at
             XDP whose host frames are copied by a program at tc. A port
             that vdevd took to xdp although auto chose tc (its tc attach
             failed) is marked with "*", and the reason is printed under
             the table
    VLAN     its VLAN settings ("vlan 10", "trunk 10,20 native 1"), "-" for
             none (VLAN 1, untagged)

    With -s, each row also shows RX/TX packets and bytes and DROPS: frames
    lost at the port (vdevd's drops, the kernel's XDP rx drops, the device's
    tx_dropped). "vdevctl stats" shows every counter.

    A port whose MTU is larger than an uplink's (a port whose device is
    neither a veth nor a tap: a NIC, a VXLAN tunnel) is named in a warning
    on stderr under the table: its frames to other hosts longer than the
    uplink's MTU are dropped (oversize). Give it the uplink's MTU (vdev-cni:
    "mtu", or "uplink" to take the uplink's).

    With -j: a JSON array of objects with the fields name, type, ifindex,
    queues, queues_bound, xdp_mode, bind_mode, mtu, live (true/false),
    fast_rx (true/false), hook, tc_attach ("tcx" or "clsact", for a port
    with an skb-level program), hook_note (why it is not at the hook auto
    chose, when that is so), uplink (true/false), isolated (true/false),
    limits (what the port has in effect, its own or vdevd's defaults, 0 for
    no limit: {"storm_bcast_pps", "storm_mcast_pps", "storm_unknown_pps",
    "police_pps", "police_bps", "police_burst_ms", "allowed_mac" while
    the port has one, "allowed_ips" (an array) while it has some,
    "ra_guard", "dhcp_guard" (true/false)}; absent from a vdevd without storm control),
    vlan while the port has VLAN settings ({"pvid" (0: untagged frames
    not taken), "tagged", "untagged" (VLAN lists, "10,20-29")}) and, when
    known, mac;
    mtu_over_uplink (the uplink's name) for a port warned of above;
    with -s also the counters, named as in "vdevctl -j stats".

EXAMPLES
    vdevctl port
    vdevctl -s port show vdc1
    vdevctl -j port show | jq '.[] | select(.live | not) | .name'

EXIT STATUS
    0 success; 1 no such port, or vdevd cannot be reached; 2 bad usage.
)HELP";

constexpr const char kStatsHelp[] = R"HELP(NAME
    vdevctl stats - vdevd's counters, as text, JSON or Prometheus metrics

SYNOPSIS
    vdevctl [-j] stats [IFNAME]
    vdevctl stats --prometheus

DESCRIPTION
    Every counter of every port (or only IFNAME):

    rx, tx       frames and bytes received on the port's AF_XDP sockets /
                 put on its TX rings; outstanding: sent, not yet completed
    drops        frames dropped, by reason: ring_full, tx_ring_full,
                 no_route, port_down, oversize, runt, pool_empty, invalid_src,
                 bad_type, mac_limit, mac_locked, inflight_limit, fast_xmit,
                 link_local, isolated, storm_bcast, storm_mcast, storm_unknown,
                 police (those four: beyond the port's storm control or
                 policer, "port add ... storm-bcast PPS"), spoof_mac (a source
                 MAC other than the port's "allowed-mac"), spoof_ip (a
                 source address other than its "allowed-ip", or another
                 EtherType), ra_guard, dhcp_guard (a Router Advertisement,
                 a DHCP server's message from a port with "ra-guard",
                 "dhcp-guard"), vlan_filtered (a VLAN the port does not
                 carry)
    xdp_stats    the kernel's XDP_STATISTICS of the port's sockets, summed
                 (rx_dropped, rx_invalid_descs, tx_invalid_descs, rx_ring_full,
                 rx_fill_ring_empty_descs, tx_ring_empty_descs)
    xdp_prog     the XDP program's own counters: pass (to the host stack),
                 redirect (to vdevd), no_socket, fast (on the kernel fast path)
    dev          the device's tx_dropped
    link         flap_waits: times the link came up and re-attaching waited
                 (it flapped more than 20 times in a second)

    and, for the whole datapath, where every UMEM frame is (free, fill_ring,
    kernel_rx, rx_ring, rx_burst, port_rings, tx_ring, kernel_tx, comp_ring,
    kernel_held: frames of closed zero-copy sockets the kernel still holds),
    whether the places add up to the total ("adds up", or "MISMATCH": a
    vdevd bug), and the number of MAC table entries. Their meaning is in
    docs/vdevd.md.

    A port added with "fast-rx off" says so at the end of its first line
    (JSON: "fast_rx": false; Prometheus: label fast_rx="off" of
    vdev_port_info); its xdp_prog fast then stays 0.

    -j prints the raw numbers as JSON with the field names of vdevd's
    --stats-json file: {"ports": [...], "pool": {..., "sum": N},
    "fdb_entries": N}; each port also has "type". "pool" and "fdb_entries"
    are present when vdevd sends them (it does for every-port requests).

OPTIONS
    --prometheus   print every port's counters in the Prometheus text
                   exposition format (version 0.0.4), e.g. for node_exporter's
                   textfile collector or a scrape wrapper: counters end in
                   _total (vdev_port_rx_packets_total{port="vdc1"} 12), drops
                   are vdev_port_drops_total{port="vdc1",reason="ring_full"},
                   the pool places and tx_outstanding are gauges. Not with -j
                   or IFNAME.

EXAMPLES
    vdevctl stats
    vdevctl stats vdc1
    vdevctl -j stats | jq '.ports[] | {name, rx_packets, tx_packets}'
    vdevctl stats --prometheus > /var/lib/node_exporter/vdev.prom.$$ &&
        mv /var/lib/node_exporter/vdev.prom.$$ /var/lib/node_exporter/vdev.prom

EXIT STATUS
    0 success; 1 no such port, or vdevd cannot be reached; 2 bad usage.
)HELP";

constexpr const char kMonitorHelp[] = R"HELP(NAME
    vdevctl monitor - per-port packet and bit rates, every interval

SYNOPSIS
    vdevctl [-j] monitor [--interval S] [--count N] [IFNAME ...]

DESCRIPTION
    Reads vdevd's counters every S seconds and prints, per port (or only the
    ports named), the rates over the last interval, until interrupted
    (SIGINT, SIGTERM) or N reports were printed. The first line is a header;
    each report then has one line per port:

    TIME       seconds since monitor started
    PORT       the port
    RX_PPS     frames/s received from the port, RX_MBPS its Mbit/s
    TX_PPS     frames/s sent to the port, TX_MBPS its Mbit/s
    DROPS/S    frames/s lost at the port: vdevd's drops, the kernel's XDP rx
               drops (rx_dropped + rx_ring_full) and the device's tx_dropped

    Rates are computed from the counter deltas and the measured time between
    two reads. A port added during the run appears from its second sample; a
    report with no port to show is the line "TIME  (no ports)".

    With -j: no header; one JSON object per line per report:
    {"time": 1.0, "interval": 1.0, "ports": [{"name": "vdc1", "rx_pps": 0,
    "rx_mbps": 0, "tx_pps": 0, "tx_mbps": 0, "drop_pps": 0}, ...]}

OPTIONS
    -i, --interval S   seconds between reports, 0.01..3600 (default 1)
    -c, --count N      stop after N reports (default: until interrupted)

EXAMPLES
    vdevctl monitor
    vdevctl monitor --interval 0.5 vdc1 vm1
    vdevctl -j monitor --count 10 > rates.ndjson

EXIT STATUS
    0 after N reports or when interrupted; 1 vdevd cannot be reached or went
    away; 2 bad usage.
)HELP";

constexpr const char kCaptureHelp[] = R"HELP(NAME
    vdevctl capture - a copy of what a port receives and sends

SYNOPSIS
    vdevctl capture IFNAME [--direction rx|tx|both] [--count N]
                    [--snaplen BYTES] [--buffer FRAMES] [-w FILE | -w -]
                    [--mac MAC] [--vlan VID] [--ethertype TYPE] [--ip ADDR]
                    [--proto PROTO] [--port N]

DESCRIPTION
    Copies the frames the port receives (rx: what it sends into the switch)
    and those vdevd hands it to send (tx), until interrupted (SIGINT,
    SIGTERM), N frames were written, or the port is removed. With -w they
    are written as pcapng to FILE, or to stdout with "-w -" (for tcpdump -r,
    tshark, Wireshark): one interface, the port; each frame with its time
    (nanoseconds) and its direction (inbound: rx, outbound: tx); at the end
    an interface statistics block with the frames the capture missed
    (isb_ifdrop). Without -w, one line per frame:

    TIME rx|tx SRC-MAC > DST-MAC type 0xTYPE length LEN

    The port keeps the kernel fast path while captured: the ports'
    programs copy the frames they carry to and from it (a GSO skb whole),
    vdevd the frames it switches itself, each frame once. The capture ends
    with its connection, for any reason -- vdevctl interrupted, killed or
    disconnected included. What the port's
    program drops (storm control, the policer, anti-spoofing) and traffic
    between the port and the host itself do not reach vdevd and are not in
    the capture: their counters are in "vdevctl stats", and tcpdump on the
    device sees the host's traffic. Frames from a port at the tc hook are
    captured as vdevd receives them: segmented, checksums finished.

    vdevd holds up to FRAMES frames for vdevctl; a frame that finds the
    buffer full is not copied and is counted as missed (the port's traffic
    is never held up by a capture). At the end vdevctl prints, on stderr,
    the frames written and the frames missed.

    A filter (--mac, --vlan, --ethertype, --ip, --proto, --port; every one
    given must match) copies only the frames it matches, and is applied
    where the copy is made: by the programs on the fast path, by vdevd for
    the frames it switches. A frame it refuses costs nothing and is counted
    nowhere: the counts at the end (written, missed, and the pcapng
    statistics block) are of the frames it matched. It reads the frame as
    captured, through up to two VLAN tags (802.1Q, 802.1ad); a header the
    frame is too short for does not match. A vdevd too old to filter
    refuses a capture with a filter.

    One capture per port at a time, at most 8 in vdevd. Root, or the user
    who added the port, may capture it.

OPTIONS
    -d, --direction D   rx, tx or both (default both)
    -c, --count N       stop after N frames (default: until interrupted)
    --snaplen BYTES     keep at most BYTES of each frame, 64..65535
                        (default 65535; never more than the port's frames:
                        its MTU + 18 at the start, or vdevd's frame size)
    --buffer FRAMES     frames vdevd holds for vdevctl, 16..16384 (default 4096)
    -w, --write FILE    pcapng to FILE ("-": stdout)
    --mac MAC           the source or the destination MAC
    --vlan VID          1..4094: the VID of the frame's outer tag, or for an
                        untagged frame the port's untagged VLAN (its PVID;
                        1 on a port without VLAN settings; none on a trunk
                        without a PVID)
    --ethertype TYPE    arp, ipv4, ipv6, or a number (0x0806): the type
                        after the tags
    --ip ADDR           an IPv4 or IPv6 source or destination
    --proto PROTO       tcp, udp, icmp, icmpv6, or 0..255: the IPv4 protocol
                        or the IPv6 Next Header (not behind extension
                        headers)
    --port N            a TCP or UDP source or destination port (IPv4
                        fragments after the first have none)

EXAMPLES
    vdevctl capture vdc1
    vdevctl capture vdc1 --direction rx --count 100 -w vdc1.pcapng
    vdevctl capture vdc1 --ip 198.18.0.2 --proto icmp -w - | tcpdump -n -r -
    vdevctl capture vm1 -w - | tcpdump -n -r -

EXIT STATUS
    0 interrupted, N frames written, or the port removed; 1 no such port, not
    allowed, a capture on the port already, vdevd cannot be reached, or the
    output cannot be written; 2 bad usage.
)HELP";

constexpr const char kFdbShowHelp[] = R"HELP(NAME
    vdevctl fdb show - vdevd's MAC table

SYNOPSIS
    vdevctl [-j] fdb show
    vdevctl [-j] fdb

DESCRIPTION
    One line per entry: MAC address, VLAN (1 for ports without VLAN
    settings; the same MAC in two VLANs is two entries), PORT, TYPE
    (static: added with "fdb add", never ages; learned: from a frame's
    source address) and AGE (seconds since a learned address was last seen;
    "-" for static ones).

    With -j: a JSON array of {"mac", "vlan", "port", "static" (true/false), "age_ms"}.

EXAMPLES
    vdevctl fdb
    vdevctl -j fdb show | jq '.[] | select(.port == "vdc1")'

EXIT STATUS
    0 success; 1 vdevd cannot be reached; 2 bad usage.
)HELP";

constexpr const char kFdbAddHelp[] = R"HELP(NAME
    vdevctl fdb add - add a static MAC table entry

SYNOPSIS
    vdevctl fdb add MAC port IFNAME [vlan VID]

DESCRIPTION
    Frames to MAC in VLAN VID (default 1; a VLAN the port carries) go to
    port IFNAME. A static entry replaces a learned one,
    never ages and is not moved by learning. It lasts until "fdb del", until
    its port is deleted, or until vdevd stops (it is not saved in the state
    file).

EXAMPLES
    vdevctl fdb add 02:00:00:00:01:01 port vdc1

EXIT STATUS
    0 success; 1 no such port, table full, or vdevd cannot be reached;
    2 bad usage (e.g. a malformed or multicast MAC).
)HELP";

constexpr const char kFdbDelHelp[] = R"HELP(NAME
    vdevctl fdb del - remove a MAC table entry

SYNOPSIS
    vdevctl fdb del MAC [vlan VID]

DESCRIPTION
    Removes the entry for MAC in VLAN VID (default 1), static or learned. A learned address comes
    back with the station's next frame.

EXAMPLES
    vdevctl fdb del 02:00:00:00:01:01

EXIT STATUS
    0 success; 1 MAC not in the table, or vdevd cannot be reached; 2 bad usage.
)HELP";

constexpr const char kInfoHelp[] = R"HELP(NAME
    vdevctl info - vdevd's version, mode and uptime

SYNOPSIS
    vdevctl [-j] info

DESCRIPTION
    Prints vdevd's version, its switching mode (switch: L2 learning switch;
    xconnect: two ports wired to each other), the number of datapath
    threads, its uptime and its number of ports; how many more ports the
    open-file limit, the frame pool and the fast path's maps allow; how it
    attaches its skb-level programs on this kernel ("tc attach": tcx, Linux
    6.6, or clsact, classic tc, where the kernel has no tcx); and which of
    the kernel features it can do without it uses now ("kernel"): tcx,
    clsact, multi_buffer (AF_XDP multi-buffer, 6.6), xdp_features (devices'
    XDP features from the netdev family, 6.3; else by their driver),
    xdp_frags (a frags-aware XDP program, 5.18), redirect_peer (the skb
    path's fast path into veth peers, 5.10), busy_poll (vdevd's busy-poll
    option).

    With -j: {"version", "mode", "threads", "uptime_s", "ports", "fd_limit",
    "ports_fd_left", "ports_pool_left", "ports_map_left", "start_issues"
    (an array), "tc_attach" ("tcx" or "clsact"), "kernel_features" (an
    object: each feature above, true or false)}; those vdevd does not send
    (an older one) are absent.

EXAMPLES
    vdevctl info
    vdevctl -S /run/vdev-test/vdevd.sock -j info

EXIT STATUS
    0 success; 1 vdevd cannot be reached; 2 bad usage.
)HELP";

// ------------------------------------------- synopses from the tables
//
// The keywords of "port add" and "port set" in their SYNOPSIS come from
// the port policy table (spec/port_policy.h) and the mode names
// (spec/port_spec.h) that vdevctl takes, so a row added there is in the
// help at once. The arguments' descriptions stay prose, written by hand;
// tests/unit/reference_text_test.cpp holds them, the man page and
// docs/vdevctl.md to the table.

// The value a policy keyword takes, by its row's type.
template <class Row>
std::string policyValue(const Row& r) {
  using T = typename Row::Type;
  if constexpr (std::is_same_v<T, bool>) {
    return "on|off";
  } else if constexpr (std::is_same_v<T, vdev::Mac>) {
    return "MAC|any";  // any: all zeros, every source
  } else if constexpr (std::is_same_v<T, std::vector<vdev::IpAddr>>) {
    return "ADDR[,ADDR...]|any";  // any: none, every address
  } else {
    static_assert(vdev::spec::kIsNumber<T>, "a policy field of a new type: name its value here");
    const std::string v = r.unit == "bits/s" ? "RATE" : r.unit == "milliseconds" ? "MS" : "PPS";
    return r.min == 0 ? v + "|off" : v;  // off: 0, no limit
  }
}

// "[K V]" for each keyword of the table, in the order every text lists
// them (forEachPolicyFieldListed).
std::vector<std::string> policySynopsis() {
  std::vector<std::string> out;
  forEachPolicyFieldListed([&](const auto& r) {
    if constexpr (std::is_same_v<typename std::decay_t<decltype(r)>::Type, vdev::VlanConfig>) {
      const auto& w = vdev::spec::kVlanKeywords;  // vlan, trunk, native, untagged
      out.push_back("[" + std::string(w[0]) + " VID|none]");
      out.push_back("[" + std::string(w[1]) + " VIDS [" + std::string(w[2]) + " VID]]");
      out.push_back("[" + std::string(w[3]) + " VIDS]");
    } else {
      out.push_back("[" + std::string(r.cli) + " " + policyValue(r) + "]");
    }
  });
  return out;
}

// "    vdevctl port add IFNAME [type ...] ...", wrapped at 80 columns,
// the next lines under IFNAME.
std::string synopsisLines(const std::string& command, const std::vector<std::string>& words) {
  const std::string indent(4 + command.size() + 1, ' ');
  std::string out = "    " + command + " IFNAME";
  size_t col = out.size();
  for (const auto& w : words) {
    if (col + 1 + w.size() > 80) {
      out += "\n" + indent + w;
      col = indent.size() + w.size();
    } else {
      out += " " + w;
      col += 1 + w.size();
    }
  }
  return out;
}

// `help` with its "@KEYWORDS@" line replaced by the synopsis of `verb`.
std::string withKeywords(std::string help, const std::string& verb) {
  std::vector<std::string> words;
  if (verb == "add") {
    words = {"[type " + joinWords(portTypesTaken(), "|", "|") + "]", "[queues N]",
             "[xdp-mode " + joinWords(xdpModesTaken(), "|", "|") + "]", "[fast-rx on|off]",
             "[hook " + joinWords(hooksTaken(), "|", "|") + "]"};
  }
  words.push_back("[isolated on|off]");
  for (auto& w : policySynopsis()) words.push_back(std::move(w));
  const std::string marker = "@KEYWORDS@";
  help.replace(help.find(marker), marker.size(), synopsisLines("vdevctl port " + verb, words));
  return help;
}

const std::string kPortAddHelpText = withKeywords(kPortAddHelp, "add");
// The command list's line (vdevctl --help, vdevctl port help).
const std::string kPortAddSynopsis =
    "port add IFNAME [type " + joinWords(portTypesTaken(), "|", "|") + "] [queues N] [xdp-mode M] [create ...]";
const std::string kPortSetHelpText = withKeywords(kPortSetHelp, "set");

// Not constexpr: the port help texts above are made at start-up.
const std::array kCommands{
    Command{"port", "add", nullptr,
            kPortAddSynopsis.c_str(),
            "attach a port; with create, make its device", kPortAddHelpText.c_str(), cmdPortAdd},
    Command{"port", "del", "delete", "port del IFNAME",
            "detach a port (and delete the device vdevd made)", kPortDelHelp, cmdPortDel},
    Command{"port", "set", nullptr, "port set IFNAME [isolated on|off] [vlan VID|none] [allowed-mac MAC|any] [storm-* ...]",
            "change a running port's isolation, anti-spoofing, storm control, policer", kPortSetHelpText.c_str(),
            cmdPortSet},
    Command{"port", "show", "list ls", "port show [IFNAME]", "list ports", kPortShowHelp,
            cmdPortShow},
    Command{"stats", nullptr, nullptr, "stats [IFNAME] | stats --prometheus",
            "every counter, the frame pool", kStatsHelp, cmdStats},
    Command{"monitor", nullptr, nullptr, "monitor [--interval S] [--count N] [IFNAME ...]",
            "per-port rates every interval", kMonitorHelp, cmdMonitor},
    Command{"capture", nullptr, nullptr,
            "capture IFNAME [--direction rx|tx|both] [--count N] [-w FILE | -w -] [--mac|--vlan|--ethertype|--ip|--proto|--port V]",
            "a copy of what a port receives and sends (pcapng)", kCaptureHelp, cmdCapture},
    Command{"fdb", "show", "list ls", "fdb show", "the MAC table", kFdbShowHelp, cmdFdbShow},
    Command{"fdb", "add", nullptr, "fdb add MAC port IFNAME [vlan VID]", "add a static entry", kFdbAddHelp,
            cmdFdbAdd},
    Command{"fdb", "del", "delete", "fdb del MAC [vlan VID]", "remove an entry", kFdbDelHelp, cmdFdbDel},
    Command{"info", nullptr, nullptr, "info", "version, mode, uptime, ports", kInfoHelp, cmdInfo},
};

}  // namespace

std::span<const Command> commandTable() { return kCommands; }

std::string joinWords(const std::vector<std::string>& w, const char* sep, const char* last) {
  std::string out;
  for (size_t i = 0; i < w.size(); ++i) out += (i == 0 ? "" : i + 1 == w.size() ? last : sep) + w[i];
  return out;
}

const char* objectSummary(std::string_view object) {
  if (object == "port") return "the switch's ports";
  if (object == "fdb") return "the MAC table (forwarding database)";
  return "";
}

const char* defaultVerb(std::string_view object) {
  (void)object;
  return "show";  // port, fdb: as `ip link`
}

std::string toolHelp() {
  std::string s = R"HELP(NAME
    vdevctl - control vdevd, the vdev userspace switch

SYNOPSIS
    vdevctl [OPTIONS] OBJECT [COMMAND] [ARGUMENTS]
    vdevctl OBJECT help
    vdevctl OBJECT COMMAND --help

DESCRIPTION
    vdevctl talks to a running vdevd over its control socket: it attaches and
    detaches ports (creating veth pairs for containers and taps for VMs),
    shows ports, counters and the MAC table, and watches rates. Changes need
    root or membership in the group given to vdevd with --group.

COMMANDS
)HELP";
  for (const Command& c : kCommands) {
    std::string syn = c.synopsis;
    s += "    " + syn + "\n";
    s += "        " + std::string(c.summary) + "\n";
  }
  s += R"HELP(
    "port" alone is "port show", "fdb" alone is "fdb show".

OPTIONS
    -j, --json          JSON output
    -p, --pretty        indented JSON (implies -j)
    -s, --stats         with "port show": add the counters
    -S, --socket PATH   vdevd's control socket (default /run/vdev/vdevd.sock)
    -V, --version       print vdevctl's version
    -h, --help          this text

    Options come before OBJECT, as with ip(8).

EXAMPLES
    vdevctl port add vdc1 type veth create netns web1 peer eth0
    vdevctl port add vm1 type tap create owner qemu
    vdevctl port set vdc1 police-rate 100M
    vdevctl -s port
    vdevctl stats --prometheus
    vdevctl monitor --interval 0.5
    vdevctl capture vdc1 -w - | tcpdump -n -r -

EXIT STATUS
    0   success
    1   vdevd refused or failed the request, or cannot be reached; the message
        on stderr is vdevd's (or the client's) followed by the error name
    2   bad usage: unknown command or argument, malformed value

SEE ALSO
    vdevd --help, docs/vdevctl.md, docs/control-protocol.md
)HELP";
  return s;
}

std::string objectHelp(std::string_view object) {
  std::string s =
      "vdevctl " + std::string(object) + " - " + objectSummary(object) + "\n\nCOMMANDS\n";
  for (const Command& c : kCommands)
    if (object == c.object)
      s += "    vdevctl " + std::string(c.synopsis) + "\n        " + c.summary + "\n";
  s += "\n\"vdevctl " + std::string(object) + " COMMAND --help\" describes one command.\n";
  return s;
}

}  // namespace vdev::ctl
