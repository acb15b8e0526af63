// SPDX-License-Identifier: GPL-2.0
/* vdev's skb-level program (tcx ingress, or a cls_bpf filter in direct-action
 * mode at the clsact ingress where the kernel has no tcx: the same program,
 * the same verdicts -- see the checks below), one program for every port whose
 * senders hand the kernel skbs: a container's veth (its host end), a VM's
 * tap. The skb keeps what XDP cannot hold -- GSO (a TCP stream's 64 KB
 * segments) and checksum offload (CHECKSUM_PARTIAL) -- and a native XDP
 * program on a veth's host end would turn the container's TSO off.
 *
 * Per frame received on a port:
 *  - for the host itself (a host MAC; an ARP request or an IPv6 Neighbour
 *    Solicitation for one of the host's addresses on this device): to the
 *    host's stack (TC_ACT_OK);
 *  - learned unicast (the kernel fast path, when vdevd enables it): source
 *    learned on this very port, destination learned on another port that is
 *    a destination now, both in the frame's VLAN (a trunk's 802.1Q tag the
 *    kernel took off, skb->vlan_tci, popped towards a port that has the
 *    VLAN untagged; one pushed towards a trunk that carries it tagged:
 *    fast_decide) -> straight to it: bpf_redirect_peer into a
 *    container's ingress (no queue in between) -- only for a veth whose
 *    peer is in another namespace (VDEV_TC_PEER), since the kernel drops a
 *    peer redirect into the caller's own namespace; bpf_redirect to the
 *    egress of a veth with its peer here (it arrives at the peer), to a tap (the
 *    VM reads the skb with its GSO and checksum state in its virtio-net
 *    header) or to any other device;
 *  - everything else (unknown, broadcast, multicast, a new, moved or
 *    spoofed source, 802.3, a VID or stacked tags the fast path does not
 *    carry): to vdevd, tagged with the port
 *    index (VDEV_PUNT_VID) and redirected out of the punt device, which has
 *    no offloads: the kernel segments GSO skbs and finishes checksums on
 *    the way, so vdevd's AF_XDP sockets see wire frames.
 * Nothing ever goes to the host's stack that is not for the host: a frame
 * that cannot be handed to vdevd is dropped and counted (no_socket).
 *
 * On a port the host is a station behind (an uplink, VDEV_TC_HOST), what a
 * multicast or broadcast frame is to the host decides (vdev_frame_class.h):
 * link-local group frames go to the host's stack alone; what the host and
 * the guests both need goes to the stack, and a clone of it to vdevd
 * (bpf_clone_redirect), counted as pass and as redirect.
 *
 * vdev_tc_copy, the second program, is for ports at the XDP hook the host
 * is behind: the XDP program passes such frames to the stack, and this one,
 * at the device's ingress, hands vdevd the copy (XDP cannot clone).
 *
 * Counters: per port, the program's own (pass, punt as "redirect",
 * no_socket, fast) and the fast path's (fast_stats: rx at this port, tx at
 * the destination, oversize at the destination), so vdevd's counters stay
 * exact. Packets are counted as wire frames: a GSO skb counts its segments.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "vdev_xdp_shared.h"
#include "vdev_fast_maps.h"
#include "vdev_frame_class.h"
#include "vdev_limits.h"

/* The verdicts mean the same at every hook: tcx's (enum tcx_action_base,
 * uapi/linux/bpf.h of Linux 6.6, newer than Debian's headers) are the
 * TC_ACT_* values cls_bpf's direct-action mode takes. TC_ACT_OK: to the
 * host's stack now (the filters and tcx programs after ours are skipped);
 * TC_ACT_SHOT: dropped; TC_ACT_REDIRECT: what bpf_redirect() and
 * bpf_redirect_peer() return; TC_ACT_UNSPEC: "next" (the next tcx program
 * or filter, and the stack after the last), which only vdev_tc_copy
 * returns. */
