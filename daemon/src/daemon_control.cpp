#include "daemon_control.h"

#include <cstring>

#include "datapath/fdb.h"
#include "base/version.h"
#include "daemon/datapath_convert.h"
#include "rtnl/link.h"

namespace vdev::daemon {

namespace {

using vdev::proto::ErrorReply;

// The client adds strerror(err) itself: the message is the "what" alone.
ErrorReply fail(const Error& e) { return ErrorReply{e.err ? e.err : EIO, e.what}; }

const PortRecord* recordOf(const DaemonState& st, const std::string& name) {
  for (const auto& r : st.ports)
    if (r.name == name) return &r;
  return nullptr;
}

// How a port was added is the daemon's knowledge, not the datapath's.
vdev::proto::PortType typeOf(const DaemonState& st, const std::string& name) {
  const PortRecord* r = recordOf(st, name);
  if (!r || r->type == "netdev") return vdev::proto::PortType::kNetdev;
  return r->type == "tap" ? vdev::proto::PortType::kTap : vdev::proto::PortType::kVeth;
}

}  // namespace

vdev::proto::StatsReply DaemonControl::toStatsReply(const datapath::DatapathStats& s, const DaemonState& st,
                                               const std::string& only) {
  vdev::proto::StatsReply r = daemon::toStatsReply(s, only);  // pool and FDB size always (protocol.h)
  for (auto& m : r.ports)
    if (m.port.type != vdev::proto::PortType::kPunt) m.port.type = typeOf(st, m.port.name);
  return r;
}

vdev::proto::PortInfo DaemonControl::toPortInfo(const datapath::PortStats& p, const DaemonState& st) {
  return daemon::toPortInfo(p, typeOf(st, p.name));
}

Status DaemonControl::persist() {
  if (ctx_.state_path.empty()) return {};
  return saveState(ctx_.state_path, *ctx_.state);
}

vdev::proto::Reply DaemonControl::portAdd(const vdev::proto::PortAddRequest& r) {
  namespace rt = vdev::rtnl;
  if (recordOf(*ctx_.state, r.name)) return ErrorReply{EEXIST, "port " + r.name + " already exists"};
  bool created = false;
  if (r.create) {
    const vdev::proto::CreateOptions& c = *r.create;
    if (rt::linkExists(r.name))
      return ErrorReply{EEXIST, "cannot create " + r.name + ": a device of that name exists"};
    if (r.type == vdev::proto::PortType::kVeth) {
      rt::VethSpec v;
      v.name = r.name;
      v.peerName = c.peer_ifname.value_or("eth0");
      if (c.peer_netns_name) v.peerNetns = rt::NetnsRef::byName(*c.peer_netns_name);
      else if (c.peer_netns_path) v.peerNetns = rt::NetnsRef::byPath(*c.peer_netns_path);
      else if (c.peer_netns_pid) v.peerNetns = rt::NetnsRef::byPid(pid_t(*c.peer_netns_pid));
      if (c.peer_mac) v.peerMac = *c.peer_mac;
      if (c.mtu) v.mtu = int(*c.mtu);
      v.peerGro = ctx_.fast_path;  // NAPI on the container's end: the kernel fast path can deliver to it
      const auto hook = toVdevHook(r.hook).value_or(ctx_.default_hook);
      v.peerTxCsumOff = hook == datapath::PortHook::kXdp;
      auto res = rt::createVeth(v);
      if (!res) return fail(res.error());
    } else if (r.type == vdev::proto::PortType::kTap) {
      rt::TapSpec t;
      t.name = r.name;
      if (c.owner_uid) t.owner = uid_t(*c.owner_uid);
      if (c.group_gid) t.group = gid_t(*c.group_gid);
      t.multiQueue = c.multi_queue.value_or(false);
      if (c.mac) t.mac = *c.mac;
      if (c.mtu) t.mtu = int(*c.mtu);
      auto res = rt::createTap(t);
      if (!res) return fail(res.error());
    } else {
      return ErrorReply{EINVAL, "create needs type veth or tap"};
    }
    created = true;
  }
  auto undoDevice = [&] {
    if (created) (void)rt::deleteManagedLink(r.name);
  };
  datapath::Datapath::PortOptions o;
  o.queues = r.queues;
  o.xdp_mode = toVdevXdpMode(r.xdp_mode);
  o.fast_rx = r.fast_rx.value_or(true);
  o.hook = toVdevHook(r.hook);
  if (auto st = ctx_.dp->addPort(r.name, o); !st) {
    undoDevice();
    return fail(st.error());
  }
  PortRecord rec;
  rec.name = r.name;
  rec.type = r.type == vdev::proto::PortType::kTap ? "tap" : r.type == vdev::proto::PortType::kVeth ? "veth" : "netdev";
  rec.queues = r.queues.value_or(0);
  rec.xdp_mode = r.xdp_mode == vdev::proto::XdpMode::kNative    ? "native"
                 : r.xdp_mode == vdev::proto::XdpMode::kGeneric ? "generic"
                                                           : "auto";
  rec.managed = created;
  rec.fast_rx = r.fast_rx.value_or(true);
  rec.hook = r.hook ? vdev::proto::portHookName(*r.hook) : "";
  ctx_.state->ports.push_back(rec);
  if (auto st = persist(); !st) {
    ctx_.state->ports.pop_back();
    (void)ctx_.dp->removePort(r.name);
    undoDevice();
    return ErrorReply{st.error().err, "port not added: " + st.error().what};
  }
  return vdev::proto::Ack{};
}

vdev::proto::Reply DaemonControl::portDel(const vdev::proto::PortDelRequest& r) {
  auto it = ctx_.state->ports.begin();
  while (it != ctx_.state->ports.end() && it->name != r.name) ++it;
  if (it == ctx_.state->ports.end()) {
    // Ports given on vdevd's command line are not vdevctl's to remove.
    if (ctx_.dp->hasPort(r.name))
      return ErrorReply{EPERM, "port " + r.name + " comes from vdevd's command line; it cannot be deleted at run time"};
    return ErrorReply{ENOENT, "no port " + r.name};
  }
  const PortRecord rec = *it;
  ctx_.state->ports.erase(it);
  if (auto st = persist(); !st) {
    ctx_.state->ports.push_back(rec);
    return ErrorReply{st.error().err, "port not deleted: " + st.error().what};
  }
  if (auto st = ctx_.dp->removePort(r.name); !st && st.error().err != ENOENT) return fail(st.error());
  // Remove what vdev created, and nothing else.
  if (rec.managed && vdev::rtnl::linkExists(r.name)) {
    if (auto st = vdev::rtnl::deleteManagedLink(r.name); !st) return fail(st.error());
  }
  return vdev::proto::Ack{};
}

vdev::proto::Reply DaemonControl::handle(const vdev::proto::Request& req, const vdev::proto::PeerCred&) {
  using namespace vdev::proto;
  return std::visit(
      [&](const auto& b) -> Reply {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, PortAddRequest>) {
          return portAdd(b);
        } else if constexpr (std::is_same_v<T, PortDelRequest>) {
          return portDel(b);
        } else if constexpr (std::is_same_v<T, PortGetRequest>) {
          datapath::DatapathStats s = ctx_.dp->stats();
          PortList l;
          for (const auto& p : s.ports)
            if (!p.punt && (b.name.empty() || p.name == b.name)) l.ports.push_back(toPortInfo(p, *ctx_.state));
          if (!b.name.empty() && l.ports.empty()) return ErrorReply{ENOENT, "no port " + b.name};
          return l;
        } else if constexpr (std::is_same_v<T, StatsGetRequest>) {
          StatsReply r = toStatsReply(ctx_.dp->stats(), *ctx_.state, b.name);
          if (!b.name.empty() && r.ports.empty()) return ErrorReply{ENOENT, "no port " + b.name};
          return r;
        } else if constexpr (std::is_same_v<T, FdbGetRequest>) {
          auto entries = ctx_.dp->fdbDump();
          if (!entries) return fail(entries.error());
          const uint64_t now = datapath::monotonicNs();
          FdbList l;
          for (const auto& e : entries.value())
            l.entries.push_back(toFdbEntryMsg(e, ctx_.dp->portName(e.port_index), now));
          return l;
        } else if constexpr (std::is_same_v<T, FdbAddRequest>) {
          if (auto st = ctx_.dp->fdbAdd(b.mac.data(), b.port); !st) return fail(st.error());
          return Ack{};
        } else if constexpr (std::is_same_v<T, FdbDelRequest>) {
          if (auto st = ctx_.dp->fdbDel(b.mac.data()); !st) return fail(st.error());
          return Ack{};
        } else if constexpr (std::is_same_v<T, InfoGetRequest>) {
          InfoMsg m;
          m.version = VDEV_VERSION;
          m.threads = 1;
          m.mode = ctx_.mode == datapath::SwitchMode::kXconnect ? vdev::proto::SwitchMode::kXconnect : vdev::proto::SwitchMode::kSwitch;
          m.uptime_s = uint64_t(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::steady_clock::now() - ctx_.started)
                                    .count());
          m.num_ports = uint32_t(ctx_.dp->numPorts());
          return m;
        } else {
          return ErrorReply{EOPNOTSUPP, "unsupported command"};
        }
      },
      req.body);
}

}  // namespace vdev::daemon
