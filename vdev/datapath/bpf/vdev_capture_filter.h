/* A capture's filter (vdevctl capture --mac, --vlan, --ethertype, --ip,
 * --proto, --port): which frames of the captured port are copied. One
 * definition for every copier: the XDP and skb programs (vdev_fast_maps.h,
 * fast_capture_copy: a frame the filter refuses costs no copy and no room in
 * the perf buffers) and vdevd's own copies (datapath/capture.h). Plain C,
 * compiled by clang -target bpf and by the C++ compiler; no helper, no map.
 *
 * Every field given must match (fields: VDEV_CAPF_* bits); none given:
 * every frame. What each one means, read from the frame as copied:
 *  - MAC: the source or the destination MAC;
 *  - VLAN: the frame's VID -- the VID of its first (outer) 802.1Q or
 *    802.1ad tag, or for an untagged frame the port's untagged VLAN
 *    (`untagged_vid`: its PVID, 1 on a port without VLAN settings, 0 on a
 *    trunk without one: then no untagged frame matches);
 *  - ETHERTYPE: the type after the tags (up to VDEV_CAPF_TAGS of them; a
 *    frame with more has the third tag's TPID as its type);
 *  - IP: the IPv4 or IPv6 source or destination (IPv4 as ::ffff:a.b.c.d);
 *  - PROTO: the IPv4 protocol, or the IPv6 header's Next Header (not
 *    looked for behind extension headers);
 *  - PORT: the TCP or UDP source or destination port (an IPv4 fragment
 *    other than the first has none).
 * IP, PROTO and PORT match only IPv4 and IPv6 frames. A header the frame
 * is too short for, or that is malformed (an IPv4 IHL below 5, a version
 * that is not its EtherType's), matches nothing: no byte at or past
 * data_end is read.
 *
 * Cost: nothing without fields; with them, a few loads and compares and no
 * loop but the bounded byte compares (unrolled by the compiler). */
#ifndef VDEV_CAPTURE_FILTER_H
#define VDEV_CAPTURE_FILTER_H

#include <linux/types.h>

#define VDEV_CAPF_MAC 1
#define VDEV_CAPF_VLAN 2
#define VDEV_CAPF_ETHERTYPE 4
#define VDEV_CAPF_IP 8
#define VDEV_CAPF_PROTO 16
#define VDEV_CAPF_PORT 32
#define VDEV_CAPF_ALL 63

/* Tags looked through; bytes a match can need (IPv4 with options, two
 * tags, the ports): what the skb program reads of a frame into its stack
 * to match it. */
#define VDEV_CAPF_TAGS 2
#define VDEV_CAPF_BYTES 96

/* Integers in host byte order. */
struct vdev_capture_filter {
	__u32 fields;     /* VDEV_CAPF_*: the ones that must match */
	__u16 vid;        /* VDEV_CAPF_VLAN: 1..4094 */
	__u16 ethertype;  /* VDEV_CAPF_ETHERTYPE: 0x0600.. */
	__u8 mac[6];      /* VDEV_CAPF_MAC */
	__u8 proto;       /* VDEV_CAPF_PROTO: an IP protocol number */
	__u8 pad0;
	__u16 port;       /* VDEV_CAPF_PORT */
	__u16 pad1;
	__u8 ip[16];      /* VDEV_CAPF_IP: IPv6, or IPv4 mapped (::ffff:a.b.c.d) */
};

#ifdef __bpf__
#define VDEV_CAPF_FN static __always_inline
#else
#define VDEV_CAPF_FN static inline
#endif

/* n bytes at p are inside the frame. Written as a pointer compare against
 * data_end, the form from which the BPF verifier learns a packet pointer's
 * range. */
#define VDEV_CAPF_HAVE(p, n, end) ((const __u8 *)(p) + (n) <= (const __u8 *)(end))