#define VDEV_TCX_NEXT (-1)
#define VDEV_TCX_PASS 0
#define VDEV_TCX_DROP 2
#define VDEV_TCX_REDIRECT 7
_Static_assert(TC_ACT_UNSPEC == VDEV_TCX_NEXT, "next");
_Static_assert(TC_ACT_OK == VDEV_TCX_PASS, "pass");
_Static_assert(TC_ACT_SHOT == VDEV_TCX_DROP, "drop");
_Static_assert(TC_ACT_REDIRECT == VDEV_TCX_REDIRECT, "redirect");
/* ... and a netkit's (enum netkit_action, uapi/linux/if_link.h of Linux
 * 6.7), where the program is the pair's peer program (VDEV_TC_XMIT, run in
 * netkit_xmit()): NETKIT_NEXT -1 (the next program, then the pair's
 * policy), PASS 0 (on to the primary end, the host's stack), DROP 2,
 * REDIRECT 7 (skb_do_redirect). The same numbers, so the same program. */
#define VDEV_NETKIT_NEXT (-1)
#define VDEV_NETKIT_PASS 0
#define VDEV_NETKIT_DROP 2
#define VDEV_NETKIT_REDIRECT 7
_Static_assert(TC_ACT_UNSPEC == VDEV_NETKIT_NEXT, "netkit next");
_Static_assert(TC_ACT_OK == VDEV_NETKIT_PASS, "netkit pass");
_Static_assert(TC_ACT_SHOT == VDEV_NETKIT_DROP, "netkit drop");
_Static_assert(TC_ACT_REDIRECT == VDEV_NETKIT_REDIRECT, "netkit redirect");

/* Set by vdevd before loading. */
const volatile __u32 fast_enabled = 0;

/* The punt device's near end (ifindex); 0: none yet. Set after loading. */
volatile __u32 punt_ifindex;
/* The longest frame (Ethernet header included, tag not) the punt device and
 * vdevd's UMEM frames carry. */
volatile __u32 punt_max_frame;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vdev_tc_port);
} tc_ports SEC(".maps");

/* ifindex of a port's device -> its port index. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} tc_index SEC(".maps");

/* ifindex of a port at the XDP hook whose frames for the host and the
 * guests vdev_tc_copy copies -> its port index. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} tc_copy_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Set at load from the port limit (TcPath::create); allocated per
	 * entry, so the bound costs nothing until ports are there. */
	__uint(max_entries, VDEV_XDP_MAX_HOST_MACS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u32);
} tc_host_macs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_TC_MAX_HOST_IPS);
	__type(key, struct vdev_host_ipv4_key);
	__type(value, __u32);
} tc_host_ipv4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_TC_MAX_HOST_IPS);
	__type(key, struct vdev_host_ipv6_key);
	__type(value, __u32);
} tc_host_ipv6 SEC(".maps");

/* The VLANs the host has a device in on a port's device (eth0.10 on eth0),
 * keyed (ifindex, VID) like tc_host_ipv4: a neighbour request the kernel
 * untagged in one of them, for an address of the host there, is the host's
 * VLAN device's to answer. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_TC_MAX_HOST_IPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vdev_host_ipv4_key);
	__type(value, __u32);
} tc_host_vids SEC(".maps");

/* The program's own counters, per port: key port_index * VDEV_XDP_NCOUNTERS
 * + enum vdev_xdp_counter (pass, redirect = punted to vdevd, no_socket,
 * fast), as the XDP program counts them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS * VDEV_XDP_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} tc_stats SEC(".maps");

/* Each port's storm control and policer (vdev_limits.h), by port index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vdev_port_limits);
} tc_limits SEC(".maps");

/* What they dropped, per CPU: key port_index * VDEV_LIM_NDROPS +
 * vdev_limit_drop, in wire frames. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS * VDEV_LIM_NDROPS);
	__type(key, __u32);
	__type(value, __u64);
} tc_limit_drops SEC(".maps");

static __always_inline void limit_drop(__u32 port_index, __u32 what, __u64 n)
{
	__u32 k = port_index * VDEV_LIM_NDROPS + what;
	__u64 *c = bpf_map_lookup_elem(&tc_limit_drops, &k);

	if (c)
		*c += n;
}

/* Storm control for a frame to a group address (dst & 1) on its way to
 * the switch: 1 if it may go. */
