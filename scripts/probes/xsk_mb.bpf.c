// SPDX-License-Identifier: GPL-2.0
/* xsk_mb.bpf.c - the probe's XDP program (scripts/probe-xsk-multibuffer.sh):
 * frags-aware (xdp.frags), so veth takes it at an MTU above a page and
 * hands it multi-buffer frames; the probe's own frames (EtherType 0x88b5,
 * the IEEE local experimental one) go to the AF_XDP socket, anything the
 * kernel sends on the link by itself to the stack. xsk_mb_drop is the
 * other end's during the TX flood. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

/* One of the probe's frames (its EtherType), not one the kernel sent on
 * the link by itself. */
static __always_inline int probe_frame(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	return (void *)(eth + 1) <= end && eth->h_proto == bpf_htons(0x88b5);
}

SEC("xdp.frags")
int xsk_mb(struct xdp_md *ctx)
{
	return probe_frame(ctx) ? bpf_redirect_map(&xsks, 0, XDP_DROP) : XDP_PASS;
}

/* On the other end during the TX flood: the probe's frames are dropped
 * as they arrive (what a receiver costs is not the question there). */
SEC("xdp.frags")
int xsk_mb_drop(struct xdp_md *ctx)
{
	return probe_frame(ctx) ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
