// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * napi_time.bpf.c - CPU time of the veth NAPI polls of a vdev-bench topology
 * that run in softirq.
 *
 * A veth that receives frames by ndo_xdp_xmit (or has XDP) processes them in
 * its NAPI poll: the XDP program, redirects, skb building, the bridge's whole
 * forwarding path and the transmit into the next veth all run inside it. In
 * softirq mode that poll runs on top of whichever task is current, and this
 * kernel (no IRQ_TIME_ACCOUNTING) charges that task for it: the generator,
 * vdevd, or the idle task. This program times every poll of our veths
 * inside NET_RX softirq and records whose context it ran in, so vdev-bench
 * can move that time from the generator's and vdevd's figures to the device
 * it belongs to. (Polls in threaded-NAPI kthreads need no help: the kthread's
 * own run time is exact.)
 *
 * Only raw tracepoints are used: fentry/fexit and kprobes are not available
 * on every kernel (lockdown policies, CONFIG_KPROBES=n) where these are.
 *
 * Timing: the napi_poll tracepoint fires at the end of each poll. A poll's
 * time is from the previous marker on this CPU (NET_RX softirq entry or the
 * end of the previous poll) to its own end. NET_RX time outside any of our
 * polls (net_rx_action's own work, other devices) goes to the "" device.
 * Softirqs do not nest on one CPU, so one state slot per CPU is enough.
 *
 * Polls of the per-CPU backlog (a NAPI instance without a device) are
 * recorded under VB_BACKLOG_DEV: a veth without NAPI (no XDP program, GRO
 * off) hands its skbs to netif_rx(), and the receive work then happens there.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "bench_shared.h"

#define NET_RX_SOFTIRQ 3 /* include/linux/interrupt.h, stable since 2.6 */

/* Only the fields used, relocated against the kernel's BTF at load time. */
struct net_device {
	char name[16];
} __attribute__((preserve_access_index));
struct napi_struct {
	struct net_device *dev;
} __attribute__((preserve_access_index));

const volatile __u32 bench_tgid = 0;
const volatile char prefix[VB_IFNAMSIZ] = {};
const volatile __u32 prefix_len = 0;
__u32 dut_tgid = 0; /* vdevd's pid while it runs, set by vdev-bench */

struct cpu_state {
	__u64 mark;      /* ns: NET_RX entry or the end of the last poll */
	__u32 in_net_rx;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_state SEC(".maps");

/* Kernel threads whose softirq work is told apart: the ingress port's
 * threaded-NAPI kthread and ksoftirqd. A threaded-NAPI kthread runs its
 * poll outside NET_RX (not timed here: its run time is exact), but the
 * softirqs that poll raises (the backlog of a veth without NAPI, the next
 * veth's NAPI) run on top of it when it re-enables bottom halves, and are
 * part of its run time too; vdev-bench subtracts them from it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VB_MAX_CTX_THREADS);
	__type(key, __u32);   /* thread id */
	__type(value, __u32); /* enum vb_poll_ctx */
} thread_ctx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 128); /* devices x contexts */
	__type(key, struct vb_poll_key);
	__type(value, struct vb_poll_stats);
} poll_stats SEC(".maps");

static __always_inline __u32 current_ctx(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u32 *c = bpf_map_lookup_elem(&thread_ctx, &tid);

	if (c)
		return *c;
	if (dut_tgid && tgid == dut_tgid)
		return VB_CTX_DUT;
	if (tgid == bench_tgid)
		return VB_CTX_BENCH;
	return VB_CTX_OTHER;
}

static __always_inline void account(struct vb_poll_key *key, __u64 ns, __u64 work)
{
	struct vb_poll_stats *st, init = {};

	st = bpf_map_lookup_elem(&poll_stats, key);
	if (!st) {
		bpf_map_update_elem(&poll_stats, key, &init, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&poll_stats, key);
		if (!st)
			return;
	}
	st->ns += ns;
	st->calls++;
	st->work += work;
}

static __always_inline struct cpu_state *state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_state, &zero);
}

SEC("raw_tracepoint/softirq_entry")
int vb_softirq_entry(struct bpf_raw_tracepoint_args *ctx)
{
	struct cpu_state *s;

	if (ctx->args[0] != NET_RX_SOFTIRQ)
		return 0;
	s = state();
	if (s) {
		s->mark = bpf_ktime_get_ns();
		s->in_net_rx = 1;
	}
	return 0;
}

SEC("raw_tracepoint/softirq_exit")
int vb_softirq_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct vb_poll_key key = {};
	struct cpu_state *s;

	if (ctx->args[0] != NET_RX_SOFTIRQ)
		return 0;
	s = state();
	if (!s || !s->in_net_rx)
		return 0;
	key.ctx = current_ctx(); /* dev "": NET_RX time outside our polls */
	account(&key, bpf_ktime_get_ns() - s->mark, 0);
	s->in_net_rx = 0;
	return 0;
}

/* TP_PROTO(struct napi_struct *napi, int work, int budget) */
SEC("raw_tracepoint/napi_poll")
int vb_napi_poll(struct bpf_raw_tracepoint_args *ctx)
{
	struct napi_struct *napi = (struct napi_struct *)ctx->args[0];
	int work = (int)ctx->args[1];
	struct vb_poll_key key = {};
	struct cpu_state *s;
	__u64 now, ns;

	s = state();
	if (!s || !s->in_net_rx)
		return 0; /* a threaded-NAPI poll: its kthread's run time covers it */
	now = bpf_ktime_get_ns();
	ns = now - s->mark;
	s->mark = now;
	if (!BPF_CORE_READ(napi, dev)) {
		/* The per-CPU backlog (process_backlog): skbs queued by
		 * netif_rx(), e.g. by a veth without NAPI (no XDP, GRO off),
		 * which is how a container's veth receives. */
		__builtin_memcpy(key.dev, VB_BACKLOG_DEV, sizeof(VB_BACKLOG_DEV));
	} else {
		BPF_CORE_READ_STR_INTO(&key.dev, napi, dev, name);
		/* Only this topology's devices (names start with "vb<pid>"). */
		for (int i = 0; i < VB_IFNAMSIZ; i++) {
			if (i >= prefix_len)
				break;
			if (key.dev[i] != prefix[i]) {
				__builtin_memset(key.dev, 0, sizeof(key.dev));
				break;
			}
		}
	}
	key.ctx = current_ctx();
	account(&key, ns, work > 0 ? work : 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
