#include "daemon_control.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "datapath/capture_filter.h"
#include "datapath/fdb.h"
#include "base/version.h"
#include "daemon_options.h"
#include "port_policy.h"
#include "proto/metrics.h"
#include "replies.h"
#include "rtnl/link.h"

namespace vdev::daemon {

namespace {

using vdev::proto::ErrorReply;

// The client adds strerror(err) itself: the message is the "what" alone.
ErrorReply fail(const Error& e) { return ErrorReply{e.err ? e.err : EIO, e.what}; }

// What the device vdev made for a saved port carries (DeviceIdentity):
// nullopt for a device vdev did not make (root's existing device: attached
// by name, as before). A record saved before ids has the bare mark and no
// tun owner: its device is known by the mark and kind alone.
std::optional<datapath::DeviceIdentity> identityOf(const PortRecord& r) {
  if (!r.managed || (r.type != "tap" && r.type != "veth" && r.type != "netkit")) return std::nullopt;
  datapath::DeviceIdentity id;
  id.alias = rtnl::managedAlias(r.id);
  id.tap = r.type == "tap";
  id.netkit = r.type == "netkit";
  id.tun_owner = r.tun_owner;
  id.check_owner = !r.id.empty();
  return id;
}

const PortRecord* recordOf(const DaemonState& st, const std::string& name) {
  for (const auto& r : st.ports)
    if (r.name == name) return &r;
  return nullptr;
}

// How a port was added is the daemon's knowledge, not the datapath's.
vdev::proto::PortType typeOf(const DaemonState& st, const std::string& name) {
  const PortRecord* r = recordOf(st, name);
  if (!r) return vdev::proto::PortType::kNetdev;
  return vdev::proto::parsePortType(r->type).value_or(vdev::proto::PortType::kNetdev);  // a record's: read checked it
}

// Who added it and its tag (ports from the command line have no record).
void addOwner(vdev::proto::PortInfo& p, const DaemonState& st) {
  if (const PortRecord* r = recordOf(st, p.name)) {
    p.owner_uid = r->owner_uid;
    p.tag = r->tag;
  }
}

ErrorReply denied(const vdev::proto::PeerCred& peer, const std::string& rule) {
  return ErrorReply{EPERM, "uid " + std::to_string(peer.uid) + " is not root: " + rule};
}

bool inGroup(const vdev::proto::PeerCred& peer, gid_t g) {
  return peer.gid == g || std::find(peer.groups.begin(), peer.groups.end(), g) != peer.groups.end();
}

// The namespace a non-root caller asks a veth peer to go into, opened once
// and checked: it must be administered by the caller (its user namespace
// created by the caller's uid), and a PEER_NETNS_PID must be a process of
// the caller's. The fd is what the veth is then created with (through
// /proc/self/fd), so the path cannot be swapped between check and use.
Result<FileDesc> callersNetns(const vdev::proto::CreateOptions& c, const vdev::proto::PeerCred& peer,
                              vdev::rtnl::NetnsRef& ref, std::optional<ErrorReply>& refusal) {
  namespace rt = vdev::rtnl;
  // A name (validated: no '/', not "." or "..") opens /run/netns/NAME and
  // a pid /proc/PID/ns/net: nothing a member names is walked outside those
  // two. A path is root's (port_policy.h, "netns PATH"); refused here too,
  // with the same words, should this be reached without that check.
  if (c.peer_netns_path) {
    refusal = denied(peer, "members may give a namespace by name under /run/netns or by a pid of their own");
    return Error{EPERM, ""};
  }
  if (c.peer_netns_name) ref = rt::NetnsRef::byName(*c.peer_netns_name);
  else if (c.peer_netns_pid) ref = rt::NetnsRef::byPid(pid_t(*c.peer_netns_pid));
  else {
    refusal = denied(peer, "a veth's peer must go into a network namespace of the caller's own "
                           "(netns NAME or netns pid PID); vdevd's namespace is root's");
    return Error{EPERM, ""};
  }
  auto fd = ref.open();
  if (!fd) return fd.error();
  FileDesc ns(*fd);
  auto owner = rt::netnsOwnerUid(ns.get());
  if (!owner) return owner.error();
  if (*owner != peer.uid) {
    refusal = denied(peer, ref.describe() + " is administered by uid " + std::to_string(*owner) +
                               " (the owner of its user namespace), not by the caller");
    return Error{EPERM, ""};
  }
  if (c.peer_netns_pid) {
    struct stat st {};
    const std::string proc = "/proc/" + std::to_string(*c.peer_netns_pid);
    if (::stat(proc.c_str(), &st) != 0) return errnoError("stat " + proc);
    if (st.st_uid != peer.uid) {
      refusal = denied(peer, "process " + std::to_string(*c.peer_netns_pid) + " belongs to uid " +
                                 std::to_string(st.st_uid) + ", not to the caller");
      return Error{EPERM, ""};
    }
  }
  return ns;
}

// Open file descriptors of this process now.
uint32_t openFds() {
  uint32_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') n++;
    ::closedir(d);
    if (n) n--;  // the directory's own
  }
  return n;
}

}  // namespace

