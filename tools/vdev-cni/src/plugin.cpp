// vdev-cni: the commands. See plugin.h and docs/containers.md.
#include "plugin.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#include "base/version.h"
#include "delegate.h"
#include "proto/client.h"
#include "rtnl/link.h"
#include "rtnl/netns_ip.h"

namespace vdev::cni {

namespace {

// ----------------------------------------------------------------- naming

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string base32(uint64_t v, size_t chars) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string s;
  for (size_t i = 0; i < chars; ++i) {
    s += kAlphabet[v >> 59];  // the top 5 bits first
    v <<= 5;
  }
  return s;
}

// --------------------------------------------------------------- vdevd

// A failed call to vdevd as a CNI error. What may clear up by itself (vdevd
// restarting, too many clients, a timeout) is "try again later" (11);
// anything vdevd refused carries its own message (100).
[[noreturn]] void vdevdFailed(const vdev::Error& e, const std::string& socket) {
  switch (e.err) {
    case ETIMEDOUT:
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case EBUSY:
      throw CniError(kErrTryAgainLater, "vdevd at " + socket + " did not answer: " + e.message());
    default:
      throw CniError(kErrVdevd, "vdevd: " + e.message());
  }
}

// Connects to vdevd. Not running (no socket, nobody listening): `absent`
// (11, try again later; STATUS: 50). Anything else: 5 (I/O failure), with
// the socket's path in the message.
vdev::proto::ControlClient connectVdevd(const NetConf& c, unsigned absent = kErrTryAgainLater) {
  auto cl = vdev::proto::ControlClient::connect(c.socket);
  if (cl) return std::move(*cl);
  const int e = cl.error().err;
  if (e == ENOENT || e == ECONNREFUSED || e == EAGAIN)
    throw CniError(absent, "vdevd is not running: no vdevd listens on " + c.socket,
                   cl.error().message());
  throw CniError(kErrIo, "cannot connect to vdevd at " + c.socket + ": " + std::strerror(e),
                 cl.error().message());
}

// The veths' MTU: the configuration's "mtu"; with "uplink", that port's MTU
// unless "mtu" is given, which may then not be larger (the container's
// longer frames to other hosts would be dropped as oversize), as flannel
// sizes its containers from its VXLAN device.
std::optional<uint32_t> vethMtu(vdev::proto::ControlClient& cl, const NetConf& c) {
  if (!c.uplink) return c.mtu;
  auto up = cl.portGet(*c.uplink);
  if (!up) {
    if (up.error().err == ENOENT)
      throw CniError(kErrInvalidConfig, "uplink " + *c.uplink + " is not a port of vdevd",
                     "add it first: vdevctl port add " + *c.uplink);
    vdevdFailed(up.error(), c.socket);
  }
  if (!up->mtu) throw CniError(kErrInvalidConfig, "uplink " + *c.uplink + " has no device (no MTU to take)");
  if (c.mtu && *c.mtu > up->mtu)
    throw CniError(kErrInvalidConfig,
                   "mtu " + std::to_string(*c.mtu) + " is larger than uplink " + *c.uplink + "'s MTU " +
                       std::to_string(up->mtu),
                   "frames that long to other hosts would be dropped; leave mtu out to take the uplink's");
  return c.mtu ? *c.mtu : up->mtu;
}

// Undo steps of a half-done ADD, run in reverse order unless dismissed.
class Rollback {
 public:
  ~Rollback() {
    if (dismissed_) return;
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
      try {
        (*it)();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "vdev-cni: cleanup after a failed ADD: %s\n", e.what());
      }
    }
  }
  void add(std::function<void()> f) { steps_.push_back(std::move(f)); }
  void dismiss() { dismissed_ = true; }

 private:
  std::vector<std::function<void()>> steps_;
  bool dismissed_ = false;
};

// Deletes the port; true if it was there. ENOENT (no such port) is success:
// DEL must succeed when things are already gone.
bool deletePort(vdev::proto::ControlClient& cl, const NetConf& c, const std::string& port) {
  if (auto st = cl.portDel(port); !st) {
    if (st.error().err == ENOENT) return false;
    vdevdFailed(st.error(), c.socket);
  }
  return true;
}

