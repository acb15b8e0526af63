/* A port's storm control, ingress policer and allowed source MAC
 * (datapath/limits.h), as the
 * port's program (vdev_xdp.bpf.c or vdev_tc.bpf.c) enforces them: token
 * buckets in a map value with a spin lock, one set per port. Shared between
 * the programs and vdevd (which writes the buckets' rates). Plain C.
 *
 * Exactness: one bucket per port, not one per CPU: a port's frames are
 * measured against its rate whichever CPU they arrive on, to the
 * nanosecond of bpf_ktime_get_ns(). The lock is taken only by ports with a
 * limit (vdev_port_limits.on), once per frame, and held for a few
 * arithmetic instructions.
 *
 * A bucket holds time, not tokens: credit_ns grows with the time that
 * passes (up to depth_ns, the burst) and a frame costs units * 1e9 / rate
 * of it. A frame passes while the credit is not negative, and may then
 * take it below zero: one 64 KB GSO skb passes a bucket smaller than
 * itself, and the debt it leaves holds back what follows until time has
 * paid it off, so the long-run rate holds. */
#ifndef VDEV_LIMITS_H
#define VDEV_LIMITS_H

enum vdev_limit {
	VDEV_LIM_BCAST = 0, /* broadcast frames/s */
	VDEV_LIM_MCAST = 1, /* multicast (not broadcast) frames/s */
	VDEV_LIM_PPS = 2,   /* the policer: every frame, frames/s */
	VDEV_LIM_BPS = 3,   /* the policer: bits/s */
	VDEV_LIM_N = 4,
};

/* What the programs drop and count, per port: key row * VDEV_LIM_NDROPS +
 * one of these (row: the port's index at tc, its slot at XDP). */
enum vdev_limit_drop {
	VDEV_LIM_DROP_BCAST = 0,  /* drops.storm_bcast */
	VDEV_LIM_DROP_MCAST = 1,  /* drops.storm_mcast */
	VDEV_LIM_DROP_POLICE = 2, /* drops.police (a frame either bucket holds back) */
	VDEV_LIM_DROP_SPOOF = 3,  /* drops.spoof_mac (a source MAC not the port's allowed one) */
	VDEV_LIM_NDROPS = 4,
};

struct vdev_bucket {
	__u64 rate;      /* units (frames, or bits) a second; 0: no limit */
	__u64 depth_ns;  /* the most credit it holds (the burst, as time) */
	__s64 credit_ns; /* negative: in debt */
	__u64 last_ns;   /* bpf_ktime_get_ns() of the last refill */
};

struct vdev_port_limits {
	struct bpf_spin_lock lock;
	__u32 on; /* any rate set; 0: the program skips the lock */
	struct vdev_bucket b[VDEV_LIM_N];
	/* Anti-spoofing: the one source MAC the port may send (its 6 bytes
	 * copied into the low bytes, as the programs read MACs); 0: any.
	 * Read without the lock: vdevd replaces the element whole. */
	__u64 src_mac;
};

#ifdef __BPF__
/* Time since the last frame, added to the credit (the lock is held). */
static __always_inline void vdev_refill(struct vdev_bucket *b, __u64 now)
{
	__s64 c;

	if (!b->rate)
		return;
	if (now > b->last_ns + b->depth_ns)
		c = (__s64)b->depth_ns; /* idle for longer than the burst: full */
	else
		c = b->credit_ns + (__s64)(now - b->last_ns);
	if (c > (__s64)b->depth_ns)
		c = (__s64)b->depth_ns;
	b->credit_ns = c;
	b->last_ns = now;
}

static __always_inline void vdev_take(struct vdev_bucket *b, __u64 units)
{
	if (b->rate)
		b->credit_ns -= (__s64)(units * 1000000000ULL / b->rate);
}

/* The policer: 1 if a frame (or a GSO skb of pkts wire frames, bytes in
 * all) may pass; it then pays both buckets. */
static __always_inline int vdev_police(struct vdev_port_limits *l, __u64 pkts, __u64 bytes)
{
	__u64 now = bpf_ktime_get_ns();
	int pass;

	bpf_spin_lock(&l->lock);
	vdev_refill(&l->b[VDEV_LIM_PPS], now);
	vdev_refill(&l->b[VDEV_LIM_BPS], now);
	pass = l->b[VDEV_LIM_PPS].credit_ns >= 0 && l->b[VDEV_LIM_BPS].credit_ns >= 0;
	if (pass) {
		vdev_take(&l->b[VDEV_LIM_PPS], pkts);
		vdev_take(&l->b[VDEV_LIM_BPS], bytes * 8);
	}
	bpf_spin_unlock(&l->lock);
	return pass;
}

/* Storm control for a frame to a group address (bcast: all ones): 1 if it
 * may go on to the switch. */
static __always_inline int vdev_storm(struct vdev_port_limits *l, int bcast, __u64 pkts)
{
	__u64 now = bpf_ktime_get_ns();
	struct vdev_bucket *b = bcast ? &l->b[VDEV_LIM_BCAST] : &l->b[VDEV_LIM_MCAST];
	int pass;

	bpf_spin_lock(&l->lock);
	vdev_refill(b, now);
	pass = b->credit_ns >= 0;
	if (pass)
		vdev_take(b, pkts);
	bpf_spin_unlock(&l->lock);
	return pass;
}
#endif

#endif