vdev::proto::StatsReply DaemonControl::toStatsReply(const datapath::DatapathStats& s, const DaemonState& st,
                                               const std::string& only) {
  vdev::proto::StatsReply r = daemon::toStatsReply(s, only);  // pool and FDB size always (protocol.h)
  for (auto& m : r.ports) {
    if (m.port.type == vdev::proto::PortType::kPunt) continue;  // no port: no owner, its own type
    m.port.type = typeOf(st, m.port.name);
    addOwner(m.port, st);
  }
  return r;
}

vdev::proto::PortInfo DaemonControl::toPortInfo(const datapath::PortStats& p, const DaemonState& st) {
  vdev::proto::PortInfo i = daemon::toPortInfo(p, typeOf(st, p.name));
  addOwner(i, st);
  return i;
}

Status restorePort(datapath::Datapath& d, const PortRecord& rec, UidQuota* quota) {
  datapath::Datapath::PortOptions o;
  if (rec.queues) o.queues = rec.queues;
  o.xdp_mode = xdpModeByName(rec.xdp_mode).value_or(datapath::XdpMode::kAuto);
  o.fast_rx = rec.fast_rx;
  o.hook = portHookByName(rec.hook);  // none ("" in the record): vdevd's --default-hook
  o.isolated = rec.isolated;
  o.limits = rec.limits;  // its own; the rest: today's defaults
  // A veth vdevd made has GRO on its peer when the fast path is on
  // (DaemonControl::portAdd): NAPI, which a kernel before 6.3 does not report.
  o.peer_napi = rec.managed && rec.type == "veth" && d.fastPath();
  o.allow_absent = true;  // a saved port whose device is not back yet waits for it
  // A device vdev made: only the one carrying the port's identity (a
  // device that took its name meanwhile is waited past, not attached).
  o.identity = identityOf(rec);
  if (rec.owner_uid != 0 && quota) o.fdb_group = quota->fdbGroup(rec.owner_uid);
  return d.addPort(rec.name, o);
}

void DaemonControl::park(const std::string& name, std::string reason) {
  Parked& p = parked_[name];
  p.reason = std::move(reason);
  p.wait = kRetryFirst;
  p.next = std::chrono::steady_clock::now() + p.wait;
}

int DaemonControl::retryParked() {
  if (parked_.empty()) return -1;
  const auto now = std::chrono::steady_clock::now();
  auto soonest = std::chrono::steady_clock::time_point::max();
  for (auto it = parked_.begin(); it != parked_.end();) {
    Parked& p = it->second;
    if (p.next <= now) {
      const PortRecord* rec = recordOf(*ctx_.state, it->first);
      Status st = rec ? restorePort(*ctx_.dp, *rec, ctx_.quota) : Status{};
      if (st) {
        if (rec) std::fprintf(stderr, "vdevd: port %s from the state file started\n", it->first.c_str());
        names_stale_ = true;
        it = parked_.erase(it);
        continue;
      }
      if (st.error().message() != p.reason)
        std::fprintf(stderr, "vdevd: warning: port %s from the state file still not started: %s\n",
                     it->first.c_str(), st.error().message().c_str());
      p.reason = st.error().message();
      p.wait = std::min(p.wait * 2, kRetryMax);
      p.next = now + p.wait;
    }
    soonest = std::min(soonest, p.next);
    ++it;
  }
  if (parked_.empty()) return -1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(soonest - now).count();
  return int(std::clamp<int64_t>(ms, 1, kRetryMax.count()));
}