void print(const Json& j) {
  const std::string s = dumpJson(j, 4) + "\n";
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0)
    throw CniError(kErrIo, std::string("write the result to stdout: ") + std::strerror(errno));
}

std::optional<std::string> defaultGateway(const Result& r, bool v6) {
  for (const auto& ip : r.ips)
    if (ip.isV6() == v6 && ip.gateway) return ip.gateway;
  return std::nullopt;
}

// Appends what `add` has that `base` has not: DNS from a chained plugin's
// prevResult and from IPAM or the configuration together.
void mergeDns(Dns& base, const Dns& add) {
  const auto append = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
    for (const auto& s : from)
      if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  };
  append(base.nameservers, add.nameservers);
  if (!add.domain.empty()) base.domain = add.domain;
  append(base.search, add.search);
  append(base.options, add.options);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The container interface's MAC: runtimeConfig.mac (the "mac" capability)
// over CNI_ARGS MAC= over the configuration's "mac".
std::optional<vdev::proto::Mac> containerMac(const NetConf& c, const Env& env) {
  std::optional<std::string> text = c.mac;
  if (auto it = env.argPairs.find("MAC"); it != env.argPairs.end()) {
    if (!vdev::parseMac(it->second))
      throw CniError(kErrInvalidEnv, "CNI_ARGS: MAC=" + it->second + " is not a MAC address");
    text = it->second;
  }
  if (c.runtimeMac) text = c.runtimeMac;
  if (!text) return std::nullopt;
  const auto mac = vdev::parseMac(*text);
  if (auto st = vdev::proto::validateUnicastMac(*mac, "MAC"); !st)
    throw CniError(kErrInvalidEnv, st.error().what);
  return mac;
}

// ------------------------------------------------- the container's namespace

// rtnl's answer, or the CNI error for "something in the container failed"
// (102) with rtnl's message: the operation, the namespace and the errno.
template <typename T>
T inContainer(vdev::Result<T> r) {
  if (!r) throw CniError(kErrContainer, r.error().message());
  return std::move(r.value());
}
void inContainer(const vdev::Status& st) {
  if (!st) throw CniError(kErrContainer, st.error().message());
}

// Addresses and routes are set through one netlink socket inside the
// namespace (rtnl/netns_ip.h); the plugin itself never changes namespace.
vdev::rtnl::NetnsIp openNetns(const std::string& path) {
  return inContainer(vdev::rtnl::NetnsIp::open(vdev::rtnl::NetnsRef::byPath(path)));
}

// The interface `name` in the namespace, or nullopt if there is none.
std::optional<vdev::rtnl::LinkState> findLink(vdev::rtnl::NetnsIp& ns, const std::string& name) {
  auto l = ns.link(name);
  if (!l && l.error().err == ENODEV) return std::nullopt;
  return inContainer(std::move(l));
}

// A CNI route through `ifindex`, via `gw` when given (else the route's own
// gateway; without either a link-scope route).
vdev::rtnl::Route toRoute(const Route& rt, int ifindex, const std::optional<std::string>& gw) {
  vdev::rtnl::Route r;
  r.dst = rt.dst;
  r.ifindex = ifindex;
  r.gateway = gw;
  if (rt.table) r.table = *rt.table;
  if (rt.scope) r.scope = uint8_t(*rt.scope);
  r.priority = rt.priority;
  r.mtu = rt.mtu;
  r.advmss = rt.advmss;
  return r;
}

// ---------------------------------------------------------------- commands

// spoofCheck: the port may send only from IPAM's addresses (PORT_SET, so
// vdevd's state file keeps them with the port).
void lockAddresses(vdev::proto::ControlClient& cl, const std::string& socket, const std::string& port,
                   const std::vector<IpConfig>& ips) {
  vdev::proto::PortSetRequest set;
  set.name = port;
  std::vector<vdev::IpAddr>& allowed = set.limits.allowed_ips.emplace();
  for (const IpConfig& ip : ips) {
    const std::string addr = ip.address.substr(0, ip.address.find('/'));
    const auto a = vdev::parseIp(addr);
    if (!a) throw CniError(kErrIpamExec, "spoofCheck: IPAM's address '" + ip.address + "' is not an IP address");
    if (std::find(allowed.begin(), allowed.end(), *a) == allowed.end()) allowed.push_back(*a);
  }
  if (auto st = vdev::proto::validate(set); !st)
    throw CniError(kErrIpamExec, "spoofCheck: IPAM's addresses: " + st.error().what);
  if (auto st = cl.portSet(set); !st) vdevdFailed(st.error(), socket);
}

