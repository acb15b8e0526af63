// The ports' own programs (vdev/datapath/bpf: vdev_xdp and vdev_tc_port) on
// hostile frames, run by the kernel through BPF_PROG_RUN
// (bpf_prog_test_run_opts): the real objects as vdevd builds them, one
// port's maps set up by hand (its row keyed by the loopback device, which
// is where a test run's frame arrives), no namespace and no device. Each
// frame's outcome is read from the verdict and the program's per-reason
// counters, and exactly one counter must move by exactly one: a frame is
// dropped by one reason, or passed on towards vdevd (at XDP: no AF_XDP
// socket is bound here, so counted as no_socket; at tc: redirected to the
// punt device, here the loopback).
//
// What is checked: the RA and DHCP guard through VLAN tags (none, one
// priority tag, 802.1ad + 802.1Q, three: more than the programs read, so
// dropped), behind IPv6 extension headers and in fragments, ICMPv6
// Redirects, DHCP server messages by source port, destination port and
// BOOTREPLY; anti-spoofing by address with link-local sources and NA
// targets (only the port's own); every truncation of an RA, a DHCP offer
// and an NA (dropped once the header that names it is there; before that
// passed: the receiver's kernel drops a cut header too); frames longer
// than a page (XDP fragments) or than vdevd's path (tc).
// Needs root (BPF_PROG_RUN of these program types); skipped without.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vdev_limits.h"
#include "vdev_tc.skel.h"
#include "vdev_xdp.skel.h"
#include "vdev_xdp_shared.h"

namespace {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;
using Ip6 = std::array<uint8_t, 16>;

constexpr Mac kGuest = {0x02, 0x00, 0x5e, 0x10, 0x00, 0x01};
constexpr Mac kAllNodes = {0x33, 0x33, 0, 0, 0, 1};
constexpr Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
// kGuest's own link-local address (modified EUI-64).
constexpr Ip6 kGuestLl = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x5e, 0xff, 0xfe, 0x10, 0x00, 0x01};
constexpr Ip6 kRouterLl = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr Ip6 kConfiguredLl = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd};
constexpr Ip6 kMine = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
constexpr Ip6 kOther = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
constexpr Ip6 kUnspecified = {};
constexpr Ip6 kAllNodesIp = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr uint32_t kMine4 = 0x020012c6;  // 198.18.0.2, network order as the program compares it