VDEV_CAPF_FN int vdev_capf_eq(const __u8 *a, const __u8 *b, int n)
{
	int i, d = 0;

	for (i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
VDEV_CAPF_FN int vdev_capf_mapped(const __u8 *a)
{
	int i, d = (a[10] ^ 0xff) | (a[11] ^ 0xff);

	for (i = 0; i < 10; i++)
		d |= a[i];
	return d == 0;
}

VDEV_CAPF_FN int vdev_capf_is_tag(__u16 type)
{
	return type == 0x8100 || type == 0x88a8;
}

/* 1: the frame at [data, data_end) matches every field of f; 0: it does
 * not, or it is too short or malformed for a field that is asked for. */
VDEV_CAPF_FN int vdev_capture_match(const struct vdev_capture_filter *f, const void *data, const void *data_end,
				    __u32 untagged_vid)
{
	const __u8 *d = (const __u8 *)data;
	const __u8 *l3, *l4 = 0, *src = 0, *dst = 0;
	__u32 fields = f->fields, vid = untagged_vid, alen = 0;
	__u16 type;
	__u8 proto = 0;
	int ports = 0;

	if (!fields)
		return 1;
	if (!VDEV_CAPF_HAVE(d, 14, data_end))
		return 0;
	if ((fields & VDEV_CAPF_MAC) && !vdev_capf_eq(d, f->mac, 6) && !vdev_capf_eq(d + 6, f->mac, 6))
		return 0;
	type = (__u16)(d[12] << 8 | d[13]);
	l3 = d + 14;
	/* The tags, unrolled (VDEV_CAPF_TAGS). */
	if (vdev_capf_is_tag(type)) {
		if (!VDEV_CAPF_HAVE(l3, 4, data_end))
			return 0;
		vid = (__u32)((l3[0] & 0x0f) << 8 | l3[1]);
		type = (__u16)(l3[2] << 8 | l3[3]);
		l3 += 4;
		if (vdev_capf_is_tag(type)) {
			if (!VDEV_CAPF_HAVE(l3, 4, data_end))
				return 0;
			type = (__u16)(l3[2] << 8 | l3[3]);
			l3 += 4;
		}
	}
	if ((fields & VDEV_CAPF_VLAN) && (!vid || vid != f->vid))
		return 0;
	if ((fields & VDEV_CAPF_ETHERTYPE) && type != f->ethertype)
		return 0;
	if (!(fields & (VDEV_CAPF_IP | VDEV_CAPF_PROTO | VDEV_CAPF_PORT)))
		return 1;
	if (type == 0x0800) {
		__u32 ihl;

		if (!VDEV_CAPF_HAVE(l3, 20, data_end) || (l3[0] >> 4) != 4)
			return 0;
		ihl = (__u32)(l3[0] & 0x0f) * 4;
		if (ihl < 20)
			return 0;
		proto = l3[9];
		src = l3 + 12;
		dst = l3 + 16;
		alen = 4;
		/* Only the first fragment has the ports. */
		ports = !(((l3[6] & 0x1f) << 8) | l3[7]);
		l4 = l3 + ihl;
	} else if (type == 0x86dd) {
		if (!VDEV_CAPF_HAVE(l3, 40, data_end) || (l3[0] >> 4) != 6)
			return 0;
		proto = l3[6];
		src = l3 + 8;
		dst = l3 + 24;
		alen = 16;
		ports = 1;
		l4 = l3 + 40;
	} else {
		return 0;
	}
	if ((fields & VDEV_CAPF_PROTO) && proto != f->proto)
		return 0;
	if (fields & VDEV_CAPF_IP) {
		if (alen == 4) {
			/* ::ffff:a.b.c.d */
			if (!vdev_capf_mapped(f->ip) ||
			    (!vdev_capf_eq(src, f->ip + 12, 4) && !vdev_capf_eq(dst, f->ip + 12, 4)))
				return 0;
		} else if (!vdev_capf_eq(src, f->ip, 16) && !vdev_capf_eq(dst, f->ip, 16)) {
			return 0;
		}
	}
	if (fields & VDEV_CAPF_PORT) {
		__u16 sp, dp;

		if ((proto != 6 && proto != 17) || !ports || !VDEV_CAPF_HAVE(l4, 4, data_end))
			return 0;
		sp = (__u16)(l4[0] << 8 | l4[1]);
		dp = (__u16)(l4[2] << 8 | l4[3]);
		if (sp != f->port && dp != f->port)
			return 0;
	}
	return 1;
}

#endif