static __always_inline int storm_ok(struct vdev_port_limits *lim, __u32 in, __u64 dst)
{
	int bcast = dst == 0xffffffffffffULL;

	if (!lim || !lim->on || !lim->b[bcast ? VDEV_LIM_BCAST : VDEV_LIM_MCAST].rate || vdev_storm(lim, bcast, 1))
		return 1;
	limit_drop(in, bcast ? VDEV_LIM_DROP_BCAST : VDEV_LIM_DROP_MCAST, 1);
	return 0;
}

static __always_inline void count(__u32 port_index, __u32 what)
{
	__u32 k = port_index * VDEV_XDP_NCOUNTERS + what;
	__u64 *c = bpf_map_lookup_elem(&tc_stats, &k);

	if (c)
		*c += 1;
}

/* Ethernet, IP and TCP/UDP header bytes of a TCP or UDP skb; 0 for any
 * other. */
static __always_inline __u32 l4_end(struct __sk_buff *skb)
{
	__u32 hlen = 14, proto = 0;
	__u8 b[2];

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 14, b, 1))
			return 0;
		hlen += (b[0] & 0x0f) * 4;
		if (bpf_skb_load_bytes(skb, 14 + 9, b, 1))
			return 0;
		proto = b[0];
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 14 + 6, b, 1))
			return 0;
		hlen += 40;
		proto = b[0];
	}
	if (proto == 6) { /* TCP: data offset, in 32-bit words */
		if (bpf_skb_load_bytes(skb, hlen + 12, b, 1))
			return 0;
		return hlen + (b[0] >> 4) * 4;
	}
	if (proto == 17)
		return hlen + 8;
	return 0;
}

/* Wire frames in this skb: a GSO skb carries gso_segs of them. An skb a
 * tap built from a virtio-net header has gso_segs 0 until the kernel
 * validates it (SKB_GSO_DODGY): its count is the payload after the TCP or
 * UDP header in gso_size pieces, rounded up. */
static __always_inline __u32 frames_of(struct __sk_buff *skb)
{
	__u32 hlen;

	if (!skb->gso_size)
		return 1;
	if (skb->gso_segs)
		return skb->gso_segs;
	hlen = l4_end(skb);
	if (!hlen || skb->len <= hlen)
		return 1;
	return (skb->len - hlen + skb->gso_size - 1) / skb->gso_size;
}

/* The bytes of the wire frames in this skb: a GSO skb's segments each
 * repeat its headers. */
static __always_inline __u64 wire_bytes(struct __sk_buff *skb, __u32 n)
{
	__u32 hlen;

	if (n <= 1)
		return skb->len;
	hlen = l4_end(skb);
	return (__u64)skb->len + (__u64)(n - 1) * hlen;
}

/* The longest wire frame in this skb. */
static __always_inline __u32 longest_frame(struct __sk_buff *skb)
{
	__u32 hlen;

	if (!skb->gso_size)
		return skb->len;
	hlen = l4_end(skb);
	return hlen ? hlen + skb->gso_size : skb->len;
}

/* A TCP SYN (or SYN-ACK) on its way to vdevd whose MSS option promises
 * segments longer than vdevd's own path holds gets the option lowered to
 * what it holds: the peer then never sends this connection a segment that
 * would be an oversize drop here (the clamp routers do, iptables TCPMSS).
 * IPv4 and IPv6 without extension headers; the TCP checksum follows the
 * change (bpf_l4_csum_replace leaves a CHECKSUM_PARTIAL one to the kernel;
 * a CHECKSUM_COMPLETE skb's sum needs no update: the option and the checksum
 * change by opposite amounts). */
