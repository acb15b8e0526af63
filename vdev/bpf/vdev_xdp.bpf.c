// SPDX-License-Identifier: GPL-2.0
/* vdev's XDP program, one instance per port.
 *
 * Frames for the host itself (a MAC in host_macs: the port's own address
 * and any configured host address) go to the stack (XDP_PASS); every other
 * frame is redirected into the AF_XDP socket of its RX queue. A queue with
 * no socket drops (and counts) instead of passing: a switched port's traffic
 * must never leak into the host's stack.
 *
 * Frames shorter than an Ethernet header are redirected too: vdevd counts
 * them as runts, so every drop is visible in one place.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "vdev_xdp_shared.h"

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

	if (data + 6 <= data_end) {
		__u64 key = 0;

		__builtin_memcpy(&key, data, 6);
		if (bpf_map_lookup_elem(&host_macs, &key)) {
			count(VDEV_XDP_PASS);
			return XDP_PASS;
		}
	}
	if (bpf_map_lookup_elem(&xsks_map, &q)) {
		count(VDEV_XDP_REDIRECT);
		return bpf_redirect_map(&xsks_map, q, XDP_DROP);
	}
	count(VDEV_XDP_NO_SOCKET);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
