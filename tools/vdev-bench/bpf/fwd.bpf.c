// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fwd.bpf.c - XDP programs vdev-bench attaches to the device under test's
 * ingress port (the host end of the generator veth) for the kernel datapaths.
 *
 *  vb_fwd_pass      "bridge": frames arrive there by veth_xdp_xmit() from the
 *                   generator, which delivers only when the receiving veth
 *                   has NAPI, i.e. an XDP program; XDP_PASS then hands every
 *                   frame to the stack (and so to the bridge) unchanged.
 *  vb_fwd_redirect  "xdp-redirect": every frame goes to the egress port in
 *                   tx_port[0] (a devmap), the cheapest forwarding the kernel
 *                   has: the upper bound vdevd is compared against.
 *  vb_fwd_redirect_rev  the same on the egress port, back through
 *                   tx_port[1] to the ingress port: the return path of the
 *                   latency probes. A second program rather than a lookup by
 *                   ingress ifindex, so the measured direction costs the
 *                   same array lookup as before.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} tx_port SEC(".maps");

SEC("xdp")
int vb_fwd_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int vb_fwd_redirect(struct xdp_md *ctx)
{
	return bpf_redirect_map(&tx_port, 0, XDP_DROP);
}

SEC("xdp")
int vb_fwd_redirect_rev(struct xdp_md *ctx)
{
	return bpf_redirect_map(&tx_port, 1, XDP_DROP);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