static __always_inline void clamp_mss(struct __sk_buff *skb)
{
	__u32 ip_hlen, fixed, tcp, doff, off, i;
	__u8 b[4];
	__u16 mss, cap;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 14, b, 1))
			return;
		ip_hlen = (b[0] & 0x0f) * 4;
		if (bpf_skb_load_bytes(skb, 14 + 9, b, 1) || b[0] != 6)
			return;
		if (bpf_skb_load_bytes(skb, 14 + 6, b, 2) || (b[0] & 0x3f) || b[1])
			return; /* a fragment: no TCP header here */
		fixed = 20;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 14 + 6, b, 1) || b[0] != 6)
			return;
		ip_hlen = 40;
		fixed = 40;
	} else {
		return;
	}
	if (ip_hlen < 20 || ip_hlen > 60)
		return;
	tcp = 14 + ip_hlen;
	if (bpf_skb_load_bytes(skb, tcp + 12, b, 2) || !(b[1] & 0x02))
		return; /* not a SYN */
	doff = (__u32)(b[0] >> 4) * 4;
	if (punt_max_frame < 14 + fixed + 20 + 536)
		return;
	cap = (__u16)(punt_max_frame - 14 - fixed - 20);
	/* The options, one at a time (at most 40 bytes of them). */
	off = 20;
#pragma unroll
	for (i = 0; i < 20; i++) {
		if (off + 4 > doff || off > 56)
			return;
		if (bpf_skb_load_bytes(skb, tcp + off, b, 4))
			return;
		if (b[0] == 0) /* end of options */
			return;
		if (b[0] == 1) { /* no-op */
			off += 1;
			continue;
		}
		if (b[0] == 2 && b[1] == 4) { /* MSS */
			mss = (__u16)(b[2] << 8 | b[3]);
			if (mss > cap) {
				__be16 old = bpf_htons(mss), new = bpf_htons(cap);

				if (bpf_skb_store_bytes(skb, tcp + off + 2, &new, 2, 0))
					return;
				bpf_l4_csum_replace(skb, tcp + 16, old, new, 2);
			}
			return;
		}
		if (b[1] < 2)
			return; /* malformed: leave it */
		off += b[1];
	}
}

static __always_inline int for_host(struct __sk_buff *skb, const __u8 *eth, __u64 dst)
{
	if (bpf_map_lookup_elem(&tc_host_macs, &dst))
		return 1;
	/* A tagged frame (the kernel took its outer tag off before tc) is a
	 * neighbour request for the host only in a VLAN the host has a device
	 * in on this one; its addresses are among the port's (tc_host_ipv4,
	 * tc_host_ipv6). */
	if (skb->vlan_present) {
		struct vdev_host_ipv4_key v = {.ifindex = skb->ifindex, .addr = skb->vlan_tci & 0x0fff};

		if (!bpf_map_lookup_elem(&tc_host_vids, &v))
			return 0;
	}
	/* An ARP request (broadcast) for one of the host's addresses here:
	 * the target protocol address is 24 bytes into the ARP header. */
	if (dst == 0xffffffffffffULL && eth[12] == 0x08 && eth[13] == 0x06) {
		struct vdev_host_ipv4_key k = {.ifindex = skb->ifindex};
		__u8 op[2];

		if (bpf_skb_load_bytes(skb, 14 + 6, op, 2) || op[0] != 0 || op[1] != 1)
			return 0;
		if (bpf_skb_load_bytes(skb, 14 + 24, &k.addr, 4))
			return 0;
		return bpf_map_lookup_elem(&tc_host_ipv4, &k) != 0;
	}
	/* An IPv6 Neighbour Solicitation (to a solicited-node multicast
	 * address, 33:33:ff:xx:xx:xx) for one of the host's addresses: ICMPv6
	 * (next header 58, no extension headers) type 135, its target 8 bytes
	 * into the ICMPv6 header. */
	if ((dst & 0xffffffULL) == 0xff3333ULL && eth[12] == 0x86 && eth[13] == 0xdd) {
		struct vdev_host_ipv6_key k = {.ifindex = skb->ifindex};
		__u8 nh, type;

		if (bpf_skb_load_bytes(skb, 14 + 6, &nh, 1) || nh != 58)
			return 0;
		if (bpf_skb_load_bytes(skb, 14 + 40, &type, 1) || type != 135)
			return 0;
		if (bpf_skb_load_bytes(skb, 14 + 40 + 8, k.addr, 16))
			return 0;
		return bpf_map_lookup_elem(&tc_host_ipv6, &k) != 0;
	}
	return 0;
}

