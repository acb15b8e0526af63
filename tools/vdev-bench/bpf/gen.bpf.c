// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gen.bpf.c - the vdev-bench traffic generator.
 *
 * vdev-bench runs vb_gen with BPF_PROG_RUN in live-frames mode
 * (BPF_F_TEST_XDP_LIVE_FRAMES) and ctx ingress_ifindex = the generator veth.
 * Every repetition hands the program one copy of the prepared frame (from a
 * page pool the kernel sets up per call); XDP_TX turns into a redirect back
 * out of that veth, i.e. veth_xdp_xmit() into the peer, which is the device
 * under test's ingress port.
 *
 * Frames are recycled through the page pool without being re-copied, so any
 * rewrite here persists into later repetitions: a rewrite must therefore
 * write the field every time, never modify it relative to its old value.
 *
 * Pacing (period_ns != 0): every burst of pace_every frames has a time
 * slot, pace_every * period_ns after the previous one; the burst's first
 * frame spins (bpf_loop on bpf_ktime_get_ns) until the slot comes and the
 * others go at once. The kernel transmits the frames of a batch
 * (BPF_PROG_RUN's batch_size, which vdev-bench sets to pace_every) together
 * when the batch ends, so spacing frames inside a batch would only cost a
 * clock read per frame, on the CPU that also runs the forwarding under
 * test. The slot clock is per CPU, so the overlapping BPF_PROG_RUN threads
 * (all on one CPU) share it and pace as one; their batches interleave
 * whole, so the per-CPU frame count stays aligned with the kernel's
 * batches. A generator that fell behind (softirq work of the device under
 * test on this CPU, the thread descheduled) catches up by at most
 * max_lag_ns worth of frames at once; anything beyond that is skipped, so
 * the offered rate drops rather than the burst growing without bound:
 * vdev-bench reports the rate actually offered.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bench_shared.h"

/* Set by vdev-bench before load (skeleton rodata). sport_count > 1 makes
 * every frame carry source port sport_base + (n % sport_count), n being the
 * frame's index on this CPU, which spreads flows for RSS/hashing paths. */
const volatile __u16 sport_base = 1024;
const volatile __u32 sport_count = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vb_counters);
} gen_counters SEC(".maps");

/* Written by vdev-bench at any time through the mmap()ed .bss; a frame reads
 * each once. 0 = unpaced. */
__u64 period_ns = 0;
__u64 max_lag_ns = 0;
__u32 pace_every = 0; /* frames per slot, the burst size; 0 or 1: each frame */

struct pace_state {
	__u64 next_ns; /* this CPU's next slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pace_state);
} gen_pace SEC(".maps");

struct spin_ctx {
	__u64 until;
};

static long spin_cb(__u32 i, void *data)
{
	struct spin_ctx *s = data;

	return bpf_ktime_get_ns() >= s->until; /* 1 ends the loop */
}

/* Waits for this frame's slot; see the top of the file. */
static __always_inline void pace(__u64 period)
{
	__u32 key = 0;
	struct pace_state *p = bpf_map_lookup_elem(&gen_pace, &key);
	struct spin_ctx s;
	__u64 now, next;

	if (!p)
		return;
	now = bpf_ktime_get_ns();
	next = p->next_ns;
	if (next > now + period) {
		/* Left over from a slower rate: start over. */
		next = now;
	} else if (next > now) {
		s.until = next;
		/* At most 2^23 rounds of a clock read (a few hundred ms): more
		 * than any period vdev-bench sets. */
		bpf_loop(1 << 23, spin_cb, &s, 0);
	} else if (now - next > max_lag_ns) {
		next = now;
	}
	p->next_ns = next + period;
}

SEC("xdp")
int vb_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = VB_COUNTERS_KEY;
	struct vb_counters *c;
	__u64 n, period;

	c = bpf_map_lookup_elem(&gen_counters, &key);
	if (!c)
		return XDP_ABORTED;
	n = c->pkts;
	period = period_ns;
	if (period) {
		__u32 every = pace_every;

		if (every <= 1)
			pace(period);
		else if (n % every == 0)
			pace(period * every);
	}
	/* Counted before it leaves: the generator's count is what it offered. */
	c->pkts = n + 1;
	c->bytes += data_end - data;

	if (sport_count > 1) {
		/* The prepared frame is Ethernet + IPv4 without options + UDP
		 * (vdev-bench builds it), so fixed offsets are enough. UDP
		 * checksum is 0 (none, legal for IPv4): no fix-up needed. */
		struct udphdr *udp = data + sizeof(struct ethhdr) + sizeof(struct iphdr);

		if ((void *)(udp + 1) > data_end)
			return XDP_ABORTED;
		udp->source = bpf_htons(sport_base + (__u16)(n % sport_count));
	}
	return XDP_TX;
}

/*
 * The relay, for kernels that refuse live-frames test runs (EPERM). vdev-bench
 * then writes the frame into a packet socket on one end of a veth pair of its
 * own in the generator namespace; vb_relay, native XDP on the other end,
 * redirects every frame with BPF_F_BROADCAST into relay_out, whose entries
 * (as many as the copies wanted) all name the generator veth. The kernel
 * clones the frame once per entry and transmits the copies through the
 * generator veth's ndo_xdp_xmit in bulk at the end of the NAPI poll: port A
 * receives XDP frames through veth_xdp_xmit(), as from live frames (or a
 * NIC's redirect), a burst of them per write().
 */
#define VB_RELAY_MAX 64

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, VB_RELAY_MAX);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} relay_out SEC(".maps");

SEC("xdp")
int vb_relay(struct xdp_md *ctx)
{
	return bpf_redirect_map(&relay_out, 0, BPF_F_BROADCAST);
}

/* Every entry's program: runs on each copy after the clone, as it leaves.
 * It counts the copy, as vb_gen counts its frames, so the count is what was
 * offered whatever the number of entries at the time; what the generator
 * veth could not hand over is its xdp_xmit_errors, as for vb_gen. With
 * sport_count > 1 the copies get different source ports, as vb_gen's frames
 * do (the frame is vdev-bench's: Ethernet + IPv4 without options + UDP,
 * checksum 0). */
SEC("xdp/devmap")
int vb_relay_copy(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udphdr *udp = data + sizeof(struct ethhdr) + sizeof(struct iphdr);
	__u32 key = VB_COUNTERS_KEY;
	struct vb_counters *c;
	__u64 n;

	c = bpf_map_lookup_elem(&gen_counters, &key);
	if (!c)
		return XDP_DROP;
	n = c->pkts;
	c->pkts = n + 1;
	c->bytes += data_end - data;
	if (sport_count > 1 && (void *)(udp + 1) <= data_end)
		udp->source = bpf_htons(sport_base + (__u16)(n % sport_count));
	return XDP_PASS;
}

/* Attached to the generator veth itself. Nothing is expected to arrive there;
 * an XDP program makes the veth register its XDP RX queue info, which
 * BPF_PROG_RUN checks when ctx names an ingress_ifindex. */
SEC("xdp")
int vb_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