Bytes eth(const Mac& dst, const Mac& src, uint16_t type) {
  Bytes f(dst.begin(), dst.end());
  f.insert(f.end(), src.begin(), src.end());
  f.push_back(uint8_t(type >> 8));
  f.push_back(uint8_t(type));
  return f;
}
// A VLAN tag in front of the frame's tags (the outermost after this).
Bytes tagged(Bytes f, uint16_t tpid, uint16_t vid) {
  const uint8_t t[] = {uint8_t(tpid >> 8), uint8_t(tpid), uint8_t(vid >> 8), uint8_t(vid)};
  f.insert(f.begin() + 12, std::begin(t), std::end(t));
  return f;
}
Bytes ipv6(const Mac& dst, const Ip6& from, const Ip6& to, uint8_t next, const Bytes& payload) {
  Bytes f = eth(dst, kGuest, 0x86dd);
  const uint8_t head[] = {0x60, 0, 0, 0, uint8_t(payload.size() >> 8), uint8_t(payload.size()), next, 255};
  f.insert(f.end(), std::begin(head), std::end(head));
  f.insert(f.end(), from.begin(), from.end());
  f.insert(f.end(), to.begin(), to.end());
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}
// payload behind an 8-byte extension header of type ext (a fragment
// header at fragOffset when ext is 44; else PadN).
Bytes behind(uint8_t ext, uint8_t next, Bytes payload, uint16_t fragOffset = 0) {
  Bytes h = {next, 0, 1, 4, 0, 0, 0, 0};
  if (ext == 44) h = {next, 0, uint8_t(fragOffset >> 5), uint8_t(fragOffset << 3), 0, 0, 0, 1};
  payload.insert(payload.begin(), h.begin(), h.end());
  return payload;
}
const Bytes kRa = {134, 0, 0, 0, 64, 0, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0};
const Bytes kRedirect = {137, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                         0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
const Bytes kRs = {133, 0, 0, 0, 0, 0, 0, 0};
const Bytes kEcho = {128, 0, 0, 0, 0, 1, 0, 1};
Bytes ra() { return ipv6(kAllNodes, kRouterLl, kAllNodesIp, 58, kRa); }
// A Neighbour Advertisement (override) with kGuest as the target's MAC.
Bytes naBody(const Ip6& target) {
  Bytes p = {136, 0, 0, 0, 0x20, 0, 0, 0};
  p.insert(p.end(), target.begin(), target.end());
  const uint8_t tlla[] = {2, 1, kGuest[0], kGuest[1], kGuest[2], kGuest[3], kGuest[4], kGuest[5]};
  p.insert(p.end(), std::begin(tlla), std::end(tlla));
  return p;
}
Bytes na(const Ip6& from, const Ip6& target) { return ipv6(kAllNodes, from, kAllNodesIp, 58, naBody(target)); }
Bytes ns(const Ip6& from, const Ip6& target) {
  Bytes p = {135, 0, 0, 0, 0, 0, 0, 0};
  p.insert(p.end(), target.begin(), target.end());
  return ipv6({0x33, 0x33, 0xff, 0, 0, 2}, from, {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2}, 58, p);
}
Bytes udp6(uint16_t sport, uint16_t dport) {
  const Bytes p = {uint8_t(sport >> 8), uint8_t(sport), uint8_t(dport >> 8), uint8_t(dport), 0, 12, 0, 0,
                   2, 0, 0, 1};
  return ipv6({0x33, 0x33, 0, 1, 0, 2}, kGuestLl, {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2}, 17, p);
}
// IPv4 UDP (a BOOTP/DHCP body of 240 bytes with op), ihl words of header,
// fragment offset fragOff (8-byte units).
Bytes udp4(uint16_t sport, uint16_t dport, uint8_t op, uint32_t src = kMine4, uint8_t ihl = 5,
           uint16_t fragOff = 0) {
  Bytes f = eth(kBroadcast, kGuest, 0x0800);
  Bytes body(8 + 240, 0);
  body[0] = uint8_t(sport >> 8), body[1] = uint8_t(sport), body[2] = uint8_t(dport >> 8), body[3] = uint8_t(dport);
  body[4] = uint8_t(body.size() >> 8), body[5] = uint8_t(body.size());
  body[8] = op;
  Bytes ip(size_t(ihl) * 4, 1);  // options: NOPs
  const size_t total = ip.size() + body.size();
  const uint8_t head[] = {uint8_t(0x40 | ihl), 0, uint8_t(total >> 8), uint8_t(total), 0, 1,
                          uint8_t(fragOff >> 8), uint8_t(fragOff), 64, 17, 0, 0};
  std::copy(std::begin(head), std::end(head), ip.begin());
  std::memcpy(ip.data() + 12, &src, 4);
  std::memset(ip.data() + 16, 0xff, 4);
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), body.begin(), body.end());
  return f;
}
Bytes padded(Bytes f, size_t len) {
  f.resize(len, 0);
  return f;
}

const char* const kReasons[VDEV_LIM_NDROPS] = {"storm_bcast", "storm_mcast", "police",    "spoof_mac",
                                               "spoof_ip",    "ra_guard",    "dhcp_guard"};

struct vdev_port_limits guardOnly(uint32_t guard) {
  struct vdev_port_limits l = {};
  l.guard = guard;
  return l;
}
// allowed-mac kGuest (or none), allowed-ip 198.18.0.2, 2001:db8::2 and
// fe80::abcd.
struct vdev_port_limits locked(bool withMac) {
  struct vdev_port_limits l = {};
  if (withMac) std::memcpy(&l.src_mac, kGuest.data(), 6);
  l.n_ipv4 = 1;
  l.ipv4[0] = kMine4;
  l.n_ipv6 = 2;
  std::memcpy(l.ipv6[0], kMine.data(), 16);
  std::memcpy(l.ipv6[1], kConfiguredLl.data(), 16);
  return l;
}