/* The frame's class (vdev_frame_class.h). */
static __always_inline int frame_class(struct __sk_buff *skb)
{
	__u8 b[VDEV_CLASS_BYTES] = {};

	if (bpf_skb_load_bytes(skb, 0, b, VDEV_CLASS_BYTES) == 0)
		return vdev_frame_class(b, VDEV_CLASS_BYTES);
	if (bpf_skb_load_bytes(skb, 0, b, 14) == 0)
		return vdev_frame_class(b, 14);
	return VDEV_CLASS_SWITCH;
}

/* A copy of the frame, which goes on to the host's stack, to vdevd: tagged
 * with the port's index, cloned out of the punt device, the tag taken off
 * the original again. Counted as redirect, or no_socket if it could not be
 * (the host got the frame all the same). */
static __always_inline void copy_to_vdevd(struct __sk_buff *skb, __u32 in)
{
	if (!punt_ifindex || skb->vlan_present || skb->len > punt_max_frame ||
	    bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), VDEV_PUNT_VID(in))) {
		count(in, VDEV_XDP_NO_SOCKET);
		return;
	}
	if (bpf_clone_redirect(skb, punt_ifindex, 0))
		count(in, VDEV_XDP_NO_SOCKET);
	else
		count(in, VDEV_XDP_REDIRECT);
	bpf_skb_vlan_pop(skb);
}

