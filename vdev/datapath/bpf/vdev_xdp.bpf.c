// SPDX-License-Identifier: GPL-2.0
/* vdev's XDP program: one instance, attached to every port at the XDP hook.
 *
 * What is a port's own is found by the ifindex a frame arrived on: its
 * entry in xdp_ports (its fast-path index, flags, counter slot and socket
 * keys), and the host's addresses on its device in the xdp_host_* maps,
 * keyed by that ifindex too.
 *
 * Frames for the host itself (the port device's own MAC, or one in
 * xdp_host_macs: any configured host address; an ARP request or an IPv6
 * Neighbour Solicitation for one of the host's addresses on the device,
 * xdp_host_ipv4 and xdp_host_ipv6) go to the stack (XDP_PASS); every other frame is redirected
 * into the AF_XDP socket of its RX queue. A queue with no socket drops (and
 * counts) instead of passing: a switched port's traffic must never leak into
 * the host's stack.
 *
 * On a port the host is a station behind (an uplink, VDEV_PORT_HOST), what a
 * multicast or broadcast frame is to the host decides (vdev_frame_class.h):
 * link-local group frames (LLDP, STP, LACP) go to the stack alone; what the
 * host and the guests both need (a gratuitous ARP, a Router Advertisement,
 * a broadcast DHCP reply) goes to the stack too, where the tc program
 * vdev_tc_copy hands vdevd a copy to switch -- XDP cannot clone a frame, tc
 * can (VDEV_PORT_COPY; without it, such frames are switched only).
 *
 * Frames shorter than an Ethernet header are redirected too: vdevd counts
 * them as runts, so every drop is visible in one place.
 *
 * The kernel fast path (where vdevd allows it, VDEV_PORT_FAST_RX): unicast whose
 * source MAC vdevd learned on this very port and whose destination MAC it
 * learned on another port that the fast path may use, both in the frame's
 * VLAN, is redirected through the fast_ports devmap -- the kernel's bulk
 * ndo_xdp_xmit -- instead of through vdevd, a trunk's 802.1Q tag popped or
 * pushed in the frame on the way (fast_decide). Everything else (unknown,
 * broadcast, multicast, a source not learned here: new stations, moves,
 * spoofs, 802.3 frames, stacked tags, a VID the port does not carry) goes
 * to vdevd, which learns, checks and counts. Fast-path frames are counted in
 * fast_stats (rx at this port, tx at the destination) and the kernel's
 * drops by vdev_fast.bpf.c, so vdevd's counters stay exact.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "vdev_xdp_shared.h"
#include "vdev_fast_maps.h"
#include "vdev_frame_class.h"
#include "vdev_limits.h"

/* The ports this program is attached to, by the ifindex of their device
 * (struct vdev_xdp_port): one program and one set of maps for every port,
 * so a port costs map entries, not a program and its maps. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_XDP_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vdev_xdp_port);
} xdp_ports SEC(".maps");

/* Every port's sockets: key xsk_base + RX queue (vdevd hands each port a
 * range of nqueues keys). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, VDEV_XDP_MAX_XSKS);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/* MACs of the host on each port's device besides the device's own (in its
 * xdp_ports entry): any configured host address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_XDP_MAX_PORTS * 4);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vdev_xdp_mac_key);
	__type(value, __u32);
} xdp_host_macs SEC(".maps");

/* IPv4 addresses the host has on a port's device (network order): an ARP
 * request for one of them goes to the host's stack, so that a neighbour on
 * an uplink port can resolve the host while vdevd switches the port. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_TC_MAX_HOST_IPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vdev_host_ipv4_key);
	__type(value, __u32);
} xdp_host_ipv4 SEC(".maps");

/* IPv6 addresses the host has on a port's device (16 bytes, network
 * order): a Neighbour Solicitation for one of them goes to the host's
 * stack, as an ARP request does for xdp_host_ipv4. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_TC_MAX_HOST_IPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vdev_host_ipv6_key);
	__type(value, __u32);
} xdp_host_ipv6 SEC(".maps");

/* The VIDs of the host's VLAN devices on a port's device (key: the port's
 * ifindex and the VID in vdev_host_ipv4_key's addr): a tagged ARP request or
 * Neighbour Solicitation of such a VID for an address in xdp_host_ipv4 /
 * xdp_host_ipv6 goes to the host's stack, which hands it to its VLAN device
 * (the addresses of eth0.10 are in the maps under eth0's ifindex). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_TC_MAX_HOST_IPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vdev_host_ipv4_key);
	__type(value, __u32);
} xdp_host_vids SEC(".maps");

/* Whether the frame is a neighbour request for a host address on the
 * device: an ARP request (broadcast) or an IPv6 Neighbour Solicitation (to
 * a solicited-node multicast address, 33:33:ff:xx:xx:xx; ICMPv6, next header
 * 58 with no extension headers, type 135, its target 8 bytes into the ICMPv6
 * header). l2: the bytes before the network header (14, or 18 after one
 * 802.1Q tag), a constant at each call. */
