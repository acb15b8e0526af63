/* The fast path's maps, defined once here and included by both BPF objects:
 * vdev_fast.bpf.c creates them (vdevd loads it once), every port's
 * vdev_xdp.bpf.c reuses them by fd. */
#ifndef VDEV_FAST_MAPS_H
#define VDEV_FAST_MAPS_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct vdev_fast_entry);
} fast_fdb SEC(".maps");

/* Destination ports the fast path may use: devmap key (the port index) ->
 * ifindex. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} fast_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS * VDEV_FAST_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} fast_stats SEC(".maps");

/* ifindex -> port index of the fast path's destination ports (the
 * tracepoint). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} fast_ifindex SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vdev_capture_conf);
} fast_capture SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} fast_capture_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u64);
} fast_capture_missed SEC(".maps");

static __always_inline void fast_add(__u32 port_index, __u32 stat, __u64 n)
{
	__u32 k = port_index * VDEV_FAST_NSTATS + stat;
	__u64 *c = bpf_map_lookup_elem(&fast_stats, &k);

	if (c)
		*c += n;
}

/* The VLANs of each port on the fast path (struct vdev_fast_vlan), by
 * port index: a bitmap, one array lookup per frame and no hashing, where a
 * (port, VID) hash would need one lookup per question; 512 bytes a port,
 * allocated once. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VDEV_FAST_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vdev_fast_vlan);
} fast_vlans SEC(".maps");

static __always_inline int fast_vlan_tagged(const struct vdev_fast_vlan *r, __u32 vid)
{
	return (r->tagged[(vid >> 6) & 63] >> (vid & 63)) & 1;
}

/* The fast path's decision, one for the XDP and the tc program: the port
 * index learned unicast from port `in` goes to, or -1 where vdevd decides
 * and counts -- multicast and broadcast, 802.3 frames (a length, not a
 * type), a frame in no VLAN the port carries on the fast path (untagged on
 * a port without an untagged VLAN, a VID whose tag it does not carry, a
 * priority tag), stacked tags (802.1ad, or a second 802.1Q tag) on a port
 * with VLAN settings, a source not learned at `in` in the frame's VLAN
 * (new, or moved), an unknown destination, one that is `in` itself or
 * beyond the fast path's ports, one that does not carry the VLAN,
 * isolated to isolated.
 *
 * `eth`: the frame's first 14 bytes (the addresses); `type`: the 2 bytes
 * of the type after the frame's VLAN tag (eth + 12 where there is none, or
 * where the kernel took it off); `tci`: that tag's TCI, -1 for an untagged
 * frame (and for any frame of a port without VLAN settings, whose tags
 * are payload); `vid`: the port's untagged VLAN (vdev_tc_port.vid); `vlans`:
 * the port has VLAN settings (VDEV_TC_ACCESS). The MAC table's keys are
 * MAC | VID << 48. *src_out: the source's entry, which fast_seen() refreshes
 * once the frame goes; *vid_out: the frame's VLAN; *tag_out: what its tag
 * becomes (VDEV_FAST_TAG_*): popped towards a port that has the VLAN
 * untagged, pushed towards a trunk that carries it tagged. */
static __always_inline int fast_decide(__u32 in, __u32 vid, int vlans, int tci, const __u8 *type,
				       const __u8 *eth, struct vdev_fast_entry **src_out, __u32 *vid_out,
				       __u32 *tag_out)
{
	struct vdev_fast_entry *s, *d;
	struct vdev_fast_vlan *r;
	__u64 src = 0, dst = 0;
	__u32 to;
	int out_tagged;

	if (in >= VDEV_FAST_MAX_PORTS || (eth[0] & 1) || type[0] < 0x06)
		return -1;
	if (vlans && ((type[0] == 0x81 && type[1] == 0x00) || (type[0] == 0x88 && type[1] == 0xa8)))
		return -1;
	if (tci >= 0) {
		vid = (__u32)tci & 0x0fff;
		r = bpf_map_lookup_elem(&fast_vlans, &in);
		if (!vid || !r || !fast_vlan_tagged(r, vid))
			return -1;
	}
	if (!vid)
		return -1;
	__builtin_memcpy(&src, eth + 6, 6);
	src |= (__u64)vid << 48;
	s = bpf_map_lookup_elem(&fast_fdb, &src);
	if (!s || s->port_index != in)
		return -1;
	__builtin_memcpy(&dst, eth, 6);
	dst |= (__u64)vid << 48;
	d = bpf_map_lookup_elem(&fast_fdb, &dst);
	if (!d || d->port_index == in || d->port_index >= VDEV_FAST_MAX_PORTS ||
	    (s->flags & d->flags & VDEV_FAST_ISOLATED))
		return -1;
	/* The destination's own VLANs decide, not the entry alone: an entry
	 * outlives a VLAN change until vdevd's next sync. */
	to = d->port_index;
	r = bpf_map_lookup_elem(&fast_vlans, &to);
	if (!r)
		return -1;
	if (r->untagged == vid)
		out_tagged = 0;
	else if (fast_vlan_tagged(r, vid))
		out_tagged = 1;
	else
		return -1;
	*src_out = s;
	*vid_out = vid;
	*tag_out = (tci >= 0) == out_tagged ? VDEV_FAST_TAG_KEEP : out_tagged ? VDEV_FAST_TAG_PUSH : VDEV_FAST_TAG_POP;
	return (int)to;
}

