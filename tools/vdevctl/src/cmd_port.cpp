// vdevctl port add | del | set | show
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <set>
#include <type_traits>

#include "commands.h"

namespace vdev::ctl {

namespace {

using vdev::proto::CreateOptions;
using vdev::proto::PortAddRequest;
using vdev::proto::PortType;

// Keywords that describe the device to create; valid only after `create`.
// `only_for`: the device type a keyword belongs to (nullptr: both).
struct CreateKeyword {
  const char* word;
  const char* only_for;
};
constexpr CreateKeyword kCreateKeywords[] = {
    {"netns", "veth"}, {"peer", "veth"}, {"peer-mac", "veth"},   {"mac", "tap"},
    {"owner", "tap"},  {"group", "tap"}, {"multi-queue", "tap"}, {"mtu", nullptr},
};

const CreateKeyword* createKeyword(std::string_view w) {
  for (const auto& k : kCreateKeywords)
    if (w == k.word) return &k;
  return nullptr;
}

void parseCreateOption(Args& a, const std::string& k, CreateOptions& c) {
  if (k == "netns") {
    if (a.accept("pid")) {
      c.peer_netns_pid = a.u32("netns pid", 1, vdev::proto::kMaxPid);
    } else {
      const std::string ns = a.next("namespace after 'netns' (NAME, PATH or pid PID)");
      if (ns.find('/') != std::string::npos) {
        if (ns[0] != '/') a.usage("netns path '" + ns + "' must be absolute");
        c.peer_netns_path = ns;
      } else {
        c.peer_netns_name = ns;
      }
    }
  } else if (k == "peer") {
    c.peer_ifname = a.ifname("interface name after 'peer'");
  } else if (k == "peer-mac") {
    c.peer_mac = a.mac("peer-mac");
  } else if (k == "mac") {
    c.mac = a.mac("mac");
  } else if (k == "owner") {
    c.owner_uid = a.user("owner");
  } else if (k == "group") {
    c.group_gid = a.group("group");
  } else if (k == "multi-queue") {
    c.multi_queue = true;
  } else if (k == "mtu") {
    c.mtu = a.u32("mtu", vdev::proto::kMinMtu, vdev::proto::kMaxMtu);
  }
}

// The on|off after keyword k; `on` says what on does, for the usage error.
bool onOff(Args& a, const std::string& k, const std::string& on) {
  const std::string v = a.next("on or off after '" + k + "'");
  if (v != "on" && v != "off") a.usage(k + " '" + v + "': expected on or off (" + on + ")");
  return v == "on";
}

// One keyword of the port's policy (spec/port_policy.h), by its field's
// type: numbers in the row's range (0 or off: no limit; bits/s as a rate,
// 100M), on|off, a MAC or any, addresses or any, and VLANs.
template <class Row>
void parsePolicy(Args& a, const std::string& k, const Row& r, std::optional<uint32_t>& v) {
  v = uint32_t(r.min ? a.u32(k, uint32_t(r.min), uint32_t(r.max)) : a.limit(k, r.max, r.about));
}
template <class Row>
void parsePolicy(Args& a, const std::string& k, const Row& r, std::optional<uint64_t>& v) {
  v = r.unit == "bits/s" ? a.rate(k) : a.limit(k, r.max, r.about);
}
template <class Row>
void parsePolicy(Args& a, const std::string& k, const Row& r, std::optional<bool>& v) {
  v = onOff(a, k, std::string(r.about));
}
template <class Row>
void parsePolicy(Args& a, const std::string& k, const Row&, std::optional<vdev::Mac>& v) {
  if (a.accept("any")) v = vdev::Mac{};  // all zeros: any source
  else v = a.mac(k);
}
template <class Row>
void parsePolicy(Args& a, const std::string&, const Row&, std::optional<std::vector<vdev::IpAddr>>& v) {
  const std::string s = a.next("addresses after 'allowed-ip' (198.18.0.2,2001:db8::2), or any");
  std::string bad;
  auto ips = vdev::parseIpList(s, &bad);  // any: none
  if (!ips)
    a.usage("allowed-ip '" + bad + "': not an IPv4 or IPv6 address (give addresses without a prefix "
            "length, comma-separated, or any)");
  v = std::move(*ips);
}
// VLANs: one field, four keywords (vlan, native, trunk, untagged).
template <class Row>
void parsePolicy(Args& a, const std::string& k, const Row&, std::optional<vdev::VlanConfig>& vlan) {
  if (k == "vlan" || k == "native") {
    // An access port's VLAN, or a trunk's untagged one: the same thing.
    if (vlan && !vlan->configured()) a.usage("'vlan none' takes the port's VLAN settings away: give it alone");
    if (vlan && vlan->pvid) a.usage("'vlan' and 'native' both name the port's untagged VLAN: give one");
    if (k == "vlan" && a.accept("none")) {
      if (vlan) a.usage("'vlan none' takes the port's VLAN settings away: give it alone");
      vlan.emplace();  // unconfigured: VLAN 1, untagged, tags not looked at
      return;
    }
    const uint16_t vid = uint16_t(a.u32(k, 1, vdev::kVidMax));
    if (!vlan) vlan.emplace();
    vlan->pvid = vid;
    vlan->untagged.set(vid);
    return;
  }
  const std::string v = a.next("VLAN IDs after '" + k + "' (10,20-29)");
  const auto s = vdev::parseVidList(v);
  if (!s) a.usage(k + " '" + v + "': expected VLAN IDs 1 to 4094, comma-separated, ranges as 20-29");
  if (vlan && !vlan->configured()) a.usage("'vlan none' takes the port's VLAN settings away: give it alone");
  if (!vlan) vlan.emplace();
  (k == "trunk" ? vlan->tagged : vlan->untagged) |= *s;
}
template <class Row>
bool isPolicyKeyword(const Row& r, const std::string& k) {
  if constexpr (std::is_same_v<typename Row::Type, vdev::VlanConfig>)
    return std::find(std::begin(vdev::spec::kVlanKeywords), std::end(vdev::spec::kVlanKeywords), k) !=
           std::end(vdev::spec::kVlanKeywords);
  else
    return k == r.cli;
}

// The keywords "port add" and "port set" share: isolation and the port's
// policy (storm control, the policer, anti-spoofing, guards, VLANs). False:
// `k` is none of them.
bool parseLimitOption(Args& a, const std::string& k, std::optional<bool>& isolated,
                      vdev::proto::LimitOptions& l) {
  if (k == "isolated") {
    isolated = onOff(a, k, "on: the port talks only to ports that are not isolated");
    return true;
  }
  bool found = false;
  vdev::spec::forEachPolicyField([&](const auto& r) {
    if (found || !isPolicyKeyword(r, k)) return;
    found = true;
    parsePolicy(a, k, r, l.*r.option);
  });
  return found;
}

// The keywords "port set" takes -- isolated and the policy
// table's, identity rows first, then rates, each in table order.
std::string setKeywords() {
  std::vector<std::string> w = {"isolated"};
  forEachPolicyFieldListed([&](const auto& r) {
    if constexpr (std::is_same_v<typename std::decay_t<decltype(r)>::Type, vdev::VlanConfig>)
      for (std::string_view v : vdev::spec::kVlanKeywords) w.emplace_back(v);
    else
      w.emplace_back(r.cli);
  });
  return joinWords(w, ", ", " or ");
}

// The VLAN column: "-" without VLAN settings, else "vlan 10", "trunk
// 10,20 native 5" (base/vlan.h).
std::string vlanText(const vdev::proto::PortInfo& p) {
  if (!p.limits || !p.limits->vlan.configured()) return "-";
  return vdev::formatVlanConfig(p.limits->vlan);
}

// The HOOK column: "tc/clsact", "tc/tcx", "xdp" ("xdp/clsact": the copy
// program at tc); "*" when the port is not where auto put it (hook_note).
std::string hookText(const vdev::proto::PortInfo& p) {
  std::string h = p.hook ? vdev::proto::portHookName(*p.hook) : "xdp";
  if (p.tc_attach) h += std::string("/") + vdev::proto::tcAttachName(*p.tc_attach);
  if (!p.hook_note.empty()) h += "*";
  return h;
}

// The uplink among `ports` with the smallest MTU (nullptr: none).
const vdev::proto::PortInfo* narrowestUplink(const std::vector<vdev::proto::PortInfo>& ports) {
  const vdev::proto::PortInfo* up = nullptr;
  for (const auto& p : ports)
    if (p.uplink && p.mtu && (!up || p.mtu < up->mtu)) up = &p;
  return up;
}

// Prints a table row / JSON object per port. `stats` (with -s) adds counters.
// A port whose MTU is larger than an uplink's (its longer frames to other
// hosts are dropped as oversize) is named: "mtu_over_uplink" in JSON, a
// warning on stderr under the table.
int showPorts(Context& ctx, const std::vector<vdev::proto::PortInfo>& ports,
              const std::vector<vdev::proto::PortStatsMsg>* stats) {
  const vdev::proto::PortInfo* up = narrowestUplink(ports);
  auto over = [&](const vdev::proto::PortInfo& p) { return up && !p.uplink && p.mtu > up->mtu; };
  if (ctx.opt().json) {
    Json a = Json::array();
    for (size_t i = 0; i < ports.size(); ++i) {
      Json o = Json::object();
      writePortInfo(o, ports[i]);
      if (over(ports[i])) o["mtu_over_uplink"] = up->name;
      // Who added it at run time, and its tag (vdev-cni's "cni:NETWORK").
      if (ports[i].owner_uid) o["owner_uid"] = *ports[i].owner_uid;
      if (!ports[i].tag.empty()) o["tag"] = ports[i].tag;
      if (stats) writePortCounters(o, (*stats)[i]);
      a.push_back(std::move(o));
    }
    return Context::print(jsonText(a, ctx.opt().pretty));
  }
  // With -s: a few counters by their table rows, and the frames lost at the port.
  using vdev::stats::PortCounter;
  constexpr PortCounter kShown[] = {vdev::stats::kRxPackets, vdev::stats::kRxBytes,
                                    vdev::stats::kTxPackets, vdev::stats::kTxBytes};
  std::vector<Table::Column> cols = {{"NAME"}, {"TYPE"}, {"IFINDEX", true}, {"QUEUES", true},
                                     {"XDP"},  {"BIND"}, {"MTU", true},     {"STATE"},
                                     {"FAST_RX"}, {"HOOK"}, {"VLAN"}};
  if (stats) {
    for (PortCounter id : kShown) {
      std::string h = vdev::stats::jsonPath(id);
      for (char& c : h) c = char(std::toupper(static_cast<unsigned char>(c)));
      cols.push_back({h, true});
    }
    cols.push_back({"DROPS", true});
  }
  Table t(std::move(cols));
  for (size_t i = 0; i < ports.size(); ++i) {
    const auto& p = ports[i];
    std::vector<std::string> row = {p.name,
                                    vdev::proto::portTypeName(p.type),
                                    std::to_string(p.ifindex),
                                    queuesText(p),
                                    vdev::proto::xdpModeName(p.xdp_mode),
                                    vdev::proto::bindModeName(p.bind_mode),
                                    std::to_string(p.mtu),
                                    stateName(p),
                                    p.fast_rx ? "on" : "off",
                                    hookText(p),
                                    vlanText(p)};
    if (stats) {
      const auto& s = (*stats)[i];
      for (PortCounter id : kShown) row.push_back(std::to_string(s.counters[id]));
      row.push_back(std::to_string(s.counters.lost()));
    }
    t.row(std::move(row));
  }
  std::string out = t.render();
  // Why a port is not at the hook auto chose (HOOK marked "*").
  for (const auto& p : ports)
    if (!p.hook_note.empty()) out += "* " + p.name + ": " + p.hook_note + "\n";
  // What a port without its device waits for.
  for (const auto& p : ports)
    if (!p.link_note.empty()) out += p.name + ": " + p.link_note + "\n";
  const int rc = Context::print(out);
  for (const auto& p : ports)
    if (over(p))
      std::fprintf(stderr,
                   "vdevctl: warning: %s: MTU %u is larger than uplink %s's %u: its frames to other hosts longer "
                   "than that are dropped (oversize)\n",
                   p.name.c_str(), p.mtu, up->name.c_str(), up->mtu);
  return rc;
}

}  // namespace

int cmdPortAdd(Context& ctx, Args& a) {
  PortAddRequest r;
  r.name = a.ifname("IFNAME");
  std::set<std::string> seen;
  bool typeGiven = false;
  std::string firstCreateWord;  // for "not valid for this type" messages
  while (!a.empty()) {
    const std::string k = a.next("argument");
    if (!seen.insert(k).second) a.usage("'" + k + "' given twice");
    if (parseLimitOption(a, k, r.isolated, r.limits)) continue;
    if (k == "type") {
      const std::string types = joinWords(portTypesTaken(), ", ", " or ");
      const std::string t = a.next("type after 'type' (" + types + ")");
      const auto pt = vdev::proto::parsePortType(t);
      if (!pt) a.usage("unknown type '" + t + "' (" + types + ")");
      r.type = *pt;
      typeGiven = true;
    } else if (k == "queues") {
      r.queues = a.u32("queues", vdev::proto::kMinQueues, vdev::proto::kMaxQueues);
    } else if (k == "xdp-mode") {
      const std::string modes = joinWords(xdpModesTaken(), ", ", " or ");
      const std::string m = a.next("mode after 'xdp-mode' (" + modes + ")");
      const auto xm = vdev::proto::parseXdpMode(m);
      if (!xm) a.usage("unknown xdp-mode '" + m + "' (" + modes + ")");
      r.xdp_mode = *xm;
    } else if (k == "fast-rx") {
      r.fast_rx = onOff(a, k, "off: frames the port receives always go through vdevd");
    } else if (k == "hook") {
      const std::string hooks = joinWords(hooksTaken(), ", ", " or ");
      const std::string v = a.next(hooks + " after 'hook'");
      const auto h = vdev::proto::parsePortHook(v);
      if (!h) a.usage("hook '" + v + "': expected " + hooks + " (default: tc for veths and taps, xdp otherwise)");
      r.hook = *h;
    } else if (k == "create") {
      r.create.emplace();
    } else if (createKeyword(k)) {
      if (!r.create) a.usage("'" + k + "' describes the device to create: put it after 'create'");
      parseCreateOption(a, k, *r.create);
    } else {
      a.unknown(k);
    }
  }
  if (r.create) {
    if (!typeGiven || r.type == PortType::kNetdev)
      a.usage("create needs 'type veth', 'type netkit' or 'type tap' (netdev attaches an existing device)");
    const char* tname = vdev::proto::portTypeName(r.type);
    // A netkit pair takes a veth's keywords: a peer in a namespace.
    const char* as = r.type == PortType::kNetkit ? "veth" : tname;
    for (const auto& kw : kCreateKeywords)
      if (seen.count(kw.word) && kw.only_for && std::string_view(kw.only_for) != as)
        a.usage("'" + std::string(kw.word) + "' is for type " + kw.only_for + ", not " + tname);
    if (r.type == PortType::kTap && r.queues && *r.queues > 1 && !r.create->multi_queue)
      a.usage("a tap with queues " + std::to_string(*r.queues) + " needs 'multi-queue'");
    if ((r.type == PortType::kVeth || r.type == PortType::kNetkit) && r.create->peer_ifname == r.name &&
        !r.create->peer_netns_name && !r.create->peer_netns_path && !r.create->peer_netns_pid)
      a.usage("peer " + r.name + " in the same namespace as the port needs another name");
  }
  // The daemon's own checks, applied here too: anything it would reject as
  // malformed is bad usage, reported before connecting.
  if (auto st = vdev::proto::validate(r); !st) a.usage(st.error().what);
  if (auto st = ctx.client().portAdd(r); !st) return Context::fail(st.error());
  return kExitOk;
}

int cmdPortDel(Context& ctx, Args& a) {
  const std::string name = a.ifname("IFNAME");
  a.done();
  if (auto st = ctx.client().portDel(name); !st) return Context::fail(st.error());
  return kExitOk;
}

int cmdPortSet(Context& ctx, Args& a) {
  vdev::proto::PortSetRequest r;
  r.name = a.ifname("IFNAME");
  std::set<std::string> seen;
  while (!a.empty()) {
    const std::string k = a.next("argument");
    if (!seen.insert(k).second) a.usage("'" + k + "' given twice");
    if (!parseLimitOption(a, k, r.isolated, r.limits)) {
      if (k == "type" || k == "queues" || k == "xdp-mode" || k == "fast-rx" || k == "hook" || k == "create" ||
          createKeyword(k))
        a.usage("'" + k + "' cannot be changed on a running port: delete it and add it again");
      a.unknown(k);
    }
  }
  if (seen.empty())
    a.usage("nothing to change: give " + setKeywords());
  if (auto st = vdev::proto::validate(r); !st) a.usage(st.error().what);
  if (auto st = ctx.client().portSet(r); !st) {
    // A vdevd from before PORT_SET answers "unknown command".
    if (st.error().err == EOPNOTSUPP)
      return Context::fail(Error{EOPNOTSUPP, "vdevd does not know PORT_SET (it is older than this vdevctl); "
                                             "upgrade vdevd, or delete the port and add it with the new options"});
    return Context::fail(st.error());
  }
  return kExitOk;
}

int cmdPortShow(Context& ctx, Args& a) {
  std::string name;
  if (!a.empty()) name = a.ifname("IFNAME");
  a.done();
  if (ctx.opt().stats) {
    auto s = ctx.client().stats(name);
    if (!s) return Context::fail(s.error());
    std::vector<vdev::proto::PortInfo> ports;
    for (const auto& p : s->ports) ports.push_back(p.port);
    return showPorts(ctx, ports, &s->ports);
  }
  if (!name.empty()) {
    auto p = ctx.client().portGet(name);
    if (!p) return Context::fail(p.error());
    return showPorts(ctx, {*p}, nullptr);
  }
  auto l = ctx.client().portList();
  if (!l) return Context::fail(l.error());
  return showPorts(ctx, *l, nullptr);
}

}  // namespace vdev::ctl
