/* Shared between the XDP program (vdev_xdp.bpf.c), the fast-path object
 * (vdev_fast.bpf.c) and vdevd. Plain C. */
#ifndef VDEV_XDP_SHARED_H
#define VDEV_XDP_SHARED_H

#include "vdev_capture_filter.h"

#define VDEV_XDP_MAX_QUEUES 64     /* RX queues of one port with a socket each */
#define VDEV_XDP_MAX_HOST_MACS 64  /* host MACs of one port (tc: of the host) */
#define VDEV_XDP_MAX_HOST_IPS 64   /* host addresses of one port's device */

/* One XDP program object for every port at the XDP hook (vdev_xdp.bpf.c):
 * what is a port's own is found by the ifindex a frame arrived on. */
#define VDEV_XDP_MAX_PORTS 4096    /* ports at the XDP hook (xdp_ports, stats slots) */
#define VDEV_XDP_MAX_XSKS 16384    /* sockets of all of them (xsks_map) */

/* xdp_ports value (key: the port device's ifindex). */
struct vdev_xdp_port {
	__u32 port_index;  /* vdevd's Port::index(): its fast-path rows */
	__u32 flags;       /* VDEV_PORT_* */
	__u32 slot;        /* its rows in vdev_xdp_stats: slot * VDEV_XDP_NCOUNTERS + counter */
	__u32 xsk_base;    /* its sockets in xsks_map: xsk_base + RX queue */
	__u32 nqueues;     /* RX queues below this have a key in xsks_map */
	__u32 nhost_macs;  /* its entries in xdp_host_macs: 0, the usual case, saves the lookup */
	__u64 own_mac;     /* the device's own MAC, the host's (a MAC key as below);
			    * VDEV_XDP_NO_MAC: none */
	__u32 vid;         /* the VLAN of its untagged frames on the fast path, as
			    * vdev_tc_port.vid (0: none); its tagged ones: fast_vlans */
	__u32 pad;
};
#define VDEV_XDP_NO_MAC (~0ULL)

/* xdp_host_macs key: frames to mac on the device go to the host's stack
 * (the host MACs vdevd was given besides the device's own). */
struct vdev_xdp_mac_key {
	__u64 mac;  /* as the fast_fdb keys below */
	__u32 ifindex;
	__u32 pad;
};

/* Per-CPU counters of the XDP program, index into vdev_xdp_stats. */
enum vdev_xdp_counter {
	VDEV_XDP_PASS = 0,     /* frames for the host (XDP_PASS) */
	VDEV_XDP_REDIRECT = 1, /* frames redirected into an AF_XDP socket */
	VDEV_XDP_NO_SOCKET = 2,/* dropped: no socket bound to the RX queue */
	VDEV_XDP_FAST = 3,     /* redirected by the kernel fast path (devmap) */
	VDEV_XDP_NCOUNTERS = 4,
};

/* vdev_xdp_port.flags: what the host is to the port (vdev_frame_class.h),
 * and whether the port's frames may take the fast path. */
#define VDEV_PORT_HOST 1  /* the host is a station behind the port (an uplink):
			   * link-local group frames go to its stack alone */
#define VDEV_PORT_COPY 2  /* frames for the host and the guests go to the stack,
			   * where the tc program vdev_tc_copy hands vdevd a copy */
#define VDEV_PORT_FAST_RX 4 /* what the port receives may take the kernel fast path */
#define VDEV_PORT_ACCESS 8  /* a port with VLAN settings: a tag is a VLAN's, not payload (an
			    * 802.1Q tag of a VID it carries may take the fast path, any
			    * other goes to vdevd, which filters it) */

/* Key of the tc_host_macs map (and vdev_xdp_mac_key.mac): a MAC address in the low 6 bytes
 * of a u64 (byte 0 of the address in the lowest byte), upper 2 bytes zero.
 * fast_fdb's key is vdevd's MAC table key: that, and the VLAN in the upper
 * 2 bytes (datapath/fdb.h, fdbKey()). */

/* The kernel fast path (vdev_fast.bpf.c owns the maps, every port's program
 * shares them): learned unicast between two ports whose source and
 * destination MACs vdevd has learned is redirected through a devmap by the
 * kernel's bulk ndo_xdp_xmit, bypassing AF_XDP. */
#define VDEV_FAST_MAX_PORTS 1024

/* Ports are named by their index (vdevd's Port::index()): the fast_fdb
 * value, the fast_ports devmap key, the fast_stats row. */

/* fast_fdb value: the index of the port a MAC was learned on, and when the
 * XDP program last saw it as a source (CLOCK_MONOTONIC ns, refreshed at most
 * every VDEV_FAST_SEEN_NS) so vdevd can age and hold entries. */
struct vdev_fast_entry {
	__u32 port_index;
	__u32 flags; /* VDEV_FAST_* */
	__u64 seen_ns;
};
/* fast_vlans value, per port index: the VLANs the fast path may carry
 * to and from the port. untagged: the one VLAN of its untagged frames,
 * taken and sent without a tag (its PVID; 1 for a port without VLAN
 * settings; 0: none -- a trunk without a native VLAN, or a port whose
 * frames are all vdevd's). tagged: the VIDs it carries with their tag, a
 * bit each (VID v: bit v % 64 of word v / 64). vdevd writes it before the
 * port's stations enter fast_fdb; a zeroed row carries nothing. */
struct vdev_fast_vlan {
	__u32 untagged;
	__u32 pad;
	__u64 tagged[64];
};