// Sum of a per-CPU u64 counter.
uint64_t percpu(int fd, uint32_t key) {
  std::vector<uint64_t> v(size_t(libbpf_num_possible_cpus()), 0);
  if (bpf_map_lookup_elem(fd, &key, v.data())) return 0;
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

// One program with one port: frames in, outcomes out.
class Hook {
 public:
  virtual ~Hook() = default;
  virtual void setLimits(const struct vdev_port_limits& l) = 0;
  // "pass", or the counter that took the drop ("ra_guard", ...), or
  // "refused": the kernel ran nothing (a tc test run refuses an untagged
  // IPv4 or IPv6 frame shorter than its IP header); a frame
  // that moved no counter or more than one, or a verdict that disagrees
  // with its counter, is a failure.
  std::string run(const Bytes& f) {
    const std::vector<uint64_t> before = counters();
    int retval = 0;
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f.data(), .data_size_in = uint32_t(f.size()), .repeat = 1);
    const int err = bpf_prog_test_run_opts(progFd(), &o);
    if (err && errno == EINVAL) return "refused";  // the test run builds no skb with a cut IP header
    EXPECT_EQ(err, 0) << "test run of a " << f.size() << "-byte frame: " << strerror(errno);
    if (err) return "error";
    retval = int(o.retval);
    const std::vector<uint64_t> after = counters();
    std::string which;
    for (size_t i = 0; i < after.size(); ++i) {
      if (after[i] == before[i]) continue;
      if (after[i] != before[i] + 1 || !which.empty()) {
        ADD_FAILURE() << "counters moved by more than one frame (" << name(i) << ")";
        return "inexact";
      }
      which = name(i);
    }
    if (which.empty()) {
      ADD_FAILURE() << "a " << f.size() << "-byte frame moved no counter (verdict " << retval << ")";
      return "uncounted";
    }
    EXPECT_EQ(retval, which == "pass" ? passVerdict() : dropVerdict()) << which;
    return which;
  }

 protected:
  virtual int progFd() const = 0;
  virtual std::vector<uint64_t> counters() const = 0;
  virtual std::string name(size_t counter) const = 0;
  virtual int passVerdict() const = 0;
  virtual int dropVerdict() const = 0;
};

class XdpHook : public Hook {
 public:
  // errno on failure.
  int load() {
    skel_.reset(vdev_xdp__open_and_load());
    if (!skel_) return errno;
    struct vdev_xdp_port p = {};
    p.nqueues = 1;  // its key 0 in xsks_map: no socket there
    p.own_mac = VDEV_XDP_NO_MAC;
    p.vid = 1;
    const uint32_t lo = if_nametoindex("lo");
    return bpf_map_update_elem(bpf_map__fd(skel_->maps.xdp_ports), &lo, &p, BPF_ANY) ? errno : 0;
  }
  void setLimits(const struct vdev_port_limits& l) override {
    const uint32_t slot = 0;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.xdp_limits), &slot, &l, BPF_ANY), 0);
  }

 protected:
  int progFd() const override { return bpf_program__fd(skel_->progs.vdev_xdp); }
  // The slot's limit drops, then its program counters.
  std::vector<uint64_t> counters() const override {
    std::vector<uint64_t> c;
    for (uint32_t i = 0; i < VDEV_LIM_NDROPS; ++i) c.push_back(percpu(bpf_map__fd(skel_->maps.xdp_limit_drops), i));
    for (uint32_t i = 0; i < VDEV_XDP_NCOUNTERS; ++i) c.push_back(percpu(bpf_map__fd(skel_->maps.vdev_xdp_stats), i));
    return c;
  }
  std::string name(size_t i) const override {
    static const char* const kProg[VDEV_XDP_NCOUNTERS] = {"host", "redirect", "pass", "fast"};
    return i < VDEV_LIM_NDROPS ? kReasons[i] : kProg[i - VDEV_LIM_NDROPS];  // no_socket: on to vdevd
  }
  int passVerdict() const override { return XDP_DROP; }  // no socket to redirect into here
  int dropVerdict() const override { return XDP_DROP; }

 private:
  struct Deleter {
    void operator()(struct vdev_xdp* s) const { vdev_xdp__destroy(s); }
  };
  std::unique_ptr<struct vdev_xdp, Deleter> skel_;
};

