/* What a multicast or broadcast frame received on a port is to the host,
 * shared by the XDP program (vdev_xdp.bpf.c) and the skb programs
 * (vdev_tc.bpf.c). Plain C, on the frame's first VDEV_CLASS_BYTES copied
 * to the stack.
 *
 * On a port the host is a station behind (an uplink: VDEV_PORT_HOST), the
 * host's stack must see what it would see without vdev, and the guests
 * what they would see on a bridge:
 *  - 802.1D link-local group addresses (01:80:c2:00:00:00 .. 0f: STP,
 *    LACP, 802.1X, LLDP) are the host's alone: a bridge never forwards
 *    them.
 *  - What every station on the segment needs -- a gratuitous ARP (sender
 *    and target address the same) or an ARP reply to broadcast, a DHCP reply
 *    to broadcast (IPv4 UDP 67 -> 68), anything to IPv6 all-nodes (Router
 *    Advertisements, MLD queries, unsolicited Neighbour Advertisements) or
 *    IPv4 all-hosts (IGMP queries) -- is the host's AND the guests': it goes
 *    to the host's stack, and a copy to vdevd, which switches it.
 *  - Any other multicast or broadcast is the guests' (ARP requests and
 *    Neighbour Solicitations for the host's own addresses are picked out
 *    before, by the programs themselves).
 * On a guest's port nothing of this reaches the host (a guest's Router
 * Advertisement must not configure the host); vdevd drops link-local group
 * frames from it (drops.link_local) and switches the rest. */
#ifndef VDEV_FRAME_CLASS_H
#define VDEV_FRAME_CLASS_H

#define VDEV_CLASS_SWITCH 0 /* the guests': switched by vdevd */
#define VDEV_CLASS_HOST 1   /* the host's alone: never switched */
#define VDEV_CLASS_BOTH 2   /* the host's, and a copy switched by vdevd */

/* Bytes the classifier looks at: Ethernet + an ARP body (28), which also
 * covers an IPv4 header without options and the UDP ports. */
#define VDEV_CLASS_BYTES 42

/* b: the frame's first bytes, len of them valid (at least 14). */
static __always_inline int vdev_frame_class(const __u8 *b, __u32 len)
{
	if (!(b[0] & 1))
		return VDEV_CLASS_SWITCH; /* unicast */
	if (b[0] == 0x01 && b[1] == 0x80 && b[2] == 0xc2 && b[3] == 0 && b[4] == 0 && (b[5] & 0xf0) == 0)
		return VDEV_CLASS_HOST;
	if (b[0] == 0x33 && b[1] == 0x33 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 1)
		return VDEV_CLASS_BOTH; /* ff02::1 */
	if (b[0] == 0x01 && b[1] == 0x00 && b[2] == 0x5e && b[3] == 0 && b[4] == 0 && b[5] == 1)
		return VDEV_CLASS_BOTH; /* 224.0.0.1 */
	if ((b[0] & b[1] & b[2] & b[3] & b[4] & b[5]) != 0xff)
		return VDEV_CLASS_SWITCH;
	/* Broadcast. ARP: op at 20, sender address at 28, target at 38. */
	if (b[12] == 0x08 && b[13] == 0x06 && len >= 42) {
		if (b[20] == 0 && b[21] == 2)
			return VDEV_CLASS_BOTH; /* a reply to everyone */
		if (b[28] == b[38] && b[29] == b[39] && b[30] == b[40] && b[31] == b[41])
			return VDEV_CLASS_BOTH; /* gratuitous: announces its own address */
		return VDEV_CLASS_SWITCH;
	}
	/* IPv4 without options, not a fragment, UDP from port 67 to port 68. */
	if (b[12] == 0x08 && b[13] == 0x00 && len >= 38 && b[14] == 0x45 && (b[20] & 0x3f) == 0 && b[21] == 0 &&
	    b[23] == 17 && b[34] == 0 && b[35] == 67 && b[36] == 0 && b[37] == 68)
		return VDEV_CLASS_BOTH;
	return VDEV_CLASS_SWITCH;
}

#endif
