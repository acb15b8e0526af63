// vdev-vm: stands in for a virtual machine on a tap device.
//
// It opens the tap exactly as QEMU does for `-netdev tap,ifname=NAME,script=no,
// downscript=no` (open /dev/net/tun, TUNSETIFF with IFF_TAP | IFF_NO_PI, plus
// IFF_MULTI_QUEUE when more than one queue is asked for) and then plays the
// guest: frames the host transmits on the tap are what this process reads, and
// what it writes is what the host receives on the tap.

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>  // and not <linux/if.h>: the two clash
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/cli.h"
#include "guest.h"
#include "testkit/frame.h"

namespace {

// The test frame format (testkit/frame.h), shared with the e2e tests.
namespace tf {
using Mac = vdev::Mac;
using Kind = vdev::testkit::FrameKind;
using Spec = vdev::testkit::TestFrameSpec;
using Verdict = vdev::testkit::FrameVerdict;
using Parsed = vdev::testkit::ParsedTestFrame;
constexpr size_t kMaxSize = vdev::testkit::kTestFrameMaxSize;
constexpr auto build = &vdev::testkit::buildTestFrame;
constexpr auto parse = &vdev::testkit::parseTestFrame;
}  // namespace tf

constexpr const char* kUsage = R"(NAME
    vdev-vm - stand in for a virtual machine on a tap device

SYNOPSIS
    vdev-vm --tap NAME [--create] [--mac MAC] [--queues N] COMMAND [ARGS]
    vdev-vm --tap NAME [--create] [--mac MAC] guest --netns NS [--ifname NAME]

DESCRIPTION
    vdev-vm opens the tap device NAME the way QEMU does for
    "-netdev tap,ifname=NAME,script=no,downscript=no": it opens /dev/net/tun and
    attaches with TUNSETIFF (IFF_TAP | IFF_NO_PI, and IFF_MULTI_QUEUE when
    --queues is above 1). Frames the host sends on the tap are what vdev-vm
    reads; frames vdev-vm writes are what the host receives on the tap.

    Once the tap is open, vdev-vm prints "vdev-vm: ready" on stdout.
    It stops on SIGTERM or SIGINT and exits 0, or 1 on an error; bad usage
    exits 2.

OPTIONS
    -t, --tap NAME     the tap device (at most 15 characters)
    -c, --create       create the tap if it does not exist, turn IPv6 off on it
                       (so the host sends nothing on it by itself) and bring
                       it up. A tap created this way is not persistent: it
                       disappears when vdev-vm exits. Without --create the tap must exist (e.g.
                       "ip tuntap add mode tap name NAME [multi_queue]").
    -m, --mac MAC      with --create: the tap's host-side MAC address
    -q, --queues N     open N queues (1..16, default 1)
    -V, --version      print vdev-vm's version
    -h, --help         this text

COMMANDS
    echo
        Reflect every frame: swap destination and source MAC and send it back
        on the queue it came from. Prints counts as JSON on exit.

    sink
        Read and count frames. On SIGUSR1 and at exit, print one line of JSON:
        {"frames":N,"bytes":N,"test_frames":N,"corrupt":N,"flows":{"F":N,...}}
        "test_frames" counts frames built by vdev-vm send (or the e2e harness)
        that arrived byte for byte intact, per flow in "flows"; "corrupt"
        counts test frames that did not.

    respond --guest-mac MAC --ip A.B.C.D
        Play a guest with address A.B.C.D behind MAC (which must differ from
        the tap's own host-side MAC): answer ARP requests for the address and
        ICMP echo requests (ping) to it; count everything else. Prints counts
        as JSON on exit, with "replies".

    send --dst MAC --src MAC --count N [--size S] [--flow F] [--udp]
         [--interval USEC]
        Write N test frames of S bytes (default 60, 60..9216 without FCS)
        from --src to --dst, sequence numbers 0..N-1 in flow F (default 1),
        as ethertype 0x88B5 or, with --udp, as IPv4/UDP in 198.18.0.0/15.
        --interval waits USEC microseconds between frames. Then prints
        {"sent":N,"errors":N} and exits 0 if every write succeeded.

    guest --netns NS [--ifname NAME]
        Play a virtio-net guest with its default offloads, whose network
        stack is the kernel's in namespace NS (a name under /run/netns or a
        path). The tap is opened as QEMU opens it by default: with
        IFF_VNET_HDR, a 12-byte virtio-net header and TUNSETOFFLOAD
        checksum, TSO4 and TSO6. vdev-vm creates a second tap, NAME (default
        eth0), inside NS, opened the same way, and copies every frame with
        its header between the two, as vhost-net moves a guest's buffers:
        the namespace sends TCP with partial checksums and GSO frames up to
        64 KB and receives the same. NAME is non-persistent and goes when
        vdev-vm exits; addresses and link state inside NS are the caller's.
        Prints on exit, per direction, frames, bytes (without headers), GSO
        frames, frames with a partial checksum and failed writes:
        {"to_guest":{"frames":N,"bytes":N,"gso":N,"partial_csum":N,
        "write_errors":N},"from_guest":{...}}

EXAMPLES
    vdev-vm --tap vm0 --create --mac 02:00:00:00:00:10 sink
    vdev-vm --tap vm0 echo
    vdev-vm --tap vm0 send --dst ff:ff:ff:ff:ff:ff --src 02:00:00:00:01:01 \
            --count 1000 --size 1514
)";

