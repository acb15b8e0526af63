#include "guest.h"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/fd.h"
#include "base/netns.h"

namespace vdev::vm {

namespace {

// The header QEMU's virtio-net uses with VIRTIO_NET_F_MRG_RXBUF (and
// every virtio 1.0 device): struct virtio_net_hdr plus num_buffers, as in
// <linux/virtio_net.h> (which does not compile as C++: a field is named
// "class").
struct VnetHdr {
  uint8_t flags;
  uint8_t gso_type;
  uint16_t hdr_len, gso_size, csum_start, csum_offset, num_buffers;
};
static_assert(sizeof(VnetHdr) == 12);
constexpr uint8_t kNeedsCsum = 1;     // VIRTIO_NET_HDR_F_NEEDS_CSUM
constexpr uint8_t kGsoNone = 0;       // VIRTIO_NET_HDR_GSO_NONE
constexpr uint8_t kGsoEcn = 0x80;     // VIRTIO_NET_HDR_GSO_ECN
constexpr int kVnetHdrLen = sizeof(VnetHdr);
// A 64 KB GSO frame, its Ethernet header and the virtio-net header.
constexpr size_t kBufLen = 65536 + 14 + kVnetHdrLen;

[[noreturn]] void die(const std::string& what, int err = errno) {
  std::fprintf(stderr, "vdev-vm: %s: %s\n", what.c_str(), std::strerror(err));
  std::exit(1);
}

struct Direction {
  uint64_t frames = 0, bytes = 0, gso = 0, partial_csum = 0, write_errors = 0;

  void add(const uint8_t* p, size_t n) {
    VnetHdr h;
    std::memcpy(&h, p, sizeof h);
    ++frames;
    bytes += n - kVnetHdrLen;
    if ((h.gso_type & ~kGsoEcn) != kGsoNone) ++gso;
    if (h.flags & kNeedsCsum) ++partial_csum;
  }
};

void printCounts(const Direction& to, const Direction& from) {
  auto one = [](const char* name, const Direction& d) {
    std::printf("\"%s\":{\"frames\":%llu,\"bytes\":%llu,\"gso\":%llu,\"partial_csum\":%llu,\"write_errors\":%llu}",
                name, (unsigned long long)d.frames, (unsigned long long)d.bytes, (unsigned long long)d.gso,
                (unsigned long long)d.partial_csum, (unsigned long long)d.write_errors);
  };
  std::printf("{");
  one("to_guest", to);
  std::printf(",");
  one("from_guest", from);
  std::printf("}\n");
  std::fflush(stdout);
}

// Moves every frame `from` has now to `to`, header and all. A frame the
// other side refuses (EIO/EINVAL for a header it cannot take, ENOBUFS...)
// is counted and dropped, as a virtio-net device drops it.
void relay(int from, int to, Direction& d, std::vector<uint8_t>& buf) {
  for (int i = 0; i < 256; ++i) {
    const ssize_t n = ::read(from, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      die("read tap");
    }
    if (n < kVnetHdrLen) continue;
    d.add(buf.data(), size_t(n));
    if (::write(to, buf.data(), size_t(n)) != n) ++d.write_errors;
  }
}

}  // namespace

int openVnetTap(const std::string& name, bool multiQueue) {
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) die("open /dev/net/tun");
  struct ifreq ifr {};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  if (multiQueue) ifr.ifr_flags |= IFF_MULTI_QUEUE;
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd, TUNSETIFF, &ifr) < 0) die("TUNSETIFF " + name);
  int len = kVnetHdrLen;
  if (::ioctl(fd, TUNSETVNETHDRSZ, &len) < 0) die("TUNSETVNETHDRSZ " + name);
  // What QEMU sets for a guest that negotiated csum, guest_tso4/6.
  if (::ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) < 0) die("TUNSETOFFLOAD " + name);
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl O_NONBLOCK");
  return fd;
}

int runGuest(int hostTap, const std::string& netns, const std::string& ifname) {
  const std::string path = netns.find('/') == std::string::npos ? "/run/netns/" + netns : netns;
  FileDesc ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns.valid()) die("open netns " + path);
  auto guest = runInNetns(ns.get(), "netns " + netns, [&]() -> Result<int> { return openVnetTap(ifname, false); });
  if (!guest) die(guest.error().what, guest.error().err);
  const int g = guest.value();

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) < 0) die("sigprocmask");
  FileDesc sfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sfd.valid()) die("signalfd");
  std::printf("vdev-vm: ready\n");
  std::fflush(stdout);

  Direction toGuest, fromGuest;
  std::vector<uint8_t> buf(kBufLen);
  pollfd p[3] = {{sfd.get(), POLLIN, 0}, {hostTap, POLLIN, 0}, {g, POLLIN, 0}};
  for (;;) {
    if (::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (p[0].revents) break;
    if (p[1].revents & POLLIN) relay(hostTap, g, toGuest, buf);
    if (p[2].revents & POLLIN) relay(g, hostTap, fromGuest, buf);
  }
  printCounts(toGuest, fromGuest);
  ::close(g);
  return 0;
}

}  // namespace vdev::vm