// CNI_NETNS as vdevd takes it from this caller. vdevd takes a namespace
// path from root only (a member's path would be opened as root): a plugin
// that runs as a --group member gives /run/netns/NAME as a name and
// /proc/PID/ns/net as a pid; any other path is sent as it is, and vdevd
// refuses it for a member.
void setPeerNetns(vdev::proto::CreateOptions& create, const std::string& path) {
  if (::geteuid() != 0) {
    const std::string run = "/run/netns/";
    if (path.rfind(run, 0) == 0 && path.find('/', run.size()) == std::string::npos && path.size() > run.size()) {
      create.peer_netns_name = path.substr(run.size());
      return;
    }
    unsigned pid = 0;
    int end = 0;
    if (std::sscanf(path.c_str(), "/proc/%u/ns/net%n", &pid, &end) == 1 && size_t(end) == path.size() && pid) {
      create.peer_netns_pid = pid;
      return;
    }
  }
  create.peer_netns_path = path;
}

void cmdAdd(const Env& env, const NetConf& c) {
  const std::string port = portName(c.name, env.containerId, env.ifname);
  // The namespace first: nothing is made for a container that is not there.
  vdev::rtnl::NetnsIp ns = openNetns(env.netns);
  if (findLink(ns, env.ifname))
    throw CniError(kErrContainer, "interface " + env.ifname + " already exists in " + env.netns);
  auto mac = containerMac(c, env);
  // macspoofchk, spoofCheck: the port may send only the container's MAC, so
  // the plugin must know it before the veth exists.
  const bool lockMac = c.macSpoofCheck || c.spoofCheck;
  if (lockMac && !mac) mac = vdev::rtnl::randomMac();
  std::optional<Delegate> ipam;
  std::string ipamVersion;
  if (!c.ipamType.empty()) {  // found and asked before anything is made
    ipam.emplace(c.ipamType, env);
    ipamVersion = ipam->negotiate(c.cniVersion);
  }

  auto cl = connectVdevd(c);
  const std::optional<uint32_t> mtu = vethMtu(cl, c);
  vdev::proto::PortAddRequest req;
  req.name = port;
  req.type = c.portType;
  req.xdp_mode = vdev::proto::parseXdpMode(c.xdpMode).value_or(vdev::proto::XdpMode::kAuto);
  vdev::proto::CreateOptions create;
  setPeerNetns(create, env.netns);
  create.peer_ifname = env.ifname;
  create.peer_mac = mac;
  create.mtu = mtu;
  req.create = create;
  req.tag = portTag(c.name);  // what GC recognises this network's ports by
  if (c.portIsolation) req.isolated = true;
  req.limits = c.limits;  // only what the configuration gives is sent
  if (lockMac) req.limits.allowed_mac = mac;
  if (c.spoofCheck) req.limits.ra_guard = req.limits.dhcp_guard = true;  // a container is neither
  if (auto st = cl.portAdd(req); !st) {
    if (st.error().err == EEXIST)
      throw CniError(kErrVdevd, "vdevd: " + st.error().message(),
                     "port " + port + " (network " + c.name + ", container " + env.containerId +
                         ", interface " + env.ifname +
                         ") already exists: this attachment is already added; DEL it first");
    vdevdFailed(st.error(), c.socket);
  }
  Rollback undo;
  undo.add([&] {
    // A fresh connection: the first may be the thing that failed.
    auto again = vdev::proto::ControlClient::connect(c.socket);
    if (again) (void)again->portDel(port);
  });

  // Not the first plugin of a conflist: the result is prevResult's plus
  // this plugin's interfaces, addresses and routes (spec: "Chained
  // plugins"). prevResult was decoded and checked with the configuration,
  // before anything was made.
  Result r = c.prevResult.value_or(Result{});
  const int hostIdx = int(r.interfaces.size());
  {
    auto host = vdev::rtnl::getLink(port);
    if (!host)
      throw CniError(kErrContainer, "host end of the veth: " + host.error().message());
    const auto peer = findLink(ns, env.ifname);
    if (!peer)
      throw CniError(kErrContainer, "vdevd made port " + port + " but " + env.ifname +
                                        " is not in " + env.netns);
    r.interfaces.push_back({port, vdev::formatMac(host->mac), uint32_t(host->mtu), ""});
    r.interfaces.push_back({env.ifname, vdev::formatMac(peer->mac), uint32_t(peer->mtu), env.netns});
  }
  const int sandboxIdx = hostIdx + 1;

  if (ipam) {
    Result ir = ipam->add(c.raw, ipamVersion);
    undo.add([&, v = ipamVersion] { ipam->run(Command::kDel, c.raw, v); });
    if (c.spoofCheck && !ir.ips.empty()) lockAddresses(cl, c.socket, port, ir.ips);  // before they are usable
    const int ifindex = inContainer(ns.link(env.ifname)).ifindex;
    for (auto& ip : ir.ips) {
      ip.interface = sandboxIdx;
      inContainer(ns.addAddress(ifindex, ip.address));
    }
    for (const auto& rt : ir.routes) {
      const bool v6 = rt.dst.find(':') != std::string::npos;
      inContainer(ns.addRoute(toRoute(rt, ifindex, rt.gw ? rt.gw : defaultGateway(ir, v6))));
    }
    r.ips.insert(r.ips.end(), ir.ips.begin(), ir.ips.end());
    r.routes.insert(r.routes.end(), ir.routes.begin(), ir.routes.end());
    if (!c.dns) mergeDns(r.dns, ir.dns);
  }
  // The configuration's DNS over IPAM's, as with the bridge plugin.
  if (c.dns) mergeDns(r.dns, *c.dns);
  print(encodeResult(r, c.cniVersion));
  undo.dismiss();
}