[[noreturn]] void die(const char* what, int err = errno) {
  std::fprintf(stderr, "vdev-vm: %s: %s\n", what, std::strerror(err));
  std::exit(1);
}

// A number option's value, or a usage error naming the option and the range.
uint64_t number(std::string_view v, const char* what, uint64_t lo, uint64_t hi) {
  return vdev::cli::u64(v, lo, hi, std::string("invalid ") + what + " '" + std::string(v) + "' (" +
                                       std::to_string(lo) + ".." + std::to_string(hi) + ")");
}

tf::Mac macArg(std::string_view v, const char* what) {
  return vdev::cli::mac(v, std::string("invalid ") + what + " MAC '" + std::string(v) + "'");
}

struct Options {
  std::string tap;
  bool create = false;
  bool haveMac = false;
  tf::Mac mac{};
  unsigned queues = 1;
  std::string command;
  // send
  bool haveDst = false, haveSrc = false, haveCount = false;
  tf::Spec spec;
  uint64_t count = 0;
  uint64_t intervalUs = 0;
  // respond
  bool haveGuestMac = false, haveIp = false;
  tf::Mac guestMac{};
  uint8_t ip[4] = {};
  // guest
  std::string netns;
  std::string ifname = "eth0";
};

// Opens one queue of the tap. Same flags as QEMU's tap_open() on Linux
// (net/tap-linux.c), minus IFF_VNET_HDR: we exchange plain Ethernet frames
// (guest: with it, vdev::vm::openVnetTap).
int openQueue(const Options& o) {
  if (o.command == "guest") return vdev::vm::openVnetTap(o.tap, o.queues > 1);
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) die("open /dev/net/tun");
  struct ifreq ifr {};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (o.queues > 1) ifr.ifr_flags |= IFF_MULTI_QUEUE;
  std::strncpy(ifr.ifr_name, o.tap.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd, TUNSETIFF, &ifr) < 0) die(("TUNSETIFF " + o.tap).c_str());
  // Non-blocking like QEMU: one poll loop serves every queue and the signals.
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl O_NONBLOCK");
  return fd;
}

// A switch port needs no IPv6 address of its own; without this the host
// would send router solicitations and MLD reports on the tap by itself.
void disableIpv6(const Options& o) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + o.tap + "/disable_ipv6";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // kernel without IPv6
  if (::write(fd, "1\n", 2) != 2) die(("write " + path).c_str());
  ::close(fd);
}

void setUpAndMac(const Options& o) {
  disableIpv6(o);
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  struct ifreq ifr {};
  std::strncpy(ifr.ifr_name, o.tap.c_str(), IFNAMSIZ - 1);
  if (o.haveMac) {
    ifr.ifr_hwaddr.sa_family = 1;  // ARPHRD_ETHER
    std::memcpy(ifr.ifr_hwaddr.sa_data, o.mac.data(), 6);
    if (::ioctl(s, SIOCSIFHWADDR, &ifr) < 0) die("SIOCSIFHWADDR");
  }
  if (::ioctl(s, SIOCGIFFLAGS, &ifr) < 0) die("SIOCGIFFLAGS");
  ifr.ifr_flags |= IFF_UP;
  if (::ioctl(s, SIOCSIFFLAGS, &ifr) < 0) die("SIOCSIFFLAGS");
  ::close(s);
}

struct Counts {
  uint64_t frames = 0, bytes = 0, testFrames = 0, corrupt = 0, writeErrors = 0, replies = 0;
  std::map<uint32_t, uint64_t> flows;

  void add(const uint8_t* p, size_t n) {
    ++frames;
    bytes += n;
    const tf::Parsed r = tf::parse({p, n});
    if (r.verdict == tf::Verdict::kOk) {
      ++testFrames;
      ++flows[r.spec.flow];
    } else if (r.verdict == tf::Verdict::kCorrupt) {
      ++corrupt;
    }
  }