class TcHook : public Hook {
 public:
  int load() {
    skel_.reset(vdev_tc__open_and_load());
    if (!skel_) return errno;
    const uint32_t lo = if_nametoindex("lo"), index = 0;
    struct vdev_tc_port p = {};
    p.ifindex = lo;
    p.mtu = 1500;
    p.vid = 1;
    if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_index), &lo, &index, BPF_ANY) ||
        bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_ports), &index, &p, BPF_ANY))
      return errno;
    skel_->bss->punt_ifindex = lo;   // the punt device: passed frames are redirected there
    skel_->bss->punt_max_frame = 1514;
    return 0;
  }
  void setLimits(const struct vdev_port_limits& l) override {
    const uint32_t index = 0;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_limits), &index, &l, BPF_ANY), 0);
  }

 protected:
  int progFd() const override { return bpf_program__fd(skel_->progs.vdev_tc_port); }
  // The port's limit drops, its program counters, its oversize drops.
  std::vector<uint64_t> counters() const override {
    std::vector<uint64_t> c;
    for (uint32_t i = 0; i < VDEV_LIM_NDROPS; ++i) c.push_back(percpu(bpf_map__fd(skel_->maps.tc_limit_drops), i));
    for (uint32_t i = 0; i < VDEV_XDP_NCOUNTERS; ++i) c.push_back(percpu(bpf_map__fd(skel_->maps.tc_stats), i));
    c.push_back(percpu(bpf_map__fd(skel_->maps.fast_stats), VDEV_FAST_OVERSIZE));
    return c;
  }
  std::string name(size_t i) const override {
    static const char* const kProg[VDEV_XDP_NCOUNTERS] = {"host", "pass", "no_socket", "fast"};
    if (i < VDEV_LIM_NDROPS) return kReasons[i];
    if (i < size_t(VDEV_LIM_NDROPS) + VDEV_XDP_NCOUNTERS) return kProg[i - VDEV_LIM_NDROPS];
    return "oversize";
  }
  int passVerdict() const override { return TC_ACT_REDIRECT; }
  int dropVerdict() const override { return TC_ACT_SHOT; }

 private:
  struct Deleter {
    void operator()(struct vdev_tc* s) const { vdev_tc__destroy(s); }
  };
  std::unique_ptr<struct vdev_tc, Deleter> skel_;
};

class BpfGuard : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "BPF_PROG_RUN of XDP and tc programs needs root";
    int err = 0;
    if (GetParam() == "xdp") {
      auto h = std::make_unique<XdpHook>();
      err = h->load();
      hook_ = std::move(h);
    } else {
      auto h = std::make_unique<TcHook>();
      err = h->load();
      hook_ = std::move(h);
    }
    ASSERT_EQ(err, 0) << "load the " << GetParam() << " program: " << strerror(err);
  }
  std::string run(const Bytes& f) { return hook_->run(f); }
  std::unique_ptr<Hook> hook_;
};

// The tag stacks a guest can put in front of a frame, within the bound.
std::vector<std::pair<std::string, std::function<Bytes(Bytes)>>> tagStacks() {
  return {{"untagged", [](Bytes f) { return f; }},
          {"one priority tag (VID 0)", [](Bytes f) { return tagged(std::move(f), 0x8100, 0); }},
          {"802.1Q VID 100", [](Bytes f) { return tagged(std::move(f), 0x8100, 100); }},
          {"802.1ad + 802.1Q",
           [](Bytes f) { return tagged(tagged(std::move(f), 0x8100, 0), 0x88a8, 7); }},
          {"two priority tags", [](Bytes f) { return tagged(tagged(std::move(f), 0x8100, 0), 0x8100, 0); }}};
}
Bytes threeTags(Bytes f) { return tagged(tagged(tagged(std::move(f), 0x8100, 0), 0x8100, 0), 0x88a8, 0); }

TEST_P(BpfGuard, RaGuardSeesThroughTagsAndExtensionHeaders) {
  hook_->setLimits(guardOnly(VDEV_GUARD_RA | VDEV_GUARD_DHCP));
  for (const auto& [what, tag] : tagStacks()) {
    SCOPED_TRACE(what);
    EXPECT_EQ(run(tag(ra())), "ra_guard");
    EXPECT_EQ(run(tag(ipv6(kAllNodes, kRouterLl, kGuestLl, 58, kRedirect))), "ra_guard") << "a Redirect";
    EXPECT_EQ(run(tag(ipv6(kAllNodes, kRouterLl, kAllNodesIp, 0, behind(0, 58, kRa)))), "ra_guard")
        << "behind hop-by-hop";
    EXPECT_EQ(run(tag(ipv6(kAllNodes, kRouterLl, kAllNodesIp, 44, behind(44, 58, kRa)))), "ra_guard")
        << "a first fragment";
    EXPECT_EQ(run(tag(ipv6(kAllNodes, kRouterLl, kAllNodesIp, 44, behind(44, 58, kRa, 2)))), "pass")
        << "a later fragment: no ICMPv6 header in it";
    EXPECT_EQ(run(tag(ipv6(kAllNodes, kGuestLl, kAllNodesIp, 58, kRs))), "pass") << "a Router Solicitation";
    EXPECT_EQ(run(tag(ipv6(kAllNodes, kGuestLl, kAllNodesIp, 58, kEcho))), "pass") << "an echo request";
  }
  // More tags than the programs read: whatever is behind them.
  EXPECT_EQ(run(threeTags(ra())), "ra_guard");
  EXPECT_EQ(run(threeTags(ipv6(kAllNodes, kGuestLl, kAllNodesIp, 58, kEcho))), "ra_guard");
  EXPECT_EQ(run(threeTags(udp4(68, 67, 1))), "ra_guard");
  // Unguarded, the same RA behind two tags passes.
  hook_->setLimits(guardOnly(0));
  EXPECT_EQ(run(tagged(tagged(ra(), 0x8100, 0), 0x88a8, 0)), "pass");
}