vdev::proto::PortInfo DaemonControl::parkedInfo(const std::string& name, const Parked& p) const {
  vdev::proto::PortInfo i;
  i.name = name;
  i.type = typeOf(*ctx_.state, name);
  addOwner(i, *ctx_.state);
  if (const PortRecord* r = recordOf(*ctx_.state, name)) i.isolated = r->isolated;
  i.live = false;
  const auto left = std::chrono::duration_cast<std::chrono::seconds>(p.next - std::chrono::steady_clock::now());
  i.link_note = "not started: " + p.reason + " (kept in the state; next try in " +
                std::to_string(std::max<int64_t>(left.count(), 0)) + " s)";
  return i;
}

Status DaemonControl::persist() {
  if (ctx_.state_path.empty()) return {};
  return saveState(ctx_.state_path, *ctx_.state);
}

vdev::proto::Reply DaemonControl::portAdd(const vdev::proto::PortAddRequest& req,
                                          const vdev::proto::PeerCred& peer) {
  namespace rt = vdev::rtnl;
  const bool root = peer.uid == 0;
  vdev::proto::PortAddRequest r = req;
  FileDesc callerNs;  // a non-root caller's checked namespace, held until the veth exists
  if (!root) {
    // Which fields a member may give (port_policy.h); below, which values
    // of its own fields are its own.
    if (auto st = checkPortFields(r, Caller::kOwner); !st) return denied(peer, st.error().what);
    vdev::proto::CreateOptions& c = *r.create;  // "attach" is root's: a member's request creates
    if (r.type == vdev::proto::PortType::kTap) {
      if (!c.owner_uid) c.owner_uid = peer.uid;  // the caller's tap, not root's
      if (*c.owner_uid != peer.uid)
        return denied(peer, "a tap may only be owned by the caller (owner " + std::to_string(*c.owner_uid) + ")");
      if (c.group_gid && !inGroup(peer, gid_t(*c.group_gid)))
        return denied(peer, "a tap's group must be one of the caller's (gid " + std::to_string(*c.group_gid) + ")");
    } else if (r.type == vdev::proto::PortType::kVeth || r.type == vdev::proto::PortType::kNetkit) {
      rt::NetnsRef ref;
      std::optional<ErrorReply> refusal;
      auto ns = callersNetns(c, peer, ref, refusal);
      if (refusal) return *refusal;
      if (!ns) return fail(ns.error());
      callerNs = std::move(*ns);
      c.peer_netns_name.reset();
      c.peer_netns_pid.reset();
      c.peer_netns_path = "/proc/self/fd/" + std::to_string(callerNs.get());
    }
  }
  if (recordOf(*ctx_.state, r.name)) return ErrorReply{EEXIST, "port " + r.name + " already exists"};
  if (!root && ctx_.quota) {
    const auto mine = std::count_if(ctx_.state->ports.begin(), ctx_.state->ports.end(),
                                    [&](const PortRecord& p) { return p.owner_uid == peer.uid; });
    if (auto st = ctx_.quota->checkPortAdd(peer.uid, uint32_t(mine)); !st) return fail(st.error());
  }
  bool created = false;
  // The id in the mark of the device made here (rtnl/link.h "Identity"):
  // the port attaches to, and port del deletes, only the device carrying it.
  const std::string dev_id = r.create ? rt::newDeviceId() : std::string();
  std::optional<uint32_t> tun_owner;  // the tap's TUNSETOWNER, if one is made
  bool peer_napi = false;  // a veth made here with GRO on its peer
  std::optional<rt::VethSpec> made_veth;  // a veth made here with its peer's checksums left on
  if (r.create) {
    const vdev::proto::CreateOptions& c = *r.create;
    if (rt::linkExists(r.name))
      return ErrorReply{EEXIST, "cannot create " + r.name + ": a device of that name exists"};
    if (r.type == vdev::proto::PortType::kVeth || r.type == vdev::proto::PortType::kNetkit) {
      const bool netkit = r.type == vdev::proto::PortType::kNetkit;
      rt::VethSpec v;
      v.name = r.name;
      v.peerName = c.peer_ifname.value_or("eth0");
      if (c.peer_netns_name) v.peerNetns = rt::NetnsRef::byName(*c.peer_netns_name);
      else if (c.peer_netns_path) v.peerNetns = rt::NetnsRef::byPath(*c.peer_netns_path);
      else if (c.peer_netns_pid) v.peerNetns = rt::NetnsRef::byPid(pid_t(*c.peer_netns_pid));
      if (c.peer_mac) v.peerMac = *c.peer_mac;
      if (c.mtu) v.mtu = int(*c.mtu);
      // NAPI on the container's end: the kernel fast path can deliver to
      // it. A netkit has none, and takes no XDP (always its skb program).
      v.peerGro = ctx_.fast_path && !netkit;
      const auto hook = r.hook.value_or(ctx_.default_hook);
      if (netkit && r.hook && hook == datapath::PortHook::kXdp)
        return ErrorReply{EINVAL, "a netkit port takes hook tc only (vdevd's skb program is the pair's own)"};
      v.peerTxCsumOff = !netkit && hook == datapath::PortHook::kXdp;
      v.id = dev_id;
      auto res = netkit ? rt::createNetkit(v) : rt::createVeth(v);
      if (!res) return fail(res.error());
      peer_napi = v.peerGro;
      if (!v.peerTxCsumOff) made_veth = v;
    } else if (r.type == vdev::proto::PortType::kTap) {
      rt::TapSpec t;
      t.name = r.name;
      if (c.owner_uid) t.owner = uid_t(*c.owner_uid);
      if (c.group_gid) t.group = gid_t(*c.group_gid);
      t.multiQueue = c.multi_queue.value_or(false);
      if (c.mac) t.mac = *c.mac;
      if (c.mtu) t.mtu = int(*c.mtu);
      t.id = dev_id;
      if (t.owner) tun_owner = uint32_t(*t.owner);
      auto res = rt::createTap(t);
      if (!res) return fail(res.error());
    } else {
      return ErrorReply{EINVAL, "create needs type veth, netkit or tap"};
    }
    created = true;
  }
  auto undoDevice = [&] {
    if (created) (void)rt::deleteManagedLink(r.name, dev_id);
  };
  datapath::Datapath::PortOptions o;
  o.queues = r.queues;
  o.xdp_mode = r.xdp_mode;  // validated: kNative, kGeneric or kAuto
  o.fast_rx = r.fast_rx.value_or(true);
  o.hook = r.hook;  // validated: kXdp or kTc; none: vdevd's --default-hook
  o.isolated = r.isolated.value_or(false);
  o.limits = r.limits;
  o.peer_napi = peer_napi;
  if (!root && ctx_.quota) o.fdb_group = ctx_.quota->fdbGroup(peer.uid);
  if (created) {
    datapath::DeviceIdentity id;
    id.alias = rt::managedAlias(dev_id);
    id.tap = r.type == vdev::proto::PortType::kTap;
    id.netkit = r.type == vdev::proto::PortType::kNetkit;
    id.tun_owner = tun_owner;
    o.identity = id;
  }
  if (auto st = ctx_.dp->addPort(r.name, o); !st) {
    undoDevice();
    return fail(st.error());
  }
  // Made for the tc hook, but `auto` took it to XDP (its tc attach failed):
  // its container's frames must reach XDP with their checksums done, as
  // for a veth made for the XDP hook (VethSpec::peerTxCsumOff).
  if (made_veth && ctx_.dp->portHook(r.name) == datapath::PortHook::kXdp)
    if (auto st = rt::setPeerTxCsumOff(made_veth->peerNetns, made_veth->peerName); !st) {
      (void)ctx_.dp->removePort(r.name);
      undoDevice();
      return fail(st.error());
    }
  PortRecord rec;
  rec.name = r.name;
  rec.type = vdev::proto::portTypeName(r.type);  // validated: tap, veth, netkit or netdev
  rec.queues = r.queues.value_or(0);
  rec.xdp_mode = vdev::proto::xdpModeName(r.xdp_mode);  // validated: native, generic or auto
  rec.managed = created;
  if (created) {
    rec.id = dev_id;
    rec.tun_owner = tun_owner;
  }
  rec.fast_rx = r.fast_rx.value_or(true);
  rec.owner_uid = peer.uid;
  rec.tag = r.tag.value_or("");
  names_stale_ = true;
  rec.hook = r.hook ? vdev::proto::portHookName(*r.hook) : "";
  rec.isolated = o.isolated;
  // Only what the request gave: a port without its own limit follows
  // vdevd's default, also after a restart with another one.
  rec.limits = r.limits;
  ctx_.state->ports.push_back(rec);
  // An error here means the state file was not replaced (saveState fails
  // only before its rename; a failed directory fsync after it is a
  // warning), so undoing the add leaves memory and disk alike.
  if (auto st = persist(); !st) {
    ctx_.state->ports.pop_back();
    (void)ctx_.dp->removePort(r.name);
    undoDevice();
    return ErrorReply{st.error().err, "port not added: " + st.error().what};
  }
  return vdev::proto::Ack{};
}

