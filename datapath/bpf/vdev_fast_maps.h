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

static __always_inline void fast_add(__u32 port_index, __u32 stat, __u64 n)
{
	__u32 k = port_index * VDEV_FAST_NSTATS + stat;
	__u64 *c = bpf_map_lookup_elem(&fast_stats, &k);

	if (c)
		*c += n;
}

#endif