  void print(bool withFlows) const {
    std::printf("{\"frames\":%llu,\"bytes\":%llu", (unsigned long long)frames,
                (unsigned long long)bytes);
    if (withFlows) {
      std::printf(",\"test_frames\":%llu,\"corrupt\":%llu,\"flows\":{",
                  (unsigned long long)testFrames, (unsigned long long)corrupt);
      const char* sep = "";
      for (const auto& [flow, n] : flows) {
        std::printf("%s\"%u\":%llu", sep, flow, (unsigned long long)n);
        sep = ",";
      }
      std::printf("}");
    } else {
      std::printf(",\"write_errors\":%llu,\"replies\":%llu", (unsigned long long)writeErrors,
                  (unsigned long long)replies);
    }
    std::printf("}\n");
    std::fflush(stdout);
  }
};

int signalFd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) < 0) die("sigprocmask");
  const int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) die("signalfd");
  return fd;
}

// Returns true when the loop should stop.
bool handleSignals(int sfd, const Counts& counts, bool withFlows) {
  struct signalfd_siginfo si;
  bool stop = false;
  while (::read(sfd, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGUSR1) counts.print(withFlows);
    else stop = true;
  }
  return stop;
}

int runReceiver(const Options& o, const std::vector<int>& queues, bool echo, bool respond) {
  const int sfd = signalFd();
  std::vector<pollfd> pfds;
  pfds.push_back({sfd, POLLIN, 0});
  for (int q : queues) pfds.push_back({q, POLLIN, 0});
  std::printf("vdev-vm: ready\n");
  std::fflush(stdout);

  Counts counts;
  std::vector<uint8_t> buf(65536);
  for (;;) {
    if (::poll(pfds.data(), pfds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (pfds[0].revents && handleSignals(sfd, counts, !echo && !respond)) break;
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
        std::fprintf(stderr, "vdev-vm: tap %s went away\n", o.tap.c_str());
        counts.print(!echo && !respond);
        return 1;
      }
      if (!(pfds[i].revents & POLLIN)) continue;
      // Bounded batch per queue so one busy queue cannot starve the others.
      for (int n = 0; n < 64; ++n) {
        const ssize_t len = ::read(pfds[i].fd, buf.data(), buf.size());
        if (len < 0) {
          if (errno == EAGAIN || errno == EINTR) break;
          die("read tap");
        }
        counts.add(buf.data(), size_t(len));
        if (echo && len >= 12) {
          uint8_t mac[6];
          std::memcpy(mac, buf.data(), 6);
          std::memmove(buf.data(), buf.data() + 6, 6);
          std::memcpy(buf.data() + 6, mac, 6);
          if (::write(pfds[i].fd, buf.data(), size_t(len)) != len) ++counts.writeErrors;
        }
        if (respond && vdev::testkit::makeArpOrEchoReply(o.guestMac, o.ip, buf.data(), size_t(len))) {
          if (::write(pfds[i].fd, buf.data(), size_t(len)) == len)
            ++counts.replies;
          else
            ++counts.writeErrors;
        }
      }
    }
  }
  counts.print(!echo && !respond);
  return 0;
}

int runSend(const Options& o, const std::vector<int>& queues) {
  const int sfd = signalFd();
  std::printf("vdev-vm: ready\n");
  std::fflush(stdout);
  std::vector<uint8_t> buf(tf::kMaxSize);
  uint64_t sent = 0, errors = 0;
  tf::Spec spec = o.spec;
  for (uint64_t i = 0; i < o.count; ++i) {
    struct signalfd_siginfo si;
    if (::read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo != SIGUSR1) break;
    spec.seq = uint32_t(i);
    const size_t len = tf::build(spec, buf);
    // A tap write is processed synchronously by the kernel (tun_get_user);
    // it does not return EAGAIN, so a failure is an error, counted.
    const int q = queues[i % queues.size()];
    if (::write(q, buf.data(), len) == ssize_t(len)) {
      ++sent;
    } else {
      if (errors == 0) std::fprintf(stderr, "vdev-vm: write tap: %s\n", std::strerror(errno));
      ++errors;
    }
    if (o.intervalUs) {
      struct timespec ts = {time_t(o.intervalUs / 1000000), long(o.intervalUs % 1000000) * 1000};
      ::nanosleep(&ts, nullptr);
    }
  }
  std::printf("{\"sent\":%llu,\"errors\":%llu}\n", (unsigned long long)sent,
              (unsigned long long)errors);
  std::fflush(stdout);
  return errors ? 1 : 0;
}