vdev::proto::Reply DaemonControl::portDel(const vdev::proto::PortDelRequest& r,
                                          const vdev::proto::PeerCred& peer) {
  auto it = ctx_.state->ports.begin();
  while (it != ctx_.state->ports.end() && it->name != r.name) ++it;
  if (it == ctx_.state->ports.end()) {
    // Ports given on vdevd's command line are not vdevctl's to remove.
    if (ctx_.dp->hasPort(r.name))
      return ErrorReply{EPERM, "port " + r.name + " comes from vdevd's command line; it cannot be deleted at run time"};
    return ErrorReply{ENOENT, "no port " + r.name};
  }
  if (peer.uid != 0 && it->owner_uid != peer.uid)
    return denied(peer, "port " + r.name + " was added by uid " + std::to_string(it->owner_uid) +
                            "; only that uid or root may delete it");
  const PortRecord rec = *it;
  names_stale_ = true;
  ctx_.state->ports.erase(it);
  if (auto st = persist(); !st) {
    ctx_.state->ports.push_back(rec);
    return ErrorReply{st.error().err, "port not deleted: " + st.error().what};
  }
  parked_.erase(r.name);  // one that never started: nothing in the datapath (ENOENT below)
  if (auto st = ctx_.dp->removePort(r.name); !st && st.error().err != ENOENT) return fail(st.error());
  // Remove what vdev created, and nothing else.
  // Remove what vdev created, and nothing else: with an id, only the device
  // made for this port (its device gone, another device that took the name
  // since -- anyone's -- stays).
  if (rec.managed && vdev::rtnl::linkExists(r.name)) {
    if (auto st = vdev::rtnl::deleteManagedLink(r.name, rec.id); !st) {
      if (!rec.id.empty() && st.error().err == EPERM) return vdev::proto::Ack{};  // not its device: left alone
      return fail(st.error());
    }
  }
  return vdev::proto::Ack{};
}

