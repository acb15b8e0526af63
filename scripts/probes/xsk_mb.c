// xsk_mb.c - can this kernel carry frames larger than a UMEM frame through
// a copy-mode AF_XDP socket on a veth (multi-buffer, XDP_USE_SG), and at
// what cost per frame? Run by scripts/probe-xsk-multibuffer.sh, which
// makes the veth pair in a namespace of its own.
//
//   xsk_mb XSKIF TXIF SIZE FRAME SECONDS
//
// A thread floods TXIF with SIZE-byte frames (AF_PACKET, sendmmsg of 64);
// they cross the veth to XSKIF, whose frags-aware XDP program
// (xsk_mb.bpf.c) redirects them into an AF_XDP socket bound in copy mode
// with FRAME-byte UMEM frames (XDP_USE_SG when SIZE > FRAME). The main
// thread takes them off the RX ring, checks each frame's bytes across its
// buffers, and refills. Then one SIZE-byte frame goes back out of the
// socket in chained TX descriptors and is read on TXIF; then, for SECONDS,
// the socket transmits such frames as fast as copy mode takes them, and
// TXIF's XDP program drops them. One line each:
//   rx size S frame F mpps M gbit_s G descs_per_frame D sent N got K bad B cpu_us_per_frame C
//   tx descs D read_back L equal 0|1 completions C
//   txflood size S frame F mpps M gbit_s G queued Q completed K cpu_us_per_frame C
// Exit status: 0 if every frame arrived whole, the TX frame came back
// equal with a completion per buffer and the flood completed frames; 1
// otherwise; 2 for bad arguments.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

/* Newer than Debian 12's <linux/if_xdp.h>. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

enum { kFrames = 8192, kFill = 4096, kBatch = 64, kMaxSize = 16384 };

static int size, frame;
static const char *txif;
static atomic_int stop;
static unsigned long long sent;
static unsigned char pattern[kMaxSize];

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

/* Locally administered MACs, EtherType 0x88b5, a byte pattern. */
static void make_pattern(void)
{
	static const unsigned char dst[6] = {0x02, 0x76, 0x6d, 0x62, 0, 2}, src[6] = {0x02, 0x76, 0x6d, 0x62, 0, 1};

	memcpy(pattern, dst, 6);
	memcpy(pattern + 6, src, 6);
	pattern[12] = 0x88;
	pattern[13] = 0xb5;
	for (int i = 14; i < kMaxSize; i++)
		pattern[i] = (unsigned char)(i * 7);
}

static int packet_socket(const char *ifname)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof sll)) {
		fprintf(stderr, "xsk_mb: AF_PACKET socket on %s: %s\n", ifname, strerror(errno));
		exit(1);
	}
	return fd;
}