SEC("tc")
int vdev_tc_port(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	__u32 *idx = bpf_map_lookup_elem(&tc_index, &ifindex);
	struct vdev_tc_port *self, *out;
	struct vdev_fast_entry *s;
	struct vdev_port_limits *lim;
	__u64 dst = 0, src = 0;
	__u8 eth[14];
	__u32 in, to, n, vid, tag;
	int dest, tci;

	if (!idx)
		return TC_ACT_SHOT; /* attached to ports only; never leak into the host */
	in = *idx;
	if (in >= VDEV_FAST_MAX_PORTS)
		return TC_ACT_SHOT;
	/* The policer first: everything the port sends counts against it. */
	lim = bpf_map_lookup_elem(&tc_limits, &in);
	if (lim && lim->on && (lim->b[VDEV_LIM_PPS].rate || lim->b[VDEV_LIM_BPS].rate)) {
		n = frames_of(skb);
		if (!vdev_police(lim, n, wire_bytes(skb, n))) {
			limit_drop(in, VDEV_LIM_DROP_POLICE, n);
			return TC_ACT_SHOT;
		}
	}
	if (bpf_skb_load_bytes(skb, 0, eth, sizeof eth))
		goto punt; /* shorter than an Ethernet header: vdevd counts the runt */
	/* Anti-spoofing: only the port's allowed source MAC (a GSO skb counts
	 * as the frames it becomes). */
	if (lim && lim->src_mac) {
		__builtin_memcpy(&src, eth + 6, 6);
		if (src != lim->src_mac) {
			limit_drop(in, VDEV_LIM_DROP_SPOOF, frames_of(skb));
			return TC_ACT_SHOT;
		}
	}
	/* By address, and the RA and DHCP guard. The kernel takes a frame's
	 * outer tag off before tc (skb_vlan_untag() in
	 * __netif_receive_skb_core(): skb->vlan_present) and leaves the inner
	 * ones in the frame: the outer one counts as a tag here, on the wire
	 * it was one. */
	if (lim && (lim->n_ipv4 | lim->n_ipv6 | lim->guard)) {
		int why;

		VDEV_CHECK_FRAME(bpf_skb_load_bytes, skb, lim, skb->vlan_present ? 1 : 0, &why);
		if (why >= 0) {
			limit_drop(in, (__u32)why, frames_of(skb));
			return TC_ACT_SHOT;
		}
	}
	__builtin_memcpy(&dst, eth, 6);
	if (for_host(skb, eth, dst)) {
		count(in, VDEV_XDP_PASS);
		return TC_ACT_OK;
	}
	self = bpf_map_lookup_elem(&tc_ports, &in);
	if ((dst & 1) && self && (self->flags & VDEV_TC_HOST)) {
		/* Multicast or broadcast on a port the host is behind. */
		int class = frame_class(skb);

		if (class != VDEV_CLASS_SWITCH) {
			count(in, VDEV_XDP_PASS);
			/* The guests' copy is what storm control limits. */
			if (class == VDEV_CLASS_BOTH && storm_ok(lim, in, dst))
				copy_to_vdevd(skb, in);
			return TC_ACT_OK;
		}
	}
	if ((dst & 1) && !storm_ok(lim, in, dst))
		return TC_ACT_SHOT;
	if (!fast_enabled || !self || !(self->flags & VDEV_TC_FAST_RX))
		goto punt;
	/* A frame the kernel untagged (skb->vlan_present: its outer tag, the
	 * rest stay in the frame) is in that tag's VLAN on a port with VLAN
	 * settings, if it is an 802.1Q one; vdevd's otherwise (802.1ad; the
	 * tag of a port without VLAN settings is payload the skb cannot keep
	 * in place here). */
	tci = -1;
	if (skb->vlan_present) {
		if (!(self->flags & VDEV_TC_ACCESS) || skb->vlan_proto != bpf_htons(ETH_P_8021Q))
			goto punt;
		tci = (int)(skb->vlan_tci & 0xffff);
	}
	dest = fast_decide(in, self->vid, self->flags & VDEV_TC_ACCESS, tci, eth + 12, eth, &s, &vid, &tag);
	if (dest < 0)
		goto punt;
	to = (__u32)dest;
	out = bpf_map_lookup_elem(&tc_ports, &to);
	if (!out || !(out->flags & VDEV_TC_DEST))
		goto punt; /* down, or not a destination now: vdevd counts it */
	n = frames_of(skb);
	/* The tag stays out of the skb's data on both sides (the kernel's
	 * skb->vlan_tci; the destination device, or its driver on transmit,
	 * puts it in), so the lengths below are the frames' without it, plus
	 * 4 bytes a frame where it is on the wire. Neither helper fails on an
	 * skb whose tag is outside its data: a pop clears it, a push to an
	 * untagged one sets it; on a failure the frame is unchanged and
	 * vdevd's. Priority bits are cleared, as vdevd does (a new tag). */
	if (tag == VDEV_FAST_TAG_POP || (tag == VDEV_FAST_TAG_KEEP && tci >= 0 && (tci & 0xf000))) {
		if (bpf_skb_vlan_pop(skb))
			goto punt;
	}
	if (tag == VDEV_FAST_TAG_PUSH || (tag == VDEV_FAST_TAG_KEEP && tci >= 0 && (tci & 0xf000))) {
		if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), (__u16)vid))
			goto punt;
	}
	fast_seen(s);
	fast_add(in, VDEV_FAST_RX_PKTS, n);
	fast_add(in, VDEV_FAST_RX_BYTES, skb->len + (tci >= 0 ? 4 * n : 0));
	/* A frame longer than the destination's MTU that the kernel would not
	 * segment (not GSO) is the destination's oversize drop, as in vdevd. */
	if (!skb->gso_size && skb->len > out->mtu + 14) {
		fast_add(to, VDEV_FAST_OVERSIZE, n);
		return TC_ACT_SHOT;
	}
	fast_add(to, VDEV_FAST_TX_PKTS, n);
	fast_add(to, VDEV_FAST_TX_BYTES, skb->len + (skb->vlan_present ? 4 * n : 0));
	count(in, VDEV_XDP_FAST);
	fast_capture_copy_skb(skb, in, to, vid);
	/* Counted as sent before the kernel delivers it: neither helper can
	 * fail here (flags 0), and what skb_do_redirect() later refuses is
	 * what cannot be known in the program -- a peer redirect into the
	 * caller's own namespace (vdevd sets VDEV_TC_PEER only for a veth
	 * whose peer is elsewhere, Port::redirectPeer), or into a peer that is
	 * down (then the veth has no carrier and is no destination: VDEV_TC_DEST
	 * off). A netkit's program (VDEV_TC_XMIT) is not at tc ingress, where
	 * the kernel drops a peer redirect: it sends to the egress, which
	 * reaches the peer through its backlog. self->flags is already read:
	 * nothing more per frame. */
	if ((out->flags & VDEV_TC_PEER) && !(self->flags & VDEV_TC_XMIT))
		return bpf_redirect_peer(out->ifindex, 0);
	return bpf_redirect(out->ifindex, 0);