// Saved first, then applied: a change the datapath refuses is taken back
// out of the state file, so what is saved is what runs.
vdev::proto::Reply DaemonControl::portSet(const vdev::proto::PortSetRequest& r,
                                          const vdev::proto::PeerCred& peer) {
  auto it = ctx_.state->ports.begin();
  while (it != ctx_.state->ports.end() && it->name != r.name) ++it;
  if (it == ctx_.state->ports.end()) {
    if (ctx_.dp->hasPort(r.name))
      return ErrorReply{EPERM, "port " + r.name + " comes from vdevd's command line: its limits are vdevd's "
                               "--storm-* and --police-* options (add it with vdevctl port add to give it its own)"};
    return ErrorReply{ENOENT, "no port " + r.name};
  }
  if (auto st = checkPortFields(r, callerOf(peer.uid, it->owner_uid)); !st) return denied(peer, st.error().what);
  const PortRecord before = *it;
  if (r.isolated) it->isolated = *r.isolated;
  it->limits = r.limits.overOptions(it->limits);  // each given field replaces the record's
  if (auto st = persist(); !st) {
    *it = before;
    return ErrorReply{st.error().err, "port " + r.name + " not changed: " + st.error().what};
  }
  // Not started yet: the record is what its next try starts it with.
  if (parked_.count(r.name)) return vdev::proto::Ack{};
  datapath::Datapath::PortChange c;
  c.isolated = r.isolated;
  c.limits = r.limits;
  if (auto st = ctx_.dp->setPort(r.name, c); !st) {
    *it = before;
    std::string what = st.error().what;
    if (auto undo = persist(); !undo) what += "; and the state file still holds the change: " + undo.error().what;
    return ErrorReply{st.error().err, "port " + r.name + " not changed: " + what};
  }
  return vdev::proto::Ack{};
}

vdev::proto::Reply DaemonControl::fdbGet() {
  if (names_stale_) {
    names_by_index_.clear();
    for (const auto& p : stats_.fresh()->ports) {
      if (p.punt) continue;  // no port: never an FDB entry's
      if (p.index >= names_by_index_.size()) names_by_index_.resize(size_t(p.index) + 1);
      names_by_index_[p.index] = p.name;
    }
    names_stale_ = false;
  }
  // One call to the datapath thread for the whole table, however large.
  auto entries = ctx_.dp->fdbDump();
  if (!entries) return fail(entries.error());
  const uint64_t now = datapath::monotonicNs();
  vdev::proto::FdbList l;
  l.entries.reserve(entries->size());
  for (const auto& e : entries.value()) {
    // An entry names a live port (removing a port flushes its entries).
    if (e.port_index >= names_by_index_.size() || names_by_index_[e.port_index].empty()) continue;
    l.entries.push_back(toFdbEntryMsg(e, names_by_index_[e.port_index], now));
  }
  return l;
}