void cmdDel(const Env& env, const NetConf& c) {
  const std::string port = portName(c.name, env.containerId, env.ifname);
  // The port first: while vdevd cannot be reached (11, the runtime retries)
  // the container keeps its address, so IPAM must not hand it out again.
  auto cl = connectVdevd(c);
  if (!deletePort(cl, c, port) && vdev::rtnl::linkIsManaged(port)) {
    // vdevd does not know the port (its state was lost) but the veth vdev
    // made is still there: remove it, so a later ADD can use the name.
    if (auto st = vdev::rtnl::deleteManagedLink(port); !st && st.error().err != ENODEV)
      throw CniError(kErrContainer, "delete leftover veth " + port + ": " + st.error().message());
  }
  if (!c.ipamType.empty()) {
    Delegate ipam(c.ipamType, env);
    ipam.run(Command::kDel, c.raw, ipam.negotiate(c.cniVersion));
  }
}

void cmdCheck(const Env& env, const NetConf& c) {
  if (!versionAtLeast(c.cniVersion, "0.4.0"))
    throw CniError(kErrIncompatibleVersion, "config version does not allow CHECK",
                   "cniVersion " + c.cniVersion + "; CHECK exists from 0.4.0");
  if (!c.prevResult) throw CniError(kErrInvalidConfig, "CHECK needs prevResult");
  const Result& prev = *c.prevResult;
  const std::string port = portName(c.name, env.containerId, env.ifname);

  if (!c.ipamType.empty()) {
    Delegate ipam(c.ipamType, env);
    ipam.run(Command::kCheck, c.raw, ipam.negotiate(c.cniVersion));
  }

  auto cl = connectVdevd(c);
  auto info = cl.portGet(port);
  if (!info) {
    if (info.error().err == ENOENT)
      throw CniError(kErrCheckFailed, "port " + port + " is not attached to vdevd",
                     info.error().message());
    vdevdFailed(info.error(), c.socket);
  }
  if (info->type != c.portType)
    throw CniError(kErrCheckFailed, std::string("port ") + port + " is a " +
                                        vdev::proto::portTypeName(info->type) + ", not a " +
                                        vdev::proto::portTypeName(c.portType));
  if (!info->live) throw CniError(kErrCheckFailed, "port " + port + " is down in vdevd");

  int hostIdx = -1, sandboxIdx = -1;
  for (size_t i = 0; i < prev.interfaces.size(); ++i) {
    const auto& itf = prev.interfaces[i];
    if (itf.sandbox.empty() && itf.name == port) hostIdx = int(i);
    if (itf.name == env.ifname && itf.sandbox == env.netns) sandboxIdx = int(i);
  }
  if (hostIdx < 0)
    throw CniError(kErrCheckFailed, "prevResult has no host interface " + port);
  if (sandboxIdx < 0)
    throw CniError(kErrCheckFailed,
                   "prevResult has no interface " + env.ifname + " in sandbox " + env.netns);

  vdev::rtnl::NetnsIp ns = openNetns(env.netns);
  const auto link = findLink(ns, env.ifname);
  if (!link) throw CniError(kErrCheckFailed, "no interface " + env.ifname + " in " + env.netns);
  const auto& want = prev.interfaces[size_t(sandboxIdx)];
  const std::string mac = vdev::formatMac(link->mac);
  if (!want.mac.empty() && lower(want.mac) != mac)
    throw CniError(kErrCheckFailed, "interface " + env.ifname + " has MAC " + mac +
                                        ", prevResult says " + want.mac);
  if (c.mtu && uint32_t(link->mtu) != *c.mtu)
    throw CniError(kErrCheckFailed, "interface " + env.ifname + " has MTU " +
                                        std::to_string(link->mtu) + ", the configuration says " +
                                        std::to_string(*c.mtu));
  if (!link->up) throw CniError(kErrCheckFailed, "interface " + env.ifname + " is down");
  // prevResult is the whole chain's result: only the addresses of this
  // plugin's interface are checked on it, and the default gateway comes from
  // them. A route may be another plugin's: in a chain (prevResult has other
  // interfaces too) one that is not through this interface may be on any.
  Result own;
  for (const auto& ip : prev.ips) {
    if (ip.interface && *ip.interface != sandboxIdx) continue;
    own.ips.push_back(ip);
    if (!inContainer(ns.hasAddress(link->ifindex, ip.address)))
      throw CniError(kErrCheckFailed,
                     "address " + ip.address + " is missing on " + env.ifname + " in " + env.netns);
  }
  const bool chained = prev.interfaces.size() > 2;
  for (const auto& rt : prev.routes) {
    const bool v6 = rt.dst.find(':') != std::string::npos;
    const auto gw = rt.gw ? rt.gw : defaultGateway(own, v6);
    if (!inContainer(ns.hasRoute(toRoute(rt, link->ifindex, gw))) &&
        !(chained && inContainer(ns.hasRoute(toRoute(rt, 0, rt.gw)))))
      throw CniError(kErrCheckFailed, "route " + rt.dst + (gw ? " via " + *gw : "") +
                                          " is missing on " + env.ifname + " in " + env.netns);
  }
}