punt:
	/* A frame vdevd could not hold (longer than a UMEM frame, after the
	 * kernel's segmentation): this port's oversize drop, here, instead of
	 * an anonymous drop at the punt device. */
	if (longest_frame(skb) > punt_max_frame) {
		fast_add(in, VDEV_FAST_OVERSIZE, frames_of(skb));
		return TC_ACT_SHOT;
	}
	if (punt_ifindex)
		clamp_mss(skb);
	if (!punt_ifindex || bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), VDEV_PUNT_VID(in))) {
		count(in, VDEV_XDP_NO_SOCKET);
		return TC_ACT_SHOT;
	}
	count(in, VDEV_XDP_REDIRECT);
	return bpf_redirect(punt_ifindex, 0);
}

/* At the ingress (tcx, or clsact) of a port at the XDP hook the host is
 * behind: every frame here is one the XDP program passed to the host's
 * stack, and goes on there; those for the guests as well get copied to
 * vdevd. Storm control limits the copy, never the host's frame: the token is
 * taken here, from the port's row of tc_limits (vdevd writes an XDP port's
 * limits there while the copy program is attached), and a copy over the
 * limit is counted in the row's storm drops. Its verdict is always "next"
 * (TC_ACT_UNSPEC), not "pass": it only looks, so whatever else is attached
 * after it (a tcx program, a filter at a lower priority, the clsact filters
 * after tcx) still sees the frame; the stack gets it after the last. */
SEC("tc")
int vdev_tc_copy(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	__u32 *idx = bpf_map_lookup_elem(&tc_copy_index, &ifindex);
	__u64 dst = 0;
	__u32 in;

	if (!idx || *idx >= VDEV_FAST_MAX_PORTS || frame_class(skb) != VDEV_CLASS_BOTH)
		return TC_ACT_UNSPEC;
	in = *idx;
	if (bpf_skb_load_bytes(skb, 0, &dst, 6))
		return TC_ACT_UNSPEC;
	if (storm_ok(bpf_map_lookup_elem(&tc_limits, &in), in, dst))
		copy_to_vdevd(skb, in);
	return TC_ACT_UNSPEC;
}

/* A netkit's primary program (BPF_NETKIT_PRIMARY): run in the primary
 * end's transmit, on every frame on its way into the container (vdevd's,
 * the host's, the fast path's from another netkit; not what
 * bpf_redirect_peer puts into the peer's ingress directly). A netkit, unlike
 * a veth, does not run eth_type_trans() on them: it keeps skb->protocol as
 * the sender set it, and vdevd's AF_XDP transmit sets none -- the
 * container's stack dropped every ARP request and broadcast vdevd flooded
 * to it as of protocol 0 (its AF_PACKET sockets still saw them). For such
 * a frame (no Ethernet II type: 0, or an AF_PACKET sender's ETH_P_ALL) the
 * type is read from the frame the kernel's own way: a tag pushed twice and
 * popped twice -- the second push moves the first tag into the frame, and
 * popping it (__skb_vlan_pop) sets skb->protocol from the type behind it.
 * A frame with a type, the fast path's and the host's, costs one compare.
 * Always "next": the pair's primary policy (pass) delivers it. */
SEC("tc")
int vdev_tc_netkit_in(struct __sk_buff *skb)
{
	if (bpf_ntohs(skb->protocol) >= ETH_P_802_3_MIN || skb->vlan_present)
		return TC_ACT_UNSPEC;
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 1) ||
	    bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 1))
		return TC_ACT_UNSPEC;
	bpf_skb_vlan_pop(skb);
	bpf_skb_vlan_pop(skb);
	return TC_ACT_UNSPEC;
}

char _license[] SEC("license") = "GPL";
