/* Shared between the XDP program (vdev_xdp.bpf.c) and vdevd. Plain C. */
#ifndef VDEV_XDP_SHARED_H
#define VDEV_XDP_SHARED_H

#define VDEV_XDP_MAX_QUEUES 64
#define VDEV_XDP_MAX_HOST_MACS 64

/* Per-CPU counters of the XDP program, index into vdev_xdp_stats. */
enum vdev_xdp_counter {
	VDEV_XDP_PASS = 0,     /* frames for the host (XDP_PASS) */
	VDEV_XDP_REDIRECT = 1, /* frames redirected into an AF_XDP socket */
	VDEV_XDP_NO_SOCKET = 2,/* dropped: no socket bound to the RX queue */
	VDEV_XDP_NCOUNTERS = 3,
};

/* Key of the host_macs map: a MAC address in the low 6 bytes of a u64
 * (byte 0 of the address in the lowest byte), upper 2 bytes zero. */
#endif
