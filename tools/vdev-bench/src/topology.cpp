// topology.cpp - see topology.h.
#include "topology.h"

#include <dirent.h>
#include <net/if.h>

#include "ethtool_stats.h"

namespace vdev::bench {

const char* scenarioName(Scenario s) {
  return s == Scenario::kVethVeth ? "veth-veth" : "veth-tap";
}

Result<std::unique_ptr<Topology>> Topology::create(Scenario sc, SinkMode sinkMode, const std::string& prefix,
                                                  int bridgeNfCall) {
  std::unique_ptr<Topology> t(new Topology());
  t->scenario_ = sc;
  t->sinkMode_ = sinkMode;
  t->bridgeNfCall_ = bridgeNfCall;
  t->prefix_ = prefix;
  t->genIf_ = prefix + "g";
  t->portA_ = prefix + "a";
  t->portB_ = prefix + "b";
  t->sinkIf_ = prefix + "s";
  t->bridge_ = prefix + "br";
  // Locally administered unicast (02:...), "vb" in the second and third byte.
  t->genMac_ = {0x02, 0x76, 0x62, 0x00, 0x00, 0x01};
  t->sinkMac_ = {0x02, 0x76, 0x62, 0x00, 0x00, 0x02};
  Status s = t->build();
  if (!s.ok()) return s;  // ~Topology removes what was built so far
  return t;
}

namespace {
Status disableIpv6(const Netns& ns) {
  // Before any device exists, so "default" applies to each one created here.
  VB_TRY(sysctlIn(ns, "net/ipv6/conf/all/disable_ipv6", "1"));
  return sysctlIn(ns, "net/ipv6/conf/default/disable_ipv6", "1");
}
}  // namespace

Status Topology::build() {
  auto mk = [&](std::optional<Netns>& slot, const std::string& name) -> Status {
    if (stopRequested()) return Status::fail(EINTR, "setup");
    auto ns = Netns::create(name);
    if (!ns) return ns.status();
    slot.emplace(std::move(ns.value()));
    return disableIpv6(*slot);
  };
  VB_TRY(mk(gen_, prefix_ + "-gen"));
  VB_TRY(mk(dut_, prefix_ + "-dut"));
  const std::string& dut = dut_->name();
  // br_netfilter (built in, or loaded by Docker & co.) sends every bridged
  // IPv4/IPv6/ARP frame through the netfilter hooks while these are 1 (its
  // default): a large part of the bridge's cost.
  if (bridgeNfCall_ >= 0) {
    for (const char* k : {"iptables", "ip6tables", "arptables"}) {
      Status s = sysctlIn(*dut_, std::string("net/bridge/bridge-nf-call-") + k, bridgeNfCall_ ? "1" : "0");
      if (!s.ok()) return Status::failText(s.err(), s.message() + " (--bridge-nf-call needs br_netfilter)");
    }
  }
  if (auto v = sysctlReadIn(*dut_, "net/bridge/bridge-nf-call-iptables")) bridgeNf_ = v.value();

  // Generator side: <P>g in gen, its peer <P>a in dut.
  VB_TRY(runCommand({"ip", "-n", dut, "link", "add", portA_, "type", "veth", "peer", "name", genIf_,
                     "netns", gen_->name()}));
  VB_TRY(runCommand({"ip", "-n", gen_->name(), "link", "set", genIf_, "address", formatMac(genMac_), "up"}));
  VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portA_, "up"}));

  if (scenario_ == Scenario::kVethVeth) {
    VB_TRY(mk(sinkNs_, prefix_ + "-sink"));
    VB_TRY(runCommand({"ip", "-n", dut, "link", "add", portB_, "type", "veth", "peer", "name", sinkIf_,
                       "netns", sinkNs_->name()}));
    VB_TRY(runCommand({"ip", "-n", sinkNs_->name(), "link", "set", sinkIf_, "address", formatMac(sinkMac_), "up"}));
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portB_, "up"}));
    auto sink = VethSink::create(*sinkNs_, sinkIf_, sinkMode_);
    if (!sink) return sink.status();
    sink_ = std::move(sink.value());
  } else {
    auto sink = TapSink::create(*dut_, portB_);
    if (!sink) return sink.status();
    sink_ = std::move(sink.value());
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portB_, "up"}));
  }
  return waitRunning();
}

// A device that was just set up is IFF_RUNNING (operstate up) only once the
// kernel's linkwatch work has run, up to a second later. vdevd attaches a
// port's socket only while it is IFF_UP and IFF_RUNNING (and checks that
// periodically), so without this wait the first vdevd run of an invocation
// dropped everything for ~1 s after "vdevd: ready" (no socket on port A).
Status Topology::waitRunning() {
  struct Dev {
    const Netns* ns;
    std::string name;
  };
  std::vector<Dev> devs{{&*gen_, genIf_}, {&*dut_, portA_}, {&*dut_, portB_}};
  if (scenario_ == Scenario::kVethVeth) devs.push_back({&*sinkNs_, sinkIf_});
  double deadline = monotonicSeconds() + 5;
  for (const Dev& d : devs) {
    auto ls = LinkStats::open(*d.ns, d.name);
    if (!ls) return ls.status();
    for (;;) {
      auto c = ls->read();
      if (!c) return c.status();
      if ((c->flags & IFF_UP) && (c->flags & IFF_RUNNING)) break;
      if (monotonicSeconds() > deadline) {
        logWarn("%s is not running (flags 0x%x) 5 s after set-up; going on", d.name.c_str(), c->flags);
        break;
      }
      if (!sleepUnlessStopped(0.02)) return Status::fail(EINTR, "setup");
    }
  }
  logInfo("all links running");
  return {};
}

Topology::~Topology() {
  sink_.reset();  // closes the tap, detaches the sink program
  sinkNs_.reset();
  dut_.reset();
  gen_.reset();
}

std::vector<std::string> Topology::netnsNames() const {
  std::vector<std::string> v{prefix_ + "-gen", prefix_ + "-dut"};
  if (scenario_ == Scenario::kVethVeth) v.push_back(prefix_ + "-sink");
  return v;
}

std::vector<std::string> leftovers(const std::string& prefix) {
  std::vector<std::string> out;
  // The prefix is "vb<pid>"; a name that continues with a digit belongs to
  // another pid and is not ours.
  auto ours = [&](const std::string& n) {
    return n.compare(0, prefix.size(), prefix) == 0 && !(n.size() > prefix.size() && isdigit(n[prefix.size()]));
  };
  for (const char* dir : {"/run/netns", "/sys/class/net"}) {
    DIR* d = opendir(dir);
    if (!d) continue;
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (ours(n)) out.push_back(std::string(dir) + "/" + n);
    }
    closedir(d);
  }
  return out;
}

}  // namespace vdev::bench
