// SPDX-License-Identifier: GPL-2.0
/* The kernel fast path's maps (see vdev_fast_maps.h) and the tracepoint
 * program that makes its drops exact: the devmap's bulk ndo_xdp_xmit
 * reports, per flush, how many frames the destination device refused
 * (its ring full, the frame over its MTU, a veth peer without NAPI); they
 * are counted against the destination port here, so vdevd's counters keep
 * sent = delivered + counted drops for fast-path frames too.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "vdev_xdp_shared.h"
#include "vdev_fast_maps.h"

/* Raw tracepoints (no tracefs needed: vdevd may run where it is not
 * mounted). Their arguments are the kernel's TP_PROTO; the one field read
 * from a kernel struct, net_device.ifindex, is relocated by libbpf (CO-RE)
 * from the running kernel's BTF. */
struct net_device {
	int ifindex;
} __attribute__((preserve_access_index));

/* xdp_devmap_xmit(from_dev, to_dev, sent, drops, err): one per bulk flush. */
SEC("raw_tp/xdp_devmap_xmit")
int BPF_PROG(vdev_fast_xmit, const struct net_device *from_dev, const struct net_device *to_dev,
	     int sent, int drops, int err)
{
	__u32 ifindex;
	__u32 *port_index;

	if (drops <= 0)
		return 0;
	ifindex = (__u32)BPF_CORE_READ(to_dev, ifindex);
	port_index = bpf_map_lookup_elem(&fast_ifindex, &ifindex);
	if (!port_index)
		return 0;  /* not one of ours */
	fast_add(*port_index, VDEV_FAST_XMIT_DROPS, (__u64)drops);
	if (err == -6 /* ENXIO */ || err == -95 /* EOPNOTSUPP */)
		fast_add(*port_index, VDEV_FAST_XMIT_REFUSED, (__u64)drops);
	else if (err == 0)
		fast_add(*port_index, VDEV_FAST_XMIT_FULL, (__u64)drops);
	return 0;
}

/* The id of fast_ports, set by vdevd after loading. */
volatile __u32 fast_ports_id;

/* xdp_redirect_err(dev, xdp, tgt, err, map_type, map_id, index): a redirect
 * that failed before the xmit (destination down, frame over its MTU, no
 * NDO_XMIT). Only redirects through our fast_ports map count; the kernel's
 * "index" is then the devmap key, the destination's port index. */
SEC("raw_tp/xdp_redirect_err")
int BPF_PROG(vdev_fast_redirect_err, const struct net_device *dev, const void *xdp, const void *tgt,
	     int err, int map_type, __u32 map_id, __u32 key)
{
	if (!fast_ports_id || map_id != fast_ports_id || key >= VDEV_FAST_MAX_PORTS)
		return 0;
	fast_add(key, VDEV_FAST_XMIT_DROPS, 1);
	if (err == -6 /* ENXIO */ || err == -95 /* EOPNOTSUPP */)
		fast_add(key, VDEV_FAST_XMIT_REFUSED, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