/* What a frame's 802.1Q tag becomes on the fast path (fast_decide). */
#define VDEV_FAST_TAG_KEEP 0 /* none in, none out; or tagged in and out (priority bits cleared) */
#define VDEV_FAST_TAG_POP 1  /* tagged from a trunk, to a port of that VLAN untagged */
#define VDEV_FAST_TAG_PUSH 2 /* untagged, to a trunk carrying its VLAN tagged */

/* Learned on an isolated port: unicast from one such station to another
 * is never fast-pathed (vdevd drops it, drops.isolated). */
#define VDEV_FAST_ISOLATED 1
#define VDEV_FAST_SEEN_NS 100000000ULL

/* fast_stats: per-CPU counters, key port_index * VDEV_FAST_NSTATS + counter. */
enum vdev_fast_stat {
	VDEV_FAST_RX_PKTS = 0,  /* received on this port, sent by the fast path */
	VDEV_FAST_RX_BYTES = 1,
	VDEV_FAST_TX_PKTS = 2,  /* redirected to this port (before the xmit) */
	VDEV_FAST_TX_BYTES = 3,
	VDEV_FAST_XMIT_DROPS = 4, /* of those, dropped by the device's ndo_xdp_xmit */
	VDEV_FAST_XMIT_REFUSED = 5, /* of the drops, -ENXIO/-EOPNOTSUPP: the device takes no
				     * XDP frames (a veth peer without NAPI) */
	VDEV_FAST_XMIT_FULL = 6, /* of the drops, sent with no error: the device took the
				  * bulk but its queue was full. tun and veth count these in
				  * their own tx_dropped as well. */
	VDEV_FAST_OVERSIZE = 7, /* skb fast path: frames longer than this destination's MTU,
				 * dropped (not GSO: the kernel would not segment them) */
	VDEV_FAST_NSTATS = 8,
};

/* Capture on the fast path (datapath/capture.h): fast_capture, per port
 * index, what its frames on the fast path are copied of -- VDEV_CAP_RX
 * (what it sends into the switch), VDEV_CAP_TX (what it is sent) -- and at
 * most how many bytes of each. The copies go to vdevd through the perf
 * event array fast_capture_events, each a vdev_capture_hdr then the frame's
 * first bytes; one the buffer could not take is counted in the port's row
 * of fast_capture_missed (mmapped by vdevd). dirs 0: no capture. Only the
 * frames its filter matches are copied (vdev_capture_filter.h; no fields:
 * every frame); one it refuses is neither copied nor missed. */
struct vdev_capture_conf {
	__u32 dirs;
	__u32 snaplen;
	struct vdev_capture_filter filter;
};
#define VDEV_CAP_RX 1
#define VDEV_CAP_TX 2
struct vdev_capture_hdr {
	__u64 time_ns;   /* CLOCK_MONOTONIC */
	__u32 port_index;
	__u32 dir;       /* VDEV_CAP_RX or VDEV_CAP_TX */
	__u32 wire_len;  /* the frame's (a GSO skb's whole) length */
	__u32 kept;      /* bytes that follow */
};

/* The skb-level programs (vdev_tc.bpf.c), for ports whose senders hand the
 * kernel skbs (containers' veths, VMs' taps).
 *
 * tc_ports: per port index, what the programs know of the port as a
 * destination and as a source. */
struct vdev_tc_port {
	__u32 ifindex;
	__u32 mtu;    /* the device's MTU: longer non-GSO frames are not sent to it */
	__u32 flags;  /* VDEV_TC_* */
	/* The VLAN of the port's untagged frames on the fast path: their
	 * fast_fdb keys are the MAC | vid << 48 (1: a port without VLAN
	 * settings; 0: none, a trunk without a native VLAN: untagged frames
	 * to vdevd). Its tagged VLANs: fast_vlans. */
	__u32 vid;
};
#define VDEV_TC_DEST 1     /* a fast-path destination now (live) */
#define VDEV_TC_PEER 2     /* a veth or netkit whose peer is in another netns: deliver with
                            * bpf_redirect_peer, into its peer's ingress (without it: bpf_redirect
                            * to its egress) */
#define VDEV_TC_FAST_RX 4  /* what the port receives may take the fast path */
#define VDEV_TC_HOST 8     /* the host is a station behind the port (VDEV_PORT_HOST) */
#define VDEV_TC_ACCESS 16  /* a port with VLAN settings (VDEV_PORT_ACCESS) */
#define VDEV_TC_XMIT 32    /* the program runs in a netkit's transmit, not at tc ingress: the
                            * kernel refuses bpf_redirect_peer there, it sends with bpf_redirect */

/* Keys of the host address maps of the skb-level programs (one map for
 * every port, keyed by the port device's ifindex). */
struct vdev_host_ipv4_key {
	__u32 ifindex;
	__u32 addr;  /* network order */
};
struct vdev_host_ipv6_key {
	__u32 ifindex;
	__u8 addr[16];
};
#define VDEV_TC_MAX_HOST_IPS 4096

/* The punt device: frames that need vdevd's decision leave a port's skb
 * program tagged with an 802.1Q header whose VID is the port index plus
 * one, through a veth pair whose far end vdevd's AF_XDP sockets read. The
 * kernel segments and finishes checksums on the way (the near end has no
 * offloads), so vdevd sees wire frames. */
#define VDEV_PUNT_VID(port_index) ((port_index) + 1)
#define VDEV_PUNT_MAX_VID 4094

#endif
