// SPDX-License-Identifier: GPL-2.0
/* A VLAN device's stand-in, for tests and benchmarks on kernels built
 * without 802.1Q devices (CONFIG_VLAN_8021Q off): attached to a
 * namespace's eth0, it makes eth0 behave as eth0.VID would -- what the
 * stack sends leaves tagged VID, what arrives tagged VID reaches the stack
 * untagged, anything else (untagged, another VLAN) is not for it.
 *
 *  tagger_egress (tc/tcx egress): an untagged frame gets the tag (the skb's,
 *    skb->vlan_tci: the veth carries it to its peer as the kernel's own VLAN
 *    device would); a frame already tagged in its data (a packet socket's
 *    hand-made one) leaves as it is.
 *  tagger_ingress (tc/tcx ingress): the kernel took the outer tag off
 *    (skb->vlan_present); VID's is popped, any other frame dropped.
 *
 * VID 0: both programs let every frame through as it is, the stand-in's
 * own cost without the tag (a benchmark's control).
 *
 * The VID: tagger_vid, set before loading (a skeleton: the e2e tests), or
 * VLAN_TAGGER_VID at compile time (clang -DVLAN_TAGGER_VID=10, for tc's
 * loader: `tc filter add dev eth0 egress bpf da obj F sec tc/egress`,
 * scripts/bench-trunk.sh). */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef VLAN_TAGGER_VID
#define VLAN_TAGGER_VID 0
#endif

const volatile __u32 tagger_vid = VLAN_TAGGER_VID;

SEC("tc/egress")
int tagger_egress(struct __sk_buff *skb)
{
	__u8 type[2];

	if (!tagger_vid || skb->vlan_present)
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, 12, type, 2) == 0 &&
	    ((type[0] == 0x81 && type[1] == 0x00) || (type[0] == 0x88 && type[1] == 0xa8)))
		return TC_ACT_OK;
	if (bpf_skb_vlan_push(skb, bpf_htons(0x8100), (__u16)tagger_vid))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

SEC("tc/ingress")
int tagger_ingress(struct __sk_buff *skb)
{
	if (!tagger_vid)
		return TC_ACT_OK;
	if (!skb->vlan_present || skb->vlan_proto != bpf_htons(0x8100) || (skb->vlan_tci & 0x0fff) != tagger_vid)
		return TC_ACT_SHOT;
	if (bpf_skb_vlan_pop(skb))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