TEST_P(BpfGuard, DhcpGuardMatchesServersBySourceDestinationAndBootReply) {
  hook_->setLimits(guardOnly(VDEV_GUARD_DHCP));
  for (const auto& [what, tag] : tagStacks()) {
    SCOPED_TRACE(what);
    EXPECT_EQ(run(tag(udp4(67, 68, 2))), "dhcp_guard") << "an OFFER";
    EXPECT_EQ(run(tag(udp4(67, 68, 2, kMine4, 6))), "dhcp_guard") << "behind IPv4 options";
    EXPECT_EQ(run(tag(udp4(67, 68, 2, kMine4, 15))), "dhcp_guard") << "behind 40 bytes of IPv4 options";
    EXPECT_EQ(run(tag(udp4(4000, 68, 2))), "dhcp_guard") << "to 68 from elsewhere";
    EXPECT_EQ(run(tag(udp4(68, 67, 2))), "dhcp_guard") << "a BOOTREPLY to a server's port";
    EXPECT_EQ(run(tag(udp4(67, 68, 2, kMine4, 5, 0x2000))), "dhcp_guard") << "a first fragment (MF)";
    EXPECT_EQ(run(tag(udp4(67, 68, 2, kMine4, 5, 0x0010))), "pass") << "a later fragment: no UDP header";
    EXPECT_EQ(run(tag(udp4(68, 67, 1))), "pass") << "a DISCOVER";
    EXPECT_EQ(run(tag(udp4(4000, 4001, 2))), "pass") << "other UDP";
    EXPECT_EQ(run(tag(udp6(547, 546))), "dhcp_guard") << "a DHCPv6 ADVERTISE";
    EXPECT_EQ(run(tag(udp6(4000, 546))), "dhcp_guard") << "to 546 from elsewhere";
    EXPECT_EQ(run(tag(udp6(546, 547))), "pass") << "a SOLICIT";
    EXPECT_EQ(run(tag(ra())), "pass") << "no RA guard on this port";
  }
  EXPECT_EQ(run(threeTags(udp4(67, 68, 2))), "dhcp_guard") << "the only guard's reason";
}

TEST_P(BpfGuard, SpoofCheckAllowsOnlyTheOwnLinkLocalAddresses) {
  for (const bool withMac : {true, false}) {
    SCOPED_TRACE(withMac ? "allowed-mac set" : "no allowed-mac: the frame's source MAC");
    hook_->setLimits(locked(withMac));
    EXPECT_EQ(run(na(kGuestLl, kGuestLl)), "pass") << "its own link-local address";
    EXPECT_EQ(run(na(kGuestLl, kMine)), "pass");
    EXPECT_EQ(run(na(kConfiguredLl, kConfiguredLl)), "pass") << "a link-local address in allowed-ip";
    EXPECT_EQ(run(ns(kUnspecified, kMine)), "pass") << "duplicate address detection";
    EXPECT_EQ(run(ns(kGuestLl, kRouterLl)), "pass") << "resolving the router";
    EXPECT_EQ(run(ipv6(kAllNodes, kGuestLl, kAllNodesIp, 58, kRs)), "pass");
    EXPECT_EQ(run(udp4(68, 67, 1, 0)), "pass") << "DHCP from 0.0.0.0";
    EXPECT_EQ(run(na(kGuestLl, kRouterLl)), "spoof_ip") << "an NA for the router's fe80::1";
    EXPECT_EQ(run(na(kRouterLl, kRouterLl)), "spoof_ip") << "the same from fe80::1";
    EXPECT_EQ(run(ipv6(kAllNodes, kRouterLl, kAllNodesIp, 58, kEcho)), "spoof_ip") << "anything from fe80::1";
    EXPECT_EQ(run(na(kGuestLl, kOther)), "spoof_ip");
    EXPECT_EQ(run(ipv6(kAllNodes, kGuestLl, kAllNodesIp, 0, behind(0, 58, naBody(kRouterLl)))), "spoof_ip")
        << "an NA for fe80::1 behind hop-by-hop";
    EXPECT_EQ(run(tagged(na(kGuestLl, kGuestLl), 0x8100, 0)), "spoof_ip") << "a tag on a locked port";
    EXPECT_EQ(run(udp4(68, 67, 1, 0x090012c6)), "spoof_ip") << "IPv4 from another address";
  }
  // A source MAC other than the allowed one is spoof_mac first; without
  // one, the link-local address follows the frame's MAC.
  Bytes other = na(kGuestLl, kGuestLl);
  other[11] = 0x02;
  hook_->setLimits(locked(true));
  EXPECT_EQ(run(other), "spoof_mac");
  hook_->setLimits(locked(false));
  EXPECT_EQ(run(other), "spoof_ip") << "kGuest's link-local address from another MAC";
}