static void *flood(void *arg)
{
	struct mmsghdr m[kBatch] = {};
	struct iovec iov = {pattern, 0};
	int fd = packet_socket(txif);

	(void)arg;
	iov.iov_len = (size_t)size;
	for (int i = 0; i < kBatch; i++) {
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load(&stop)) {
		int n = sendmmsg(fd, m, kBatch, 0);

		if (n > 0)
			sent += (unsigned)n;
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: xsk_mb XSKIF TXIF SIZE FRAME SECONDS\n");
		return 2;
	}
	const char *xif = argv[1];
	txif = argv[2];
	size = atoi(argv[3]);
	frame = atoi(argv[4]);
	double secs = atof(argv[5]);
	if (size < 60 || size > kMaxSize || (frame != 2048 && frame != 4096) || secs <= 0) {
		fprintf(stderr, "xsk_mb: SIZE 60..%d, FRAME 2048 or 4096, SECONDS > 0\n", kMaxSize);
		return 2;
	}
	make_pattern();

	char obj_path[4096];
	snprintf(obj_path, sizeof obj_path, "%s.bpf.o", argv[0]);
	struct bpf_object *obj = bpf_object__open_file(obj_path, NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "xsk_mb: load %s: %s\n", obj_path, strerror(errno));
		return 1;
	}
	int prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "xsk_mb"));
	int map = bpf_object__find_map_fd_by_name(obj, "xsks");
	int ifindex = (int)if_nametoindex(xif);
	if (bpf_xdp_attach(ifindex, prog, XDP_FLAGS_DRV_MODE, NULL)) {
		fprintf(stderr, "xsk_mb: attach the xdp.frags program to %s (native): %s\n", xif, strerror(errno));
		return 1;
	}
	int rc = 1;
	size_t area_len = (size_t)kFrames * (size_t)frame;
	void *area = mmap(NULL, area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct xsk_umem *umem = NULL;
	struct xsk_socket *xsk = NULL;
	/* Zeroed: libxdp's xsk_umem__create() sets the fill ring's
	 * cached_cons but not its cached_prod, nor the completion ring's
	 * cached indices. Left to the stack, fill entries went to slots the
	 * kernel was not at (seen as frames whose last buffer held another
	 * frame's head) and the completion ring showed 64 entries for 3. */
	struct xsk_ring_prod fq = {0}, tx = {0};
	struct xsk_ring_cons cq = {0}, rx = {0};
	struct xsk_umem_config uc = {.fill_size = kFill, .comp_size = 2048, .frame_size = (__u32)frame};
	struct xsk_socket_config sc = {.rx_size = 2048, .tx_size = 2048,
				       .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
				       .bind_flags = XDP_COPY | (size > frame ? XDP_USE_SG : 0)};
	int err = area == MAP_FAILED ? -ENOMEM : xsk_umem__create(&umem, area, area_len, &fq, &cq, &uc);
	if (!err)
		err = xsk_socket__create(&xsk, xif, 0, umem, &rx, &tx, &sc);
	if (err) {
		fprintf(stderr, "xsk_mb: AF_XDP socket on %s, copy mode%s: %s\n", xif,
			size > frame ? ", XDP_USE_SG" : "", strerror(-err));
		goto out;
	}
	int xfd = xsk_socket__fd(xsk);
	__u32 zero = 0, idx = 0;
	if (bpf_map_update_elem(map, &zero, &xfd, 0)) {
		fprintf(stderr, "xsk_mb: xskmap: %s\n", strerror(errno));
		goto out;
	}
	xsk_ring_prod__reserve(&fq, kFill, &idx);
	for (__u32 i = 0; i < kFill; i++)
		*xsk_ring_prod__fill_addr(&fq, idx + i) = (__u64)i * (__u64)frame;
	xsk_ring_prod__submit(&fq, kFill);

	/* RX: the flood, every frame checked across its buffers. */
	pthread_t th;
	unsigned long long frames = 0, descs = 0, bad = 0, bytes = 0;
	unsigned at = 0;
	pthread_create(&th, NULL, flood, NULL);
	double cpu0 = cpu_seconds(), t0 = now(), end = t0 + secs;
	while (now() < end) {
		__u32 n = xsk_ring_cons__peek(&rx, kBatch, &idx), fidx;

		if (!n) {
			struct pollfd p = {xfd, POLLIN, 0};

			poll(&p, 1, 1);
			continue;
		}
		while (xsk_ring_prod__reserve(&fq, n, &fidx) != n)
			;
		for (__u32 i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&rx, idx + i);

			if (at + d->len > (unsigned)size || memcmp(xsk_umem__get_data(area, d->addr), pattern + at, d->len))
				bad++;
			at += d->len;
			bytes += d->len;
			descs++;
			if (!(d->options & XDP_PKT_CONTD)) {
				bad += at != (unsigned)size;
				frames++;
				at = 0;
			}
			*xsk_ring_prod__fill_addr(&fq, fidx + i) = xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_cons__release(&rx, n);
		xsk_ring_prod__submit(&fq, n);
	}
	double dt = now() - t0;
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	double cpu = cpu_seconds() - cpu0;
	printf("rx size %d frame %d mpps %.3f gbit_s %.2f descs_per_frame %.2f sent %llu got %llu bad %llu "
	       "cpu_us_per_frame %.2f\n",
	       size, frame, frames / dt / 1e6, bytes * 8 / dt / 1e9, frames ? (double)descs / frames : 0.0, sent, frames,
	       bad, frames ? cpu / frames * 1e6 : 0.0);

	/* TX: one frame in chained descriptors (the last UMEM frames, which
	 * the fill ring never held), read back on the other end. */
	int rfd = packet_socket(txif);
	struct timeval tv = {1, 0};
	unsigned nd = (unsigned)((size + frame - 1) / frame);
	setsockopt(rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (xsk_ring_prod__reserve(&tx, nd, &idx) != nd) {
		fprintf(stderr, "xsk_mb: TX ring\n");
		goto out;
	}
	for (unsigned i = 0; i < nd; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&tx, idx + i);
		unsigned off = i * (unsigned)frame, len = i + 1 < nd ? (unsigned)frame : (unsigned)size - off;

		d->addr = (__u64)(kFrames - 1 - i) * (__u64)frame;
		d->len = len;
		d->options = i + 1 < nd ? XDP_PKT_CONTD : 0;
		memcpy(xsk_umem__get_data(area, d->addr), pattern + off, len);
	}
	xsk_ring_prod__submit(&tx, nd);
	if (sendto(xfd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0)
		fprintf(stderr, "xsk_mb: TX kick: %s\n", strerror(errno));
	static unsigned char got[kMaxSize + 64];
	ssize_t len = -1;
	for (int tries = 0; tries < 50; tries++) {
		len = recv(rfd, got, sizeof got, 0);
		if (len < 0 || (len >= 14 && got[12] == 0x88 && got[13] == 0xb5))
			break;
	}
	int equal = len == size && !memcmp(got, pattern, (size_t)size);
	__u32 cidx = 0, ncomp = xsk_ring_cons__peek(&cq, kBatch, &cidx);
	xsk_ring_cons__release(&cq, ncomp);
	printf("tx descs %u read_back %zd equal %d completions %u\n", nd, len, equal, ncomp);
	close(rfd);
	if (!(frames > 0 && !bad && equal && ncomp == nd))
		goto out;

	/* TX flood: whole frames in chained descriptors from the UMEM frames
	 * the fill ring never held, kicked as copy mode needs, completions
	 * reaped and reused; the other end drops them in XDP. */
	int txifindex = (int)if_nametoindex(txif);
	int drop = bpf_program__fd(bpf_object__find_program_by_name(obj, "xsk_mb_drop"));
	if (bpf_xdp_attach(txifindex, drop, XDP_FLAGS_DRV_MODE, NULL)) {
		fprintf(stderr, "xsk_mb: attach the drop program to %s: %s\n", txif, strerror(errno));
		goto out;
	}
	static __u64 free_chunks[kFrames - kFill];
	unsigned nfree = 0;
	for (unsigned c = kFill; c < kFrames; c++) {
		free_chunks[nfree++] = (__u64)c * (__u64)frame;
		memcpy(xsk_umem__get_data(area, (__u64)c * (__u64)frame), pattern, (size_t)frame);
	}
	unsigned long long queued = 0, done = 0;
	cpu0 = cpu_seconds();
	t0 = now();
	end = t0 + secs;
	while (now() < end) {
		__u32 n = xsk_ring_cons__peek(&cq, 256, &cidx);

		for (__u32 i = 0; i < n; i++)
			free_chunks[nfree++] = *xsk_ring_cons__comp_addr(&cq, cidx + i);
		xsk_ring_cons__release(&cq, n);
		done += n;
		unsigned k = nfree / nd < kBatch ? nfree / nd : kBatch;
		if (k && xsk_ring_prod__reserve(&tx, k * nd, &idx) == k * nd) {
			for (unsigned f = 0; f < k; f++)
				for (unsigned i = 0; i < nd; i++) {
					struct xdp_desc *d = xsk_ring_prod__tx_desc(&tx, idx + f * nd + i);
					unsigned off = i * (unsigned)frame;

					d->addr = free_chunks[--nfree];
					d->len = i + 1 < nd ? (unsigned)frame : (unsigned)size - off;
					d->options = i + 1 < nd ? XDP_PKT_CONTD : 0;
				}
			xsk_ring_prod__submit(&tx, k * nd);
			queued += k;
		}
		sendto(xfd, NULL, 0, MSG_DONTWAIT, NULL, 0);
	}
	dt = now() - t0;
	cpu = cpu_seconds() - cpu0;
	bpf_xdp_detach(txifindex, XDP_FLAGS_DRV_MODE, NULL);
	done /= nd;
	printf("txflood size %d frame %d mpps %.3f gbit_s %.2f queued %llu completed %llu cpu_us_per_frame %.2f\n", size,
	       frame, done / dt / 1e6, done * (double)size * 8 / dt / 1e9, queued, done, done ? cpu / done * 1e6 : 0.0);
	rc = done > 0 ? 0 : 1;
out:
	if (xsk)
		xsk_socket__delete(xsk);
	if (umem)
		xsk_umem__delete(umem);
	bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	bpf_object__close(obj);
	return rc;
}