vdev::proto::InfoMsg DaemonControl::info() const {
  vdev::proto::InfoMsg m;
  m.version = VDEV_VERSION;
  m.threads = 1;
  m.mode = ctx_.mode;
  m.uptime_s = uint64_t(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx_.started)
                            .count());
  m.num_ports = uint32_t(ctx_.dp->numPorts());
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    const uint64_t lim = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : std::min<uint64_t>(rl.rlim_cur, UINT32_MAX);
    m.fd_limit = uint32_t(lim);
    // Room for control clients (ServerConfig::max_clients) and a few more
    // is kept out of what ports may use.
    const uint64_t used = uint64_t(openFds()) + 64 + 16;
    m.ports_fd_left = uint32_t(lim > used ? (lim - used) / kFdsPerPort : 0);
  }
  m.tc_attach = ctx_.dp->tcAttach();  // decided at start: kTcx or kClsact
  m.kernel_features = kernelFeatureBits(ctx_.dp->kernelUse());
  const datapath::Datapath::PortRoom room = ctx_.dp->portRoom();
  m.ports_pool_left = room.pool;
  m.ports_map_left = room.maps;
  if (ctx_.quota) {
    // The caps, and each member's use: its ports (the state's records), the
    // MACs learned on them (its FDB group), its captures' memory.
    const UidCaps& c = ctx_.quota->caps();
    m.uid_caps = vdev::proto::InfoMsg::UidCaps{c.ports, c.fdb, c.capture_bytes, c.rate, c.burst};
    std::map<uid_t, vdev::proto::InfoMsg::UidUse> use;
    for (const auto& r : ctx_.state->ports)
      if (r.owner_uid != 0) use[r.owner_uid].ports++;
    for (const auto& [uid, bytes] : ctx_.quota->captures()) use[uid].capture_bytes = bytes;
    for (const auto& [uid, n] : ctx_.quota->requests()) {
      use[uid].requests = n.taken;
      use[uid].requests_refused = n.refused;
    }
    std::vector<uint16_t> groups;
    for (auto& [uid, u] : use) {
      u.uid = uid;
      auto g = ctx_.quota->fdbGroups().find(uid);
      groups.push_back(g == ctx_.quota->fdbGroups().end() ? 0 : g->second);
    }
    const std::vector<uint32_t> learned = ctx_.dp->fdbGroupUse(groups);
    size_t k = 0;
    for (auto& [uid, u] : use) {
      if (groups[k]) u.fdb = learned[k];
      k++;
      m.uid_use.push_back(u);
    }
  }
  for (const auto& i : ctx_.start_issues) {
    if (!m.start_issues.empty()) m.start_issues += '\n';
    m.start_issues += i;
  }
  for (const auto& [name, p] : parked_) {
    if (!m.start_issues.empty()) m.start_issues += '\n';
    m.start_issues += "port " + name + " from the state file not started yet: " + p.reason +
                      " (kept in the state, retried: next wait " + std::to_string(p.wait.count() / 1000) +
                      " s, doubling up to " + std::to_string(kRetryMax.count() / 1000) + " s)";
  }
  return m;
}

namespace {

// The protocol's capture filter as the matcher takes it (capture_filter.h).
datapath::CaptureFilter toCaptureFilter(const std::optional<vdev::proto::CaptureFilter>& in) {
  datapath::CaptureFilter f{};
  if (!in) return f;
  if (in->mac) {
    f.fields |= VDEV_CAPF_MAC;
    std::memcpy(f.mac, in->mac->data(), 6);
  }
  if (in->vlan) {
    f.fields |= VDEV_CAPF_VLAN;
    f.vid = *in->vlan;
  }
  if (in->ethertype) {
    f.fields |= VDEV_CAPF_ETHERTYPE;
    f.ethertype = *in->ethertype;
  }
  if (in->ip) {
    f.fields |= VDEV_CAPF_IP;
    std::memcpy(f.ip, in->ip->data(), 16);
  }
  if (in->proto) {
    f.fields |= VDEV_CAPF_PROTO;
    f.proto = *in->proto;
  }
  if (in->port) {
    f.fields |= VDEV_CAPF_PORT;
    f.port = *in->port;
  }
  return f;
}

}  // namespace

