// SPDX-License-Identifier: GPL-2.0
/* vdev's XDP program, one instance per port.
 *
 * Frames for the host itself (a MAC in host_macs: the port's own address
 * and any configured host address; an ARP request or an IPv6 Neighbour
 * Solicitation for one of the host's addresses on the device, host_ipv4 and
 * host_ipv6) go to the stack (XDP_PASS); every other frame is redirected
 * into the AF_XDP socket of its RX queue. A queue with no socket drops (and
 * counts) instead of passing: a switched port's traffic must never leak into
 * the host's stack.
 *
 * On a port the host is a station behind (an uplink, port_flags), what a
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
 * The kernel fast path (when vdevd enables it, fast_enabled): unicast whose
 * source MAC vdevd learned on this very port and whose destination MAC it
 * learned on another port that the fast path may use is redirected through
 * the fast_ports devmap -- the kernel's bulk ndo_xdp_xmit -- instead of
 * through vdevd. Everything else (unknown, broadcast, multicast, a source
 * not learned here: new stations, moves, spoofs, 802.3 frames) goes to
 * vdevd, which learns, checks and counts. Fast-path frames are counted in
 * fast_stats (rx at this port, tx at the destination) and the kernel's
 * drops by vdev_fast.bpf.c, so vdevd's counters stay exact.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "vdev_xdp_shared.h"
#include "vdev_fast_maps.h"
#include "vdev_frame_class.h"

/* Set by vdevd before loading: this port's index, and whether its frames
 * may take the fast path. */
const volatile __u32 port_index = 0;
const volatile __u32 fast_enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, VDEV_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_XDP_MAX_HOST_MACS);
	__type(key, __u64);
	__type(value, __u32);
} host_macs SEC(".maps");

/* IPv4 addresses the host has on this port's device (network order): an
 * ARP request for one of them goes to the host's stack, so that a
 * neighbour on an uplink port can resolve the host while vdevd switches the
 * port. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_XDP_MAX_HOST_IPS);
	__type(key, __u32);
	__type(value, __u32);
} host_ipv4 SEC(".maps");

/* IPv6 addresses the host has on this port's device (16 bytes, network
 * order): a Neighbour Solicitation for one of them goes to the host's stack,
 * as an ARP request does for host_ipv4. */
/* A struct, not key_size 16: a key BTF can describe, so libbpf creates the
 * map with BTF at once instead of warning and retrying without it. */
struct vdev_ipv6_key {
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_XDP_MAX_HOST_IPS);
	__type(key, struct vdev_ipv6_key);
	__type(value, __u32);
} host_ipv6 SEC(".maps");

/* VDEV_PORT_*: what the host is to this port (set by vdevd, refreshed with
 * the host's addresses). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} port_flags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VDEV_XDP_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} vdev_xdp_stats SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&vdev_xdp_stats, &idx);

	if (c)
		*c += 1;
}

SEC("xdp")
int vdev_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 q = ctx->rx_queue_index;

	if (data + 14 <= data_end) {
		__u64 key = 0, src = 0;
		struct vdev_fast_entry *s, *d;
		__u8 *eth = data;

		__builtin_memcpy(&key, data, 6);
		if (bpf_map_lookup_elem(&host_macs, &key)) {
			count(VDEV_XDP_PASS);
			return XDP_PASS;
		}
		/* An ARP request (broadcast) for one of the host's addresses. */
		if (key == 0xffffffffffffULL && eth[12] == 0x08 && eth[13] == 0x06 &&
		    data + 14 + 28 <= data_end && eth[14 + 6] == 0 && eth[14 + 7] == 1) {
			__u32 tpa;

			__builtin_memcpy(&tpa, eth + 14 + 24, 4);
			if (bpf_map_lookup_elem(&host_ipv4, &tpa)) {
				count(VDEV_XDP_PASS);
				return XDP_PASS;
			}
		}
		/* An IPv6 Neighbour Solicitation (to a solicited-node multicast
		 * address, 33:33:ff:xx:xx:xx) for one of the host's addresses:
		 * ICMPv6 (next header 58, no extension headers) type 135, its
		 * target 8 bytes into the ICMPv6 header. */
		if ((key & 0xffffffULL) == 0xff3333ULL && eth[12] == 0x86 && eth[13] == 0xdd &&
		    data + 14 + 40 + 24 <= data_end && eth[14 + 6] == 58 && eth[14 + 40] == 135) {
			__u8 target[16];

			__builtin_memcpy(target, eth + 14 + 40 + 8, 16);
			if (bpf_map_lookup_elem(&host_ipv6, target)) {
				count(VDEV_XDP_PASS);
				return XDP_PASS;
			}
		}
		/* A port beyond the fast path's counters (vdevd loads it with
		 * fast_enabled 0 as well) never takes it: its rx would go
		 * uncounted. */
		/* Multicast and broadcast on a port the host is behind: the
		 * host's, or the host's and the guests'. */
		if (key & 1) {
			__u32 zero = 0, *flags = bpf_map_lookup_elem(&port_flags, &zero);

			if (flags && (*flags & VDEV_PORT_HOST)) {
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
				if (class == VDEV_CLASS_HOST ||
				    (class == VDEV_CLASS_BOTH && (*flags & VDEV_PORT_COPY))) {
					count(VDEV_XDP_PASS);
					return XDP_PASS;
				}
			}
		}
		if (!fast_enabled || port_index >= VDEV_FAST_MAX_PORTS || (key & 1) || eth[12] < 0x06)
			goto slow;  /* multicast/broadcast, or 802.3 / bad type: vdevd */
		__builtin_memcpy(&src, eth + 6, 6);
		s = bpf_map_lookup_elem(&fast_fdb, &src);
		if (!s || s->port_index != port_index)
			goto slow;
		d = bpf_map_lookup_elem(&fast_fdb, &key);
		if (!d || d->port_index == port_index || d->port_index >= VDEV_FAST_MAX_PORTS)
			goto slow;
		__u32 out = d->port_index;  /* the destination's devmap key */
		if (!bpf_map_lookup_elem(&fast_ports, &out))
			goto slow;
		__u64 now = bpf_ktime_get_coarse_ns();
		if (now - s->seen_ns > VDEV_FAST_SEEN_NS)
			s->seen_ns = now;
		__u64 len = (__u64)(data_end - data);
		fast_add(port_index, VDEV_FAST_RX_PKTS, 1);
		fast_add(port_index, VDEV_FAST_RX_BYTES, len);
		fast_add(out, VDEV_FAST_TX_PKTS, 1);
		fast_add(out, VDEV_FAST_TX_BYTES, len);
		count(VDEV_XDP_FAST);
		return bpf_redirect_map(&fast_ports, out, 0);
	} else if (data + 6 <= data_end) {
		__u64 key = 0;

		__builtin_memcpy(&key, data, 6);
		if (bpf_map_lookup_elem(&host_macs, &key)) {
			count(VDEV_XDP_PASS);
			return XDP_PASS;
		}
	}
slow:
	if (bpf_map_lookup_elem(&xsks_map, &q)) {
		count(VDEV_XDP_REDIRECT);
		return bpf_redirect_map(&xsks_map, q, XDP_DROP);
	}
	count(VDEV_XDP_NO_SOCKET);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
