// SPDX-License-Identifier: GPL-2.0
/* The kernel fast path's maps (see vdev_fast_maps.h) and the tracepoint
 * program that makes its drops exact: the devmap's bulk ndo_xdp_xmit
 * reports, per flush, how many frames the destination device refused
 * (its ring full, the frame over its MTU, a veth peer without NAPI); they
 * are counted against the destination port here, so vdevd's counters keep
 * sent = delivered + counted drops for fast-path frames too.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "vdev_xdp_shared.h"
#include "vdev_fast_maps.h"

/* The fields of tracepoint xdp:xdp_devmap_xmit (see its format file in
 * tracefs), unchanged since Linux 5.10. */
struct devmap_xmit_ctx {
	__u64 pad;
	int from_ifindex;
	__u32 act;
	int to_ifindex;
	int drops;
	int sent;
	int err;
};

SEC("tracepoint/xdp/xdp_devmap_xmit")
int vdev_fast_xmit(struct devmap_xmit_ctx *ctx)
{
	__u32 ifindex = (__u32)ctx->to_ifindex;
	__u32 *slot;

	if (ctx->drops <= 0)
		return 0;
	slot = bpf_map_lookup_elem(&fast_ifindex, &ifindex);
	if (!slot)
		return 0;  /* not one of ours */
	fast_add(*slot, VDEV_FAST_XMIT_DROPS, (__u64)ctx->drops);
	if (ctx->err == -6 /* ENXIO */ || ctx->err == -95 /* EOPNOTSUPP */)
		fast_add(*slot, VDEV_FAST_XMIT_REFUSED, (__u64)ctx->drops);
	return 0;
}

/* Redirects that fail before the xmit (destination down, frame longer than
 * its MTU, entry gone): tracepoint xdp:xdp_redirect_err, fields as in its
 * format file. Only redirects through our fast_ports map count. */
struct redirect_err_ctx {
	__u64 pad;
	int prog_id;
	__u32 act;
	int ifindex;
	int err;
	int to_ifindex;
	__u32 map_id;
	int map_index;
};

/* The id of fast_ports, set by vdevd after loading. */
volatile __u32 fast_ports_id;

SEC("tracepoint/xdp/xdp_redirect_err")
int vdev_fast_redirect_err(struct redirect_err_ctx *ctx)
{
	if (!fast_ports_id || ctx->map_id != fast_ports_id)
		return 0;
	if (ctx->map_index < 0 || ctx->map_index >= VDEV_FAST_MAX_PORTS)
		return 0;
	fast_add((__u32)ctx->map_index, VDEV_FAST_XMIT_DROPS, 1);
	/* A veth whose peer has no NAPI stops advertising NDO_XMIT. */
	if (ctx->err == -6 /* ENXIO */ || ctx->err == -95 /* EOPNOTSUPP */)
		fast_add((__u32)ctx->map_index, VDEV_FAST_XMIT_REFUSED, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