vdev::proto::Reply DaemonControl::captureStart(const vdev::proto::CaptureStartRequest& r,
                                               const vdev::proto::PeerCred& peer) {
  // What a port carries is its owner's business: root, or the uid that
  // added it (a port from the command line is root's).
  if (peer.uid != 0) {
    const PortRecord* rec = recordOf(*ctx_.state, r.name);
    if (!rec && ctx_.dp->hasPort(r.name))
      return denied(peer, "port " + r.name + " comes from vdevd's command line; only root may capture it");
    if (rec && rec->owner_uid != peer.uid)
      return denied(peer, "port " + r.name + " was added by uid " + std::to_string(rec->owner_uid) +
                              "; only that uid or root may capture its frames");
  }
  const uint32_t snaplen = r.snaplen.value_or(vdev::proto::kCaptureSnaplenMax);
  // Its memory counts for the caller's uid from before it is made
  // (--uid-max-capture), and is given back if the start fails after.
  uint64_t reserved = 0;
  auto admit = [&](uint64_t bytes) -> Status {
    if (!ctx_.quota) return {};
    if (auto st = ctx_.quota->reserveCapture(peer.uid, bytes); !st) return st;
    reserved = bytes;
    return {};
  };
  auto id = ctx_.dp->captureStart(r.name, static_cast<uint8_t>(r.dir), snaplen,
                                  r.buffer.value_or(vdev::proto::kCaptureBufferDefault), admit,
                                  toCaptureFilter(r.filter));
  if (!id) {
    if (reserved) ctx_.quota->captureDone(peer.uid, reserved);
    return fail(id.error());
  }
  capture_conn_[*id] = CaptureOwner{peer.conn, peer.uid, reserved};
  vdev::proto::CaptureMsg m;
  m.id = *id;
  m.snaplen = ctx_.dp->captureGet(*id)->snaplen();
  return m;
}

datapath::Capture* DaemonControl::ownCapture(uint32_t id, const vdev::proto::PeerCred& peer,
                                            vdev::proto::CaptureMsg& m) {
  auto it = capture_conn_.find(id);
  if (it == capture_conn_.end() || it->second.conn != peer.conn) return nullptr;
  datapath::Capture* cap = ctx_.dp->captureGet(id);
  if (!cap) return nullptr;
  m.id = id;
  // ended first: every frame copied before the port went is read after.
  m.ended = cap->ended();
  return cap;
}

vdev::proto::ErrorReply DaemonControl::noCapture(uint32_t id) {
  return vdev::proto::ErrorReply{ENOENT, "no capture " + std::to_string(id) + " of this connection"};
}

vdev::proto::Reply DaemonControl::captureRead(uint32_t id, const vdev::proto::PeerCred& peer) {
  vdev::proto::CaptureMsg m;
  datapath::Capture* cap = ownCapture(id, peer, m);
  if (!cap) return noCapture(id);
  // As many frames as fit one reply datagram, with room for the header
  // and the other attributes.
  constexpr size_t kBudget = vdev::proto::kMaxMessageSize - 256;
  m.frames.reserve(kBudget);
  cap->read([&](uint64_t t, uint32_t len, uint8_t dir, std::span<const uint8_t> bytes) {
    const size_t need = sizeof(vdev::proto::CaptureRecordHeader) + ((bytes.size() + 3) & ~size_t{3});
    if (m.frames.size() + need > kBudget) return false;
    vdev::proto::appendCaptureRecord(m.frames, t, len, static_cast<vdev::proto::CaptureDir>(dir), bytes);
    return true;
  });
  m.taken = cap->taken();
  m.drops = cap->drops();
  return m;
}

vdev::proto::Reply DaemonControl::captureStop(uint32_t id, const vdev::proto::PeerCred& peer) {
  vdev::proto::CaptureMsg m;
  datapath::Capture* cap = ownCapture(id, peer, m);
  if (!cap) return noCapture(id);
  m.taken = cap->taken();
  m.drops = cap->drops();
  endCapture(capture_conn_.find(id));
  return m;
}

void DaemonControl::endCapture(std::map<uint32_t, CaptureOwner>::iterator it) {
  ctx_.dp->captureStop(it->first);
  if (ctx_.quota && it->second.bytes) ctx_.quota->captureDone(it->second.uid, it->second.bytes);
  capture_conn_.erase(it);
}