Options parseArgs(int argc, char** argv) {
  namespace cli = vdev::cli;
  using cli::Arg;
  Options o;
  o.spec.flow = 1;
  // Options may come before or after the command (GNU getopt permutes).
  const cli::Parser parser({"vdev-vm", kUsage, cli::Operands::kAny}, {
      {"tap", 't', Arg::kRequired, [&](std::string_view v) { o.tap = v; }},
      {"create", 'c', Arg::kNone, [&](std::string_view) { o.create = true; }},
      {"mac", 'm', Arg::kRequired, [&](std::string_view v) {
         o.mac = macArg(v, "--mac");
         o.haveMac = true;
       }},
      {"queues", 'q', Arg::kRequired, [&](std::string_view v) { o.queues = unsigned(number(v, "--queues", 1, 16)); }},
      {"dst", 0, Arg::kRequired, [&](std::string_view v) {
         o.spec.dst = macArg(v, "--dst");
         o.haveDst = true;
       }},
      {"src", 0, Arg::kRequired, [&](std::string_view v) {
         o.spec.src = macArg(v, "--src");
         o.haveSrc = true;
       }},
      {"count", 0, Arg::kRequired, [&](std::string_view v) {
         o.count = number(v, "--count", 0, UINT64_MAX);
         o.haveCount = true;
       }},
      {"size", 0, Arg::kRequired, [&](std::string_view v) { o.spec.size = number(v, "--size", 60, tf::kMaxSize); }},
      {"flow", 0, Arg::kRequired,
       [&](std::string_view v) { o.spec.flow = uint32_t(number(v, "--flow", 0, UINT32_MAX)); }},
      {"udp", 0, Arg::kNone, [&](std::string_view) { o.spec.kind = tf::Kind::kIpv4Udp; }},
      {"interval", 0, Arg::kRequired,
       [&](std::string_view v) { o.intervalUs = number(v, "--interval", 0, 10000000); }},
      {"guest-mac", 0, Arg::kRequired, [&](std::string_view v) {
         o.guestMac = macArg(v, "--guest-mac");
         o.haveGuestMac = true;
       }},
      {"netns", 0, Arg::kRequired, [&](std::string_view v) { o.netns = v; }},
      {"ifname", 0, Arg::kRequired, [&](std::string_view v) { o.ifname = v; }},
      {"ip", 0, Arg::kRequired, [&](std::string_view v) {
         const std::string s(v);
         if (::inet_pton(AF_INET, s.c_str(), o.ip) != 1) cli::fail("invalid --ip '" + s + "'");
         o.haveIp = true;
       }},
  });
  parser.parseOrExit(argc, argv, [&](const std::vector<std::string>& rest) {
    if (rest.size() != 1) cli::fail(rest.empty() ? "missing command" : "one command expected");
    o.command = rest.front();
    if (o.tap.empty()) cli::fail("--tap NAME is required");
    if (o.tap.size() >= IFNAMSIZ) cli::fail("tap name longer than 15 characters");
    if (o.haveMac && !o.create) cli::fail("--mac needs --create");
    if (o.command == "send") {
      if (!o.haveDst || !o.haveSrc || !o.haveCount) cli::fail("send needs --dst, --src and --count");
    } else if (o.command == "respond") {
      if (!o.haveGuestMac || !o.haveIp) cli::fail("respond needs --guest-mac and --ip");
      if (o.haveMac && o.mac == o.guestMac)
        cli::fail("--guest-mac must differ from the tap's own --mac (frames to that go to the host)");
    } else if (o.command == "guest") {
      if (o.netns.empty()) cli::fail("guest needs --netns NS");
      if (o.ifname.empty() || o.ifname.size() >= IFNAMSIZ) cli::fail("--ifname: 1 to 15 characters");
      if (o.queues != 1) cli::fail("guest uses one queue");
    } else if (o.command != "echo" && o.command != "sink") {
      cli::fail("unknown command '" + o.command + "'");
    }
  });
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseArgs(argc, argv);
  if (!o.create && ::if_nametoindex(o.tap.c_str()) == 0)
    die(("tap " + o.tap + " (use --create to make one)").c_str());
  std::vector<int> queues;
  for (unsigned i = 0; i < o.queues; ++i) queues.push_back(openQueue(o));
  if (o.create) setUpAndMac(o);
  if (o.command == "send") return runSend(o, queues);
  if (o.command == "guest") return vdev::vm::runGuest(queues.front(), o.netns, o.ifname);
  return runReceiver(o, queues, o.command == "echo", o.command == "respond");
}