void cmdGc(const Env& env, const NetConf& c) {
  if (!versionAtLeast(c.cniVersion, "1.1.0"))
    throw CniError(kErrIncompatibleVersion, "config version does not allow GC",
                   "cniVersion " + c.cniVersion + "; GC exists from 1.1.0");
  if (!c.validAttachments)
    throw CniError(kErrInvalidConfig, "GC needs cni.dev/valid-attachments");
  std::set<std::string> keep;
  for (const auto& a : *c.validAttachments) keep.insert(portName(c.name, a.containerId, a.ifname));
  // This network's ports are the ones vdevd says an ADD of this network
  // made (their PORT_TAG), not those whose name happens to share its
  // 15-bit prefix: two networks whose prefixes collide keep their ports.
  const std::string tag = portTag(c.name);

  auto cl = connectVdevd(c);
  auto ports = cl.portList();
  if (!ports) vdevdFailed(ports.error(), c.socket);
  for (const auto& p : *ports) {
    // Only this network's veths and netkits: never a tap, an uplink,
    // another network's port, or one made before ports had tags (left for
    // DEL).
    const bool pair = p.type == vdev::proto::PortType::kVeth || p.type == vdev::proto::PortType::kNetkit;
    if (!pair || p.tag != tag || keep.count(p.name)) continue;
    std::fprintf(stderr, "vdev-cni: GC: deleting port %s (no valid attachment)\n", p.name.c_str());
    deletePort(cl, c, p.name);
  }
  if (!c.ipamType.empty()) {
    Delegate ipam(c.ipamType, env);
    if (ipam.speaks(c.cniVersion)) ipam.run(Command::kGc, c.raw, c.cniVersion);
  }
}