static __always_inline int host_neigh_request(void *data, void *data_end, __u64 dst, __u32 ifindex, __u32 l2)
{
	__u8 *eth = data;

	if (dst == 0xffffffffffffULL && eth[l2 - 2] == 0x08 && eth[l2 - 1] == 0x06 && data + l2 + 28 <= data_end &&
	    eth[l2 + 6] == 0 && eth[l2 + 7] == 1) {
		struct vdev_host_ipv4_key k4 = {.ifindex = ifindex};

		__builtin_memcpy(&k4.addr, eth + l2 + 24, 4);
		return bpf_map_lookup_elem(&xdp_host_ipv4, &k4) != 0;
	}
	if ((dst & 0xffffffULL) == 0xff3333ULL && eth[l2 - 2] == 0x86 && eth[l2 - 1] == 0xdd &&
	    data + l2 + 40 + 24 <= data_end && eth[l2 + 6] == 58 && eth[l2 + 40] == 135) {
		struct vdev_host_ipv6_key k6 = {.ifindex = ifindex};

		__builtin_memcpy(k6.addr, eth + l2 + 40 + 8, 16);
		return bpf_map_lookup_elem(&xdp_host_ipv6, &k6) != 0;
	}
	return 0;
}

/* Per port (its slot), per CPU: key slot * VDEV_XDP_NCOUNTERS + counter;
 * slot VDEV_XDP_MAX_PORTS: frames of a device with no xdp_ports entry. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, (VDEV_XDP_MAX_PORTS + 1) * VDEV_XDP_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} vdev_xdp_stats SEC(".maps");

/* Each port's storm control and policer (vdev_limits.h), by its slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VDEV_XDP_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vdev_port_limits);
} xdp_limits SEC(".maps");

/* What they dropped, per CPU: key slot * VDEV_LIM_NDROPS + vdev_limit_drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VDEV_XDP_MAX_PORTS * VDEV_LIM_NDROPS);
	__type(key, __u32);
	__type(value, __u64);
} xdp_limit_drops SEC(".maps");

static __always_inline int limit_drop(const struct vdev_xdp_port *p, __u32 what)
{
	__u32 k = p->slot * VDEV_LIM_NDROPS + what;
	__u64 *c = bpf_map_lookup_elem(&xdp_limit_drops, &k);

	if (c)
		*c += 1;
	return XDP_DROP;
}

static __always_inline void count(const struct vdev_xdp_port *p, __u32 idx)
{
	__u32 k = p->slot * VDEV_XDP_NCOUNTERS + idx;
	__u64 *c = bpf_map_lookup_elem(&vdev_xdp_stats, &k);

	if (c)
		*c += 1;
}

/* Frags-aware (xdp.frags): a frame longer than a page arrives as a head
 * and fragments (a veth or NIC at a jumbo MTU, the punt device), whose
 * headers are all in the head -- what the program reads. Such a frame
 * goes to vdevd, never the fast path (a tap takes no fragmented frame by
 * ndo_xdp_xmit), and vdevd's socket takes it as a chain of chunks
 * (XDP_USE_SG). */