// Every truncation of an RA, a DHCP offer (guarded port) and an NA for
// fe80::1 (locked port), untagged and behind one tag: dropped by the
// reason once the bytes that name the frame are there, passed before
// (the receiver drops a frame whose header is cut), and always counted.
TEST_P(BpfGuard, TruncatedFramesAreDroppedOrPassedNeverUncounted) {
  for (const uint16_t tags : {0, 1, 2}) {
    SCOPED_TRACE(std::to_string(tags) + " tags");
    const auto tag = [&](Bytes f) {
      for (uint16_t i = 0; i < tags; ++i) f = tagged(std::move(f), 0x8100, 0);
      return f;
    };
    const size_t shift = 4u * tags;
    hook_->setLimits(guardOnly(VDEV_GUARD_RA | VDEV_GUARD_DHCP));
    const Bytes r = tag(padded(ra(), 100)), d = tag(udp4(67, 68, 2));
    // A tc test run builds no skb whose IP header is cut (the kernel
    // checks the untagged ones): those lengths are XDP's alone.
    const auto cut = [&](size_t len, size_t ipHeader, const char* want) {
      return !tags && GetParam() == "tc" && len < 14 + ipHeader ? "refused" : want;
    };
    for (size_t len = 14; len <= r.size(); ++len)
      EXPECT_EQ(run(Bytes(r.begin(), r.begin() + long(len))),
                cut(len, 40, len >= shift + 14 + 40 + 2 ? "ra_guard" : "pass"))
          << "an RA cut to " << len;
    for (size_t len = 14; len <= 120; ++len)
      EXPECT_EQ(run(Bytes(d.begin(), d.begin() + long(len))),
                cut(len, 20, len >= shift + 14 + 20 + 8 ? "dhcp_guard" : "pass"))
          << "a DHCP offer cut to " << len;
    if (tags) continue;  // a locked port drops every tag
    hook_->setLimits(locked(true));
    const Bytes n = na(kGuestLl, kRouterLl);
    for (size_t len = 14; len <= n.size(); ++len) {
      const char* want = len < 14 + 40 ? "spoof_ip" : len < 14 + 40 + 24 ? "pass" : "spoof_ip";
      EXPECT_EQ(run(Bytes(n.begin(), n.begin() + long(len))), cut(len, 40, want)) << "an NA cut to " << len;
    }
  }
}

// Longer than a page (an XDP frame in fragments) or than vdevd's own path
// (tc: its oversize drop, after the guard).
TEST_P(BpfGuard, LongFrames) {
  hook_->setLimits(guardOnly(VDEV_GUARD_RA | VDEV_GUARD_DHCP));
  const size_t len = GetParam() == "xdp" ? 9000 : 3000;
  EXPECT_EQ(run(padded(tagged(ra(), 0x8100, 0), len)), "ra_guard");
  EXPECT_EQ(run(padded(tagged(udp4(67, 68, 2), 0x8100, 0), len)), "dhcp_guard");
  EXPECT_EQ(run(padded(ipv6(kAllNodes, kGuestLl, kAllNodesIp, 58, kEcho), len)),
            GetParam() == "xdp" ? "pass" : "oversize");
}

INSTANTIATE_TEST_SUITE_P(Hooks, BpfGuard, ::testing::Values("xdp", "tc"),
                         [](const auto& info) { return info.param; });

}  // namespace
