// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * tc_fwd.bpf.c - "tc-redirect", the upper bound of vdev-bench --real and
 * --two-host: on the tc ingress hook of every port of the device under
 * test (with --two-host, of each host's), each skb goes straight to the
 * port its destination MAC is on, as the kernel's own skb redirect does it,
 * with its GSO and checksum state:
 *  - a container's veth (the map holds its host end): bpf_redirect_peer(),
 *    the skb enters the container end's ingress at once, with no backlog
 *    queue in between (the cheapest the kernel has into a namespace);
 *  - a tap: bpf_redirect() to it, the VM reads the skb (its virtio-net
 *    header says GSO and partial checksum);
 *  - a host's uplink (--two-host: a VXLAN device, or a veth to the other
 *    host), for a container on the other host: bpf_redirect() out of it.
 * No learning and no flooding: vdev-bench fills tc_fwd_dest with the
 * stations it made, whose neighbour entries are static (no ARP) and whose
 * IPv6 is off, so nothing else should be on the wire. Anything else is
 * dropped and counted.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "bench_shared.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct vb_tc_fwd_dest);
} tc_fwd_dest SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vb_tc_fwd_stats);
} tc_fwd_stats SEC(".maps");

SEC("tc")
int vb_tc_fwd(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct vb_tc_fwd_stats *st = bpf_map_lookup_elem(&tc_fwd_stats, &zero);
	if (!st)
		return TC_ACT_SHOT;
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	/* A tap's skb may carry little in its linear part: make sure the
	 * Ethernet header is there. */
	if (data + ETH_HLEN > end) {
		if (bpf_skb_pull_data(skb, ETH_HLEN))
			goto unknown;
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		if (data + ETH_HLEN > end)
			goto unknown;
	}
	struct ethhdr *eth = data;
	__u64 key = 0;
	__builtin_memcpy(&key, eth->h_dest, ETH_ALEN);
	struct vb_tc_fwd_dest *d = bpf_map_lookup_elem(&tc_fwd_dest, &key);
	if (!d)
		goto unknown;
	long rc = d->peer ? bpf_redirect_peer(d->ifindex, 0) : bpf_redirect(d->ifindex, 0);
	if (rc != TC_ACT_REDIRECT) {
		st->failed++;
		return TC_ACT_SHOT;
	}
	st->redirected++;
	return TC_ACT_REDIRECT;
unknown:
	st->unknown_dst++;
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