void DaemonControl::disconnected(uint64_t conn) {
  for (auto it = capture_conn_.begin(); it != capture_conn_.end();) {
    if (it->second.conn == conn) {
      endCapture(it++);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<const std::string> DaemonControl::metricsText() { return metrics_.recent(); }

std::string DaemonControl::renderMetrics() {
  // In the order vdevctl asks: STATS_GET, then INFO_GET.
  const vdev::proto::StatsReply stats = toStatsReply(*stats_.fresh(), *ctx_.state, "");
  const vdev::proto::InfoMsg i = info();
  return vdev::proto::prometheusText(stats, &i);
}

vdev::proto::Reply DaemonControl::handle(const vdev::proto::Request& req, const vdev::proto::PeerCred& peer) {
  using namespace vdev::proto;
  // Every request of a member, reads too, is the control thread's time;
  // but the reads and the stop of a capture it runs: vdevctl capture reads
  // again at once while frames wait (and every 10 ms when none do), as
  // fast as the port sends, and its capture's buffer, not the rate, bounds
  // what each read costs; a refused stop would only keep the capture's
  // memory longer. A read or stop of no capture of the connection counts.
  auto ownCaptureId = [&](uint32_t id) {
    auto it = capture_conn_.find(id);
    return it != capture_conn_.end() && it->second.conn == peer.conn;
  };
  bool own_capture = false;
  if (const auto* r = std::get_if<CaptureReadRequest>(&req.body)) own_capture = ownCaptureId(r->id);
  if (const auto* r = std::get_if<CaptureStopRequest>(&req.body)) own_capture = ownCaptureId(r->id);
  if (ctx_.quota && !own_capture)
    if (auto st = ctx_.quota->takeRequest(peer.uid, datapath::monotonicNs()); !st) return fail(st.error());
  return std::visit(
      [&](const auto& b) -> Reply {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, PortAddRequest>) {
          return portAdd(b, peer);
        } else if constexpr (std::is_same_v<T, PortDelRequest>) {
          return portDel(b, peer);
        } else if constexpr (std::is_same_v<T, PortSetRequest>) {
          return portSet(b, peer);
        } else if constexpr (std::is_same_v<T, PortGetRequest>) {
          const auto s = stats_.fresh();
          PortList l;
          for (const auto& p : s->ports)
            if (!p.punt && (b.name.empty() || p.name == b.name)) l.ports.push_back(toPortInfo(p, *ctx_.state));
          for (const auto& [name, p] : parked_)
            if (b.name.empty() || name == b.name) l.ports.push_back(parkedInfo(name, p));
          if (!b.name.empty() && l.ports.empty()) return ErrorReply{ENOENT, "no port " + b.name};
          return l;
        } else if constexpr (std::is_same_v<T, StatsGetRequest>) {
          StatsReply r = toStatsReply(*stats_.fresh(), *ctx_.state, b.name);
          if (!b.name.empty() && r.ports.empty()) return ErrorReply{ENOENT, "no port " + b.name};
          return r;
        } else if constexpr (std::is_same_v<T, FdbGetRequest>) {
          return fdbGet();
        } else if constexpr (std::is_same_v<T, FdbAddRequest>) {
          // A static entry takes a MAC from whatever port has it: the whole
          // switch's business, root's.
          if (peer.uid != 0) return denied(peer, "only root may add MAC table entries");
          if (auto st = ctx_.dp->fdbAdd(b.mac.data(), b.port, b.vid); !st) return fail(st.error());
          return Ack{};
        } else if constexpr (std::is_same_v<T, FdbDelRequest>) {
          if (peer.uid != 0) return denied(peer, "only root may delete MAC table entries");
          if (auto st = ctx_.dp->fdbDel(b.mac.data(), b.vid); !st) return fail(st.error());
          return Ack{};
        } else if constexpr (std::is_same_v<T, InfoGetRequest>) {
          return info();
        } else if constexpr (std::is_same_v<T, CaptureStartRequest>) {
          return captureStart(b, peer);
        } else if constexpr (std::is_same_v<T, CaptureReadRequest>) {
          return captureRead(b.id, peer);
        } else if constexpr (std::is_same_v<T, CaptureStopRequest>) {
          return captureStop(b.id, peer);
        } else {
          return ErrorReply{EOPNOTSUPP, "unsupported command"};
        }
      },
      req.body);
}

}  // namespace vdev::daemon