SEC("xdp.frags")
int vdev_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 frame_len = bpf_xdp_get_buff_len(ctx);
	__u32 ifindex = ctx->ingress_ifindex;
	__u32 q = ctx->rx_queue_index;
	struct vdev_xdp_port *p = bpf_map_lookup_elem(&xdp_ports, &ifindex);

	if (!p) {
		/* Not a port (vdevd writes a port's entry before it attaches
		 * the program and deletes it after it detaches): a switched
		 * device's frames never leak into the host's stack. Counted in
		 * the row after the last slot's. */
		struct vdev_xdp_port none = {.slot = VDEV_XDP_MAX_PORTS};

		count(&none, VDEV_XDP_NO_SOCKET);
		return XDP_DROP;
	}
	/* The policer first: everything the port sends counts against it. */
	struct vdev_port_limits *lim = bpf_map_lookup_elem(&xdp_limits, &p->slot);
	if (lim && lim->on && (lim->b[VDEV_LIM_PPS].rate || lim->b[VDEV_LIM_BPS].rate) &&
	    !vdev_police(lim, 1, frame_len))
		return limit_drop(p, VDEV_LIM_DROP_POLICE);
	if (data + 14 <= data_end) {
		struct vdev_xdp_mac_key hk = {.ifindex = ifindex};
		__u64 key = 0, src = 0;
		struct vdev_fast_entry *s;
		__u8 *eth = data;

		/* Anti-spoofing: only the port's allowed source MAC. */
		if (lim && lim->src_mac) {
			__builtin_memcpy(&src, eth + 6, 6);
			if (src != lim->src_mac)
				return limit_drop(p, VDEV_LIM_DROP_SPOOF);
		}
		/* By address, and the RA and DHCP guard (through VLAN tags:
		 * all of them are in the frame at this hook). */
		if (lim && (lim->n_ipv4 | lim->n_ipv6 | lim->guard)) {
			int why;

			VDEV_CHECK_FRAME(bpf_xdp_load_bytes, ctx, lim, 0, &why);
			if (why >= 0)
				return limit_drop(p, (__u32)why);
		}
		__builtin_memcpy(&key, data, 6);
		hk.mac = key;
		if (key == p->own_mac || (p->nhost_macs && bpf_map_lookup_elem(&xdp_host_macs, &hk))) {
			count(p, VDEV_XDP_PASS);
			return XDP_PASS;
		}
		/* An ARP request or a Neighbour Solicitation for one of the
		 * host's addresses; tagged, in a VLAN the host has a device in
		 * on this one (eth0.10 on eth0): its VLAN device answers. */
		if ((key & 1) && host_neigh_request(data, data_end, key, ifindex, 14)) {
			count(p, VDEV_XDP_PASS);
			return XDP_PASS;
		}
		if ((key & 1) && eth[12] == 0x81 && eth[13] == 0x00 && data + 18 <= data_end) {
			struct vdev_host_ipv4_key kv = {.ifindex = ifindex};

			kv.addr = ((__u32)(eth[14] & 0x0f) << 8) | eth[15];
			if (bpf_map_lookup_elem(&xdp_host_vids, &kv) &&
			    host_neigh_request(data, data_end, key, ifindex, 18)) {
				count(p, VDEV_XDP_PASS);
				return XDP_PASS;
			}
		}
		/* Multicast and broadcast on a port the host is behind: the
		 * host's, or the host's and the guests'. */
		if ((key & 1) && (p->flags & VDEV_PORT_HOST)) {
			__u8 b[VDEV_CLASS_BYTES] = {};
			__u32 len = 14;
			int class;

			if (data + VDEV_CLASS_BYTES <= data_end) {
				__builtin_memcpy(b, data, VDEV_CLASS_BYTES);
				len = VDEV_CLASS_BYTES;
			} else {
				__builtin_memcpy(b, data, 14);
			}
			class = vdev_frame_class(b, len);
			if (class == VDEV_CLASS_BOTH && (p->flags & VDEV_PORT_COPY)) {
				/* The host's stack gets the frame; the guests'
				 * copy is vdev_tc_copy's, which takes the storm
				 * token for it (the copy is what storm control
				 * limits). */
				count(p, VDEV_XDP_PASS);
				return XDP_PASS;
			}
			if (class == VDEV_CLASS_HOST) {
				count(p, VDEV_XDP_PASS);
				return XDP_PASS;
			}
		}
		/* Broadcast and multicast for the switch: storm control. */
		if ((key & 1) && lim && lim->on) {
			int bcast = key == 0xffffffffffffULL;

			if (lim->b[bcast ? VDEV_LIM_BCAST : VDEV_LIM_MCAST].rate && !vdev_storm(lim, bcast, 1))
				return limit_drop(p, bcast ? VDEV_LIM_DROP_BCAST : VDEV_LIM_DROP_MCAST);
		}
		/* A port beyond the fast path's counters never has
		 * VDEV_PORT_FAST_RX (vdevd): its rx would go uncounted. */
		__u32 in = p->port_index;
		/* A frame in fragments (multi-buffer) is vdevd's too. */
		if (!(p->flags & VDEV_PORT_FAST_RX) || frame_len != (__u64)(data_end - data))
			goto slow;
		/* On a port with VLAN settings an 802.1Q tag is the frame's
		 * VLAN (any other, a tag behind it included, is vdevd's:
		 * fast_decide); on one without, payload of VLAN 1. */
		int tci = -1;
		const __u8 *type = eth + 12;
		if ((p->flags & VDEV_PORT_ACCESS) && eth[12] == 0x81 && eth[13] == 0x00) {
			if (data + 18 > data_end)
				goto slow;
			tci = (int)((__u32)eth[14] << 8 | eth[15]);
			type = eth + 16;
		}
		__u32 vid, tag;
		int dest = fast_decide(in, p->vid, p->flags & VDEV_PORT_ACCESS, tci, type, eth, &s, &vid, &tag);
		if (dest < 0)
			goto slow;
		__u32 out = (__u32)dest;  /* the destination's devmap key */
		/* One devmap lookup: the redirect's own. Without the entry it
		 * returns its flags' action (0) and leaves no target behind
		 * (the kernel clears it), so the frame goes to vdevd. */
		if (bpf_redirect_map(&fast_ports, out, 0) != XDP_REDIRECT)
			goto slow;
		__u64 len = (__u64)(data_end - data);
		fast_capture_copy(ctx, in, VDEV_CAP_RX, len, data, data_end, vid);
		/* The tag, in the frame here: popped by moving the addresses up
		 * over it, pushed into the headroom in front of them; kept with
		 * its priority bits cleared, as vdevd does. A failed move of the
		 * head (no headroom: no driver here leaves less than 256 bytes)
		 * leaves the frame as it was, for vdevd, whose socket overrides
		 * the redirect's target (its receive copy is then made twice). */
		if (tag != VDEV_FAST_TAG_KEEP) {
			__u8 macs[12];
			int delta = tag == VDEV_FAST_TAG_POP ? 4 : -4;

			__builtin_memcpy(macs, eth, 12);
			if (bpf_xdp_adjust_head(ctx, delta))
				goto slow;
			data = (void *)(long)ctx->data;
			data_end = (void *)(long)ctx->data_end;
			if (data + 18 > data_end) {
				/* Never: the frame had a tag and a type (pop) or
				 * a type (push) behind its addresses. */
				count(p, VDEV_XDP_NO_SOCKET);
				return XDP_DROP;
			}
			eth = data;
			__builtin_memcpy(eth, macs, 12);
			if (tag == VDEV_FAST_TAG_PUSH) {
				eth[12] = 0x81;
				eth[13] = 0x00;
			}
		}
		if (tag == VDEV_FAST_TAG_PUSH || (tag == VDEV_FAST_TAG_KEEP && tci >= 0)) {
			eth[14] = (__u8)(vid >> 8);
			eth[15] = (__u8)vid;
		}
		fast_seen(s);
		__u64 len_out = (__u64)(data_end - data);
		fast_add(in, VDEV_FAST_RX_PKTS, 1);
		fast_add(in, VDEV_FAST_RX_BYTES, len);
		fast_add(out, VDEV_FAST_TX_PKTS, 1);
		fast_add(out, VDEV_FAST_TX_BYTES, len_out);
		count(p, VDEV_XDP_FAST);
		fast_capture_copy(ctx, out, VDEV_CAP_TX, len_out, data, data_end, vid);
		return XDP_REDIRECT;
	} else if (data + 6 <= data_end) {
		struct vdev_xdp_mac_key hk = {.ifindex = ifindex};

		__builtin_memcpy(&hk.mac, data, 6);
		if (hk.mac == p->own_mac || (p->nhost_macs && bpf_map_lookup_elem(&xdp_host_macs, &hk))) {
			count(p, VDEV_XDP_PASS);
			return XDP_PASS;
		}
	}
slow:
	if (q < p->nqueues) {
		__u32 k = p->xsk_base + q;

		if (bpf_map_lookup_elem(&xsks_map, &k)) {
			count(p, VDEV_XDP_REDIRECT);
			return bpf_redirect_map(&xsks_map, k, XDP_DROP);
		}
	}
	count(p, VDEV_XDP_NO_SOCKET);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