/* A frame the fast path carries from or to a captured port: its copy to
 * vdevd (ctx: the skb or the XDP frame; len: its length), if the capture's
 * filter takes it: `data`..`data_end` the frame's first bytes, `vid` the
 * frame's VLAN as fast_decide() found it (what the filter matches for a
 * frame with no tag in its data: untagged, or its tag in skb->vlan_tci).
 * The kernel copies the first `kept` bytes after the header (skb: from
 * paged data too). A copy the per-CPU buffer has no room for is counted,
 * never waited for; a frame the filter refuses is neither. */
static __always_inline void fast_capture_copy(void *ctx, __u32 port_index, __u32 dir, __u64 len, const void *data,
					      const void *data_end, __u32 vid)
{
	struct vdev_capture_conf *c = bpf_map_lookup_elem(&fast_capture, &port_index);
	struct vdev_capture_hdr h;
	__u64 *missed;
	__u64 kept;

	if (!c || !(c->dirs & dir))
		return;
	if (c->filter.fields && !vdev_capture_match(&c->filter, data, data_end, vid))
		return;
	kept = len < c->snaplen ? len : c->snaplen;
	h.time_ns = bpf_ktime_get_ns();
	h.port_index = port_index;
	h.dir = dir;
	h.wire_len = (__u32)len;
	h.kept = (__u32)kept;
	if (bpf_perf_event_output(ctx, &fast_capture_events, BPF_F_CURRENT_CPU | (kept << 32), &h, sizeof(h))) {
		missed = bpf_map_lookup_elem(&fast_capture_missed, &port_index);
		if (missed)
			__sync_fetch_and_add(missed, 1);
	}
}

/* The skb program's copies of a frame from port `in` to port `out`. An
 * skb's headers may lie past its linear part (skb->data_end), so a filter
 * reads the frame's first VDEV_CAPF_BYTES into the stack (a filter's
 * deepest read, bpf_skb_load_bytes: from paged data too); only when either
 * port has a capture with one. */
static __always_inline void fast_capture_copy_skb(struct __sk_buff *skb, __u32 in, __u32 out, __u32 vid)
{
	struct vdev_capture_conf *ci = bpf_map_lookup_elem(&fast_capture, &in);
	struct vdev_capture_conf *co = bpf_map_lookup_elem(&fast_capture, &out);
	__u32 n = 0;

	if (!((ci && (ci->dirs & VDEV_CAP_RX)) || (co && (co->dirs & VDEV_CAP_TX))))
		return;
	__u8 b[VDEV_CAPF_BYTES] = {};  /* after the test: a port without a capture zeroes nothing */
	if ((ci && ci->filter.fields) || (co && co->filter.fields)) {
		n = skb->len < VDEV_CAPF_BYTES ? skb->len : VDEV_CAPF_BYTES;
		if (n < 14 || bpf_skb_load_bytes(skb, 0, b, n))
			n = 0;
	}
	fast_capture_copy(skb, in, VDEV_CAP_RX, skb->len, b, b + n, vid);
	fast_capture_copy(skb, out, VDEV_CAP_TX, skb->len, b, b + n, vid);
}

/* The source is active: its entry's last-seen time, written at most every
 * VDEV_FAST_SEEN_NS (vdevd ages and holds entries by it). */
static __always_inline void fast_seen(struct vdev_fast_entry *s)
{
	__u64 now = bpf_ktime_get_coarse_ns();

	if (now - s->seen_ns > VDEV_FAST_SEEN_NS)
		s->seen_ns = now;
}

#endif
