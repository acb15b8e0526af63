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
	VDEV_LIM_DROP_SPOOF_IP = 4, /* drops.spoof_ip (vdev_ip_allowed() said no) */
	VDEV_LIM_DROP_RA = 5,       /* drops.ra_guard (a Router Advertisement) */
	VDEV_LIM_DROP_DHCP = 6,     /* drops.dhcp_guard (a DHCP or DHCPv6 server's message) */
	VDEV_LIM_NDROPS = 7,
};

/* Anti-spoofing by address: at most this many IPv4 and this many IPv6
 * addresses a port (datapath::kMaxAllowedIps). */
#define VDEV_ALLOWED_IPS 4

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
	/* Anti-spoofing by address: the IPv4 and IPv6 addresses the port may
	 * send from (n_ipv4 + n_ipv6 > 0 turns it on; vdev_ip_allowed()).
	 * Read without the lock, like src_mac. */
	__u32 n_ipv4, n_ipv6;
	__u32 ipv4[VDEV_ALLOWED_IPS]; /* network byte order */
	__u8 ipv6[VDEV_ALLOWED_IPS][16];
	__u32 guard; /* VDEV_GUARD_*: what only a router or a DHCP server sends */
};

enum vdev_guard_flags {
	VDEV_GUARD_RA = 1,   /* Router Advertisements */
	VDEV_GUARD_DHCP = 2, /* DHCP (from port 67) and DHCPv6 (from 547) servers' messages */
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

/* The bytes vdev_ip_allowed() and vdev_guard() read: Ethernet, IPv6 and
 * an ICMPv6 Neighbour Advertisement up to the end of its target
 * (VDEV_NA_END), and 8 bytes more. VDEV_LOAD_HEAD(load, ctx, b, shift)
 * puts the frame's addresses (12 bytes) in b and, after them, what follows
 * its shift bytes of VLAN tags (VDEV_VLAN_COUNT) -- so b looks untagged
 * and every check reads its headers at the same constant offsets -- the
 * longest of 86, 78, 62, 56, 54, 42, 34 or 14 bytes of b the frame fills
 * (load: bpf_xdp_load_bytes or bpf_skb_load_bytes), and is that number (12
 * if not even the EtherType is there, which no check takes for anything). */
#define VDEV_NA_END (14 + 40 + 24)
#define VDEV_IPCHK_BYTES (VDEV_NA_END + 8)
#define VDEV_LOAD_REST(load, ctx, b, off)                                        \
	(!load(ctx, off, (b) + 12, VDEV_IPCHK_BYTES - 12) ? VDEV_IPCHK_BYTES :   \
	 !load(ctx, off, (b) + 12, VDEV_NA_END - 12)      ? VDEV_NA_END :        \
	 !load(ctx, off, (b) + 12, 14 + 40 + 8 - 12)      ? 14 + 40 + 8 :        \
	 !load(ctx, off, (b) + 12, 14 + 40 + 2 - 12)      ? 14 + 40 + 2 :        \
	 !load(ctx, off, (b) + 12, 14 + 40 - 12)          ? 14 + 40 :            \
	 !load(ctx, off, (b) + 12, 14 + 28 - 12)          ? 14 + 28 :            \
	 !load(ctx, off, (b) + 12, 14 + 20 - 12)          ? 14 + 20 :            \
	 !load(ctx, off, (b) + 12, 2)                     ? 14 : 12)
#define VDEV_LOAD_HEAD(load, ctx, b, shift) (load(ctx, 0, b, 12) ? 0 : VDEV_LOAD_REST(load, ctx, b, 12 + (shift)))

/* VLAN tags (802.1Q, 802.1ad) in front of what the guards look for: a
 * Linux receiver takes a priority tag (VID 0) off, any number of them, and
 * one with a VID it has a VLAN device for, so an RA or a DHCP server's
 * message behind tags reaches guests as surely as one without. The guards
 * look through at most VDEV_VLAN_MAX tags (802.1ad + 802.1Q, as Q-in-Q
 * stacks them), and a frame with more is dropped by the guard's reason:
 * what is behind them is not read (a bounded walk). At tc, a tag the kernel
 * already took off into the skb (skb->vlan_present) counts as one. */
#define VDEV_VLAN_MAX 2
#define VDEV_VLAN_DEEP (VDEV_VLAN_MAX + 1)

static __always_inline int vdev_is_vlan(const __u8 *t)
{
	return (t[0] == 0x81 && t[1] == 0x00) || (t[0] == 0x88 && t[1] == 0xa8);
}

/* The tags in the frame itself, from 12 bytes in, into *tagsp: 0 ..
 * VDEV_VLAN_MAX - pre, or VDEV_VLAN_DEEP when they and pre (tags already
 * taken off: skb->vlan_present) are more than VDEV_VLAN_MAX. A tag cut off
 * by the frame's end ends the count (nothing follows it to check). */
#define VDEV_VLAN_COUNT(load, ctx, pre, tagsp)                                          \
	do {                                                                            \
		__u32 _n = 0;                                                           \
		_Pragma("unroll") for (int _i = 0; _i <= VDEV_VLAN_MAX; _i++) {        \
			__u8 _t[2];                                                     \
			if (load(ctx, 12 + 4 * _i, _t, 2) || !vdev_is_vlan(_t))         \
				break;                                                  \
			_n++;                                                           \
		}                                                                       \
		*(tagsp) = _n + (pre) > VDEV_VLAN_MAX ? VDEV_VLAN_DEEP : _n;            \
	} while (0)

/* IPv6 extension headers (RFC 8200 4.1; the IANA list): hop-by-hop (0),
 * routing (43), fragment (44), AH (51), destination options (60),
 * mobility (135), HIP (139), shim6 (140), experiments (253, 254). ESP (50)
 * is not walked: what follows it is encrypted. */
static __always_inline int vdev_ipv6_ext(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 44 || nh == 51 || nh == 60 || nh == 135 || nh == 139 || nh == 140 ||
	       nh == 253 || nh == 254;
}
/* The most extension headers VDEV_WALK_EXT steps over. */
#define VDEV_EXT_MAX 8
/* What VDEV_WALK_EXT puts as the upper-layer protocol of a fragment other
 * than the first (No Next Header: it carries no upper-layer header, the
 * first fragment did) and of a chain it could not read to its end (255,
 * reserved: longer than VDEV_EXT_MAX headers, or cut off by the frame's
 * end), which the checks refuse -- a guard drops what it cannot read
 * (RFC 7113 3), since the receiver's kernel walks every header. */
#define VDEV_NH_LATER_FRAG 59
#define VDEV_NH_UNREAD 255

/* An IPv6 packet with extension headers (b, len: from VDEV_LOAD_HEAD, the
 * same shift): step over them, reading the frame itself (load, ctx), and put in b, as
 * if it followed the fixed header, the upper-layer protocol (b[14 + 6])
 * and the first VDEV_IPCHK_BYTES - 54 bytes of its header (b[54..], the
 * rest zeros, len = 54 + those the frame has), so the checks see it where
 * they look. MLD's reports come behind a hop-by-hop header, which a guest
 * needs; anything could hide behind a header, so every one is walked. */
#define VDEV_WALK_EXT(load, ctx, b, lenp, shift)                                                       \
	do {                                                                                            \
		__u32 _off = (shift) + 14 + 40;                                                         \
		__u8 _nh = (b)[14 + 6];                                                                 \
		if ((b)[12] != 0x86 || (b)[13] != 0xdd || *(lenp) < 14 + 40 || !vdev_ipv6_ext(_nh))   \
			break;                                                                          \
		_Pragma("unroll") for (int _i = 0; _i < VDEV_EXT_MAX; _i++) {                          \
			__u8 _h[4];                                                                     \
			if (!vdev_ipv6_ext(_nh))                                                        \
				break;                                                                  \
			if (load(ctx, _off, _h, 4)) {                                                   \
				_nh = VDEV_NH_UNREAD;                                                   \
				break;                                                                  \
			}                                                                               \
			if (_nh == 44) {                                                                \
				if ((((__u32)_h[2] << 8) | _h[3]) & 0xfff8) {                            \
					_nh = VDEV_NH_LATER_FRAG;                                       \
					break;                                                          \
				}                                                                       \
				_off += 8;                                                              \
			} else if (_nh == 51) {                                                         \
				_off += ((__u32)_h[1] + 2) * 4;                                         \
			} else {                                                                        \
				_off += ((__u32)_h[1] + 1) * 8;                                         \
			}                                                                               \
			_nh = _h[0];                                                                    \
		}                                                                                       \
		if (vdev_ipv6_ext(_nh))                                                                 \
			_nh = VDEV_NH_UNREAD;                                                           \
		(b)[14 + 6] = _nh;                                                                      \
		_Pragma("unroll") for (int _i = 14 + 40; _i < VDEV_IPCHK_BYTES; _i++)(b)[_i] = 0;       \
		if (_nh == VDEV_NH_UNREAD || _nh == VDEV_NH_LATER_FRAG)                                 \
			*(lenp) = 14 + 40;                                                              \
		else if (!load(ctx, _off, (b) + 14 + 40, VDEV_IPCHK_BYTES - 14 - 40))                   \
			*(lenp) = VDEV_IPCHK_BYTES;                                                     \
		else if (!load(ctx, _off, (b) + 14 + 40, VDEV_NA_END - 14 - 40))                        \
			*(lenp) = VDEV_NA_END;                                                          \
		else if (!load(ctx, _off, (b) + 14 + 40, 8))                                            \
			*(lenp) = 14 + 40 + 8;                                                          \
		else if (!load(ctx, _off, (b) + 14 + 40, 2))                                            \
			*(lenp) = 14 + 40 + 2;                                                          \
		else                                                                                    \
			*(lenp) = 14 + 40;                                                              \
	} while (0)

static __always_inline int vdev_v4_allowed(const struct vdev_port_limits *l, const __u8 *a)
{
	__u32 v;

	__builtin_memcpy(&v, a, 4);
	if (!v)
		return 1; /* 0.0.0.0: a DHCP client's DISCOVER, an ARP probe */
#pragma unroll
	for (int i = 0; i < VDEV_ALLOWED_IPS; i++)
		if (i < l->n_ipv4 && l->ipv4[i] == v)
			return 1;
	return 0;
}

/* a is the link-local address a guest's kernel makes from mac (fe80::/64
 * and the modified EUI-64 of the MAC: RFC 4291 2.5.1, appendix A). */
static __always_inline int vdev_v6_ll_of(const __u8 *a, const __u8 *mac)
{
	return a[0] == 0xfe && a[1] == 0x80 && !(a[2] | a[3] | a[4] | a[5] | a[6] | a[7]) && a[8] == (mac[0] ^ 0x02) &&
	       a[9] == mac[1] && a[10] == mac[2] && a[11] == 0xff && a[12] == 0xfe && a[13] == mac[3] &&
	       a[14] == mac[4] && a[15] == mac[5];
}

/* An IPv6 address the port may use: ::, one of its addresses (fe80::
 * ones included: a guest with stable-privacy link-local addresses), or the
 * link-local address of its own MAC (mac: the allowed MAC, or without one
 * the frame's source). Any other link-local address is a spoof: answering
 * for the router's fe80::1 would take its place in every neighbour's
 * cache. */
static __always_inline int vdev_v6_allowed(const struct vdev_port_limits *l, const __u8 *a, const __u8 *mac)
{
	__u64 hi, lo;

	__builtin_memcpy(&hi, a, 8);
	__builtin_memcpy(&lo, a + 8, 8);
	if (!hi && !lo)
		return 1; /* ::, duplicate address detection */
#pragma unroll
	for (int i = 0; i < VDEV_ALLOWED_IPS; i++) {
		__u64 h, w;

		__builtin_memcpy(&h, l->ipv6[i], 8);
		__builtin_memcpy(&w, l->ipv6[i] + 8, 8);
		if (i < l->n_ipv6 && h == hi && w == lo)
			return 1;
	}
	return vdev_v6_ll_of(a, mac);
}

/* Anti-spoofing by address, for a port with allowed addresses: 1 if the
 * frame (its first len bytes in b, len >= 14, the rest zeros; untagged:
 * the caller refuses tags; after VDEV_WALK_EXT) may go on.
 * IPv4 from an allowed source; ARP whose sender is one; IPv6 from one or
 * from the port's own link-local address (vdev_v6_allowed()), a Neighbour
 * Advertisement only for one. 0.0.0.0 and :: pass (DHCP, ARP probes, DAD).
 * Any other EtherType and a frame too short for its header: 0, as
 * libvirt's clean-traffic filter does. */
static __always_inline int vdev_ip_allowed(const struct vdev_port_limits *l, const __u8 *b, __u32 len)
{
	__u8 mac[8] = {};

	if (b[12] == 0x08 && b[13] == 0x00)
		return len >= 14 + 20 && vdev_v4_allowed(l, b + 14 + 12);
	if (b[12] == 0x08 && b[13] == 0x06)
		return len >= 14 + 28 && vdev_v4_allowed(l, b + 14 + 14);
	if (b[12] != 0x86 || b[13] != 0xdd || len < 14 + 40)
		return 0;
	/* The MAC whose link-local address is the port's: the allowed one
	 * (its bytes in order in the word, as the programs copy them). */
	if (l->src_mac)
		__builtin_memcpy(mac, &l->src_mac, 8);
	else
		__builtin_memcpy(mac, b + 6, 6);
	if (!vdev_v6_allowed(l, b + 14 + 8, mac))
		return 0;
	if (b[14 + 6] == VDEV_NH_UNREAD)
		return 0; /* a Neighbour Advertisement could hide behind it */
	/* ICMPv6 type 136; shorter than a whole NA: not one (the kernel
	 * drops it). */
	if (b[14 + 6] == 58 && len >= VDEV_NA_END && b[14 + 40] == 136)
		return vdev_v6_allowed(l, b + 14 + 40 + 8, mac);
	return 1;
}

/* What a guard drops a frame it cannot read as: more tags than
 * VDEV_VLAN_MAX, IPv6 extension headers it cannot walk to their end. */
static __always_inline int vdev_guard_unread(const struct vdev_port_limits *l)
{
	return (l->guard & VDEV_GUARD_RA) ? VDEV_LIM_DROP_RA : VDEV_LIM_DROP_DHCP;
}

/* A DHCP server's (or relay's) message to a client, by its UDP header at
 * o in b: from port 67, to port 68 (what ISC-derived clients listen on,
 * whatever the source), or a BOOTREPLY (op 2, 8 bytes in) between the
 * DHCP ports. A client's DISCOVER or REQUEST (68 -> 67, op 1) is not. */
static __always_inline int vdev_dhcp_server(const __u8 *b, __u32 len, __u32 o)
{
	__u32 sport, dport;

	if (o + 4 > len)
		return 0; /* a cut UDP header: the receiver drops it */
	sport = (__u32)b[o] << 8 | b[o + 1];
	dport = (__u32)b[o + 2] << 8 | b[o + 3];
	if (sport == 67 || dport == 68)
		return 1;
	return (sport == 68 || dport == 67) && o + 9 <= len && b[o + 8] == 2;
}

/* RA and DHCP guard, for a port with l->guard: what the frame (as for
 * vdev_ip_allowed(), after its tags: VDEV_LOAD_HEAD's shift) is dropped as
 * -- VDEV_LIM_DROP_RA, VDEV_LIM_DROP_DHCP -- or -1 to let it go on.
 * RA guard: what only a router sends, ICMPv6 Router Advertisements (134)
 * and Redirects (137). A DHCP server's message: in the first fragment of
 * an IPv4 packet (options included: the UDP header is within the 86
 * bytes), vdev_dhcp_server(); in IPv6, UDP from port 547 or to 546.
 * Clients (68 -> 67, 546 -> 547) and Router Solicitations pass. */
static __always_inline int vdev_guard(const struct vdev_port_limits *l, const __u8 *b, __u32 len)
{
	if ((l->guard & VDEV_GUARD_DHCP) && b[12] == 0x08 && b[13] == 0x00 && len >= 14 + 20) {
		__u32 words = b[14] & 0x0f;

		if (b[14 + 9] != 17 || ((b[14 + 6] & 0x1f) | b[14 + 7]))
			return -1; /* not UDP, or not the first fragment */
		/* The UDP header after 5..15 words of IPv4 header: constant
		 * offsets (the verifier refuses a variable one into the stack). */
#pragma unroll
		for (__u32 w = 5; w <= 15; w++)
			if (words == w)
				return vdev_dhcp_server(b, len, 14 + 4 * w) ? VDEV_LIM_DROP_DHCP : -1;
		return -1;
	}
	if (b[12] != 0x86 || b[13] != 0xdd || len < 14 + 40)
		return -1;
	if (b[14 + 6] == VDEV_NH_UNREAD) /* an RA or a DHCPv6 server could hide behind it */
		return vdev_guard_unread(l);
	if (len < 14 + 40 + 2)
		return -1;
	if ((l->guard & VDEV_GUARD_RA) && b[14 + 6] == 58 && (b[14 + 40] == 134 || b[14 + 40] == 137))
		return VDEV_LIM_DROP_RA;
	if ((l->guard & VDEV_GUARD_DHCP) && b[14 + 6] == 17 &&
	    ((b[14 + 40] == 0x02 && b[14 + 41] == 0x23) ||
	     (len >= 14 + 40 + 4 && b[14 + 42] == 0x02 && b[14 + 43] == 0x22)))
		return VDEV_LIM_DROP_DHCP;
	return -1;
}

/* Anti-spoofing by address and the guards, on a frame of a port with
 * either (as both programs call it): the drop reason (VDEV_LIM_DROP_*) or
 * -1. pre: tags the kernel already took off (skb->vlan_present). A tag on a
 * port with addresses is spoof_ip (a locked port could slip a frame past
 * the check inside one); a guard looks through up to VDEV_VLAN_MAX. */
#define VDEV_CHECK_FRAME(load, ctx, l, pre, whyp)                                                \
	do {                                                                                     \
		__u8 _b[VDEV_IPCHK_BYTES] = {};                                                  \
		__u32 _tags, _len;                                                               \
		int _ipchk = ((l)->n_ipv4 | (l)->n_ipv6) != 0;                                   \
		*(whyp) = -1;                                                                    \
		VDEV_VLAN_COUNT(load, ctx, pre, &_tags);                                         \
		if (_ipchk && (_tags || (pre))) {                                                \
			*(whyp) = VDEV_LIM_DROP_SPOOF_IP;                                        \
			break;                                                                   \
		}                                                                                \
		if (_tags == VDEV_VLAN_DEEP) {                                                   \
			*(whyp) = vdev_guard_unread(l);                                          \
			break;                                                                   \
		}                                                                                \
		_len = VDEV_LOAD_HEAD(load, ctx, _b, _tags * 4);                                 \
		VDEV_WALK_EXT(load, ctx, _b, &_len, _tags * 4);                                  \
		if (_ipchk && !vdev_ip_allowed(l, _b, _len))                                     \
			*(whyp) = VDEV_LIM_DROP_SPOOF_IP;                                        \
		else if ((l)->guard)                                                             \
			*(whyp) = vdev_guard(l, _b, _len);                                       \
	} while (0)
#endif

#endif