void cmdStatus(const Env& env, const NetConf& c) {
  if (!versionAtLeast(c.cniVersion, "1.1.0"))
    throw CniError(kErrIncompatibleVersion, "config version does not allow STATUS",
                   "cniVersion " + c.cniVersion + "; STATUS exists from 1.1.0");
  auto cl = connectVdevd(c, kErrPluginNotAvailable);
  if (auto info = cl.info(); !info)
    throw CniError(kErrPluginNotAvailable, "vdevd at " + c.socket + " does not answer",
                   info.error().message());
  if (!c.ipamType.empty()) {
    Delegate ipam(c.ipamType, env);
    if (ipam.speaks(c.cniVersion)) ipam.run(Command::kStatus, c.raw, c.cniVersion);
  }
}

std::string readStdin() {
  std::string s;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw CniError(kErrIo, std::string("reading the network configuration from stdin: ") +
                                 std::strerror(errno));
    if (n == 0) return s;
    s.append(buf, size_t(n));
  }
}

}  // namespace

std::string portTag(const std::string& network) {
  // Network names are libcni identifiers (alphanumerics, '_', '.', '-');
  // one that does not fit PORT_TAG is cut (and then compared cut).
  return ("cni:" + network).substr(0, vdev::proto::kPortTagMax);
}

std::string portPrefix(const std::string& network) {
  return kPortPrefix + base32(fnv1a(network), 3);
}

std::string portName(const std::string& network, const std::string& containerId,
                     const std::string& ifname) {
  std::string key = network;
  key += '\0';
  key += containerId;
  key += '\0';
  key += ifname;
  return portPrefix(network) + base32(fnv1a(key), 10);
}

int run() {
  std::string version;  // the configuration's, for the error reply
  try {
    const char* cmd = std::getenv("CNI_COMMAND");
    if (!cmd || !*cmd) {
      // Run by hand: say what this is (as libcni's plugins do), exit 0.
      std::string v;
      for (const auto& s : supportedVersions()) v += (v.empty() ? "" : ", ") + s;
      std::fprintf(stderr,
                   "vdev-cni %s: the CNI plugin of vdev (docs/containers.md)\n"
                   "CNI protocol versions supported: %s\n",
                   VDEV_VERSION, v.c_str());
      return 0;
    }
    // stdin before the environment is checked, so that even an error about
    // the environment answers in the configuration's cniVersion. VERSION may
    // come with no stdin at all (a person at a terminal).
    const std::string input =
        std::string_view(cmd) == "VERSION" && ::isatty(0) ? std::string() : readStdin();
    version = peekVersion(input);
    const Env env = readEnv([](const char* k) { return std::getenv(k); });
    if (env.command == Command::kVersion) {
      print(encodeVersionInfo(version));
      return 0;
    }
    const NetConf c = parseNetConf(input, env.command);
    switch (env.command) {
      case Command::kAdd: cmdAdd(env, c); break;
      case Command::kDel: cmdDel(env, c); break;
      case Command::kCheck: cmdCheck(env, c); break;
      case Command::kGc: cmdGc(env, c); break;
      case Command::kStatus: cmdStatus(env, c); break;
      case Command::kVersion: break;
    }
    return 0;
  } catch (const CniError& e) {
    const std::string s = dumpJson(encodeError(e, isSupported(version) ? version : kLatestVersion), 4);
    std::printf("%s\n", s.c_str());
    std::fprintf(stderr, "vdev-cni: %s%s%s\n", e.msg.c_str(), e.details.empty() ? "" : ": ",
                 e.details.c_str());
  } catch (const std::exception& e) {
    // Not expected (e.g. out of memory): still an error the runtime can read.
    const CniError ce(kErrIo, std::string("vdev-cni: ") + e.what());
    std::printf("%s\n", dumpJson(encodeError(ce, isSupported(version) ? version : kLatestVersion), 4).c_str());
  }
  std::fflush(stdout);
  return 1;
}

}  // namespace vdev::cni
