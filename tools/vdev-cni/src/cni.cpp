// The CNI specification layer: see cni.h.
#include "cni.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>

#include "base/parse.h"
#include "proto/codec.h"  // validateUnicastMac (and base/mac.h)
#include "proto/protocol.h"

namespace vdev::cni {

namespace {

// ------------------------------------------------------------ JSON access
// The configuration is untrusted input: every field is checked for its JSON
// type, and a mismatch names the field (kErrDecode), like the decoding error
// of Go's encoding/json that libcni-based plugins return.

[[noreturn]] void typeError(std::string_view where, std::string_view expected) {
  throw CniError(kErrDecode, "decoding " + std::string(where) + ": expected " +
                                 std::string(expected));
}

const Json* field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> optString(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) typeError(std::string(where) + "." + key, "a string");
  return v->get<std::string>();
}

std::optional<bool> optBool(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) typeError(std::string(where) + "." + key, "true or false");
  return v->get<bool>();
}

std::string reqString(const Json& obj, const char* key, std::string_view where) {
  auto s = optString(obj, key, where);
  if (!s) throw CniError(kErrDecode, "decoding " + std::string(where) + ": \"" + key + "\" is missing");
  return *s;
}

std::optional<int64_t> optInt(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) typeError(std::string(where) + "." + key, "an integer");
  return v->get<int64_t>();
}

std::optional<uint32_t> optU32(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned() || v->get<uint64_t>() > UINT32_MAX)
    typeError(std::string(where) + "." + key, "an unsigned 32-bit integer");
  return uint32_t(v->get<uint64_t>());
}

std::optional<uint64_t> optU64(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned()) typeError(std::string(where) + "." + key, "an unsigned 64-bit integer");
  return v->get<uint64_t>();
}

std::vector<std::string> optStrings(const Json& obj, const char* key, std::string_view where) {
  std::vector<std::string> out;
  const Json* v = field(obj, key);
  if (!v) return out;
  if (!v->is_array()) typeError(std::string(where) + "." + key, "an array of strings");
  for (const Json& e : *v) {
    if (!e.is_string()) typeError(std::string(where) + "." + key, "an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

const Json* optObject(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (v && !v->is_object()) typeError(std::string(where) + "." + key, "an object");
  return v;
}

const Json* optArray(const Json& obj, const char* key, std::string_view where) {
  const Json* v = field(obj, key);
  if (v && !v->is_array()) typeError(std::string(where) + "." + key, "an array");
  return v;
}

// An object of vdev-cni's own whose keys are all known: a misspelt limit
// ("broadcastPPS") would otherwise be no limit at all, silently.
void onlyKeys(const Json& obj, std::string_view where, std::initializer_list<std::string_view> keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    std::string known;
    for (std::string_view n : keys) known += (known.empty() ? "" : ", ") + std::string(n);
    throw CniError(kErrInvalidConfig, std::string(where) + ": unknown key \"" + k + "\" (" + known + ")");
  }
}

// bridge CNI's VLAN keys, with its meaning (docs/containers.md): "vlan" N
// (0: none) makes the port an access port of VLAN N; "vlanTrunk" [{"id":
// N}, {"minID": A, "maxID": B}] carries those VLANs tagged; with either,
// "preserveDefaultVlan" (default true) keeps VLAN 1 on the port, untagged
// (its native VLAN on a trunk without "vlan"), as bridge CNI leaves the
// bridge's default PVID 1 in place. Neither: no VLAN settings.
void decodeVlan(const Json& j, vdev::proto::LimitOptions& l) {
  const char* w = "the network configuration";
  auto vid = [](const Json& v, const std::string& where, uint32_t lo) {
    if (!v.is_number_integer() || v.get<int64_t>() < int64_t(lo) || v.get<int64_t>() > vdev::kVidMax)
      throw CniError(kErrInvalidConfig, where + ": " + dumpJson(v) + " is not a VLAN ID (" + std::to_string(lo) +
                                            ".." + std::to_string(vdev::kVidMax) + ")");
    return uint16_t(v.get<int64_t>());
  };
  uint16_t access = 0;
  if (const Json* v = field(j, "vlan")) access = vid(*v, "vlan", 0);
  vdev::VidSet trunk;
  const Json* t = optArray(j, "vlanTrunk", w);
  if (t) {
    for (const Json& e : *t) {
      if (!e.is_object()) typeError("vlanTrunk[]", "an object");
      onlyKeys(e, "vlanTrunk[]", {"id", "minID", "maxID"});
      const Json* id = field(e, "id");
      const Json* lo = field(e, "minID");
      const Json* hi = field(e, "maxID");
      if (id && !lo && !hi) {
        trunk.set(vid(*id, "vlanTrunk[].id", 1));
      } else if (!id && lo && hi) {
        const uint16_t a = vid(*lo, "vlanTrunk[].minID", 1), b = vid(*hi, "vlanTrunk[].maxID", 1);
        if (a > b)
          throw CniError(kErrInvalidConfig, "vlanTrunk[]: minID " + std::to_string(a) + " is greater than maxID " +
                                                std::to_string(b));
        for (uint32_t x = a; x <= b; x++) trunk.set(x);
      } else {
        throw CniError(kErrInvalidConfig, "vlanTrunk[]: give \"id\", or \"minID\" and \"maxID\" together");
      }
    }
  }
  const bool preserve = optBool(j, "preserveDefaultVlan", w).value_or(true);
  if (!access && trunk.none()) return;  // no VLAN settings: VLAN 1, untagged
  if (access && trunk[access])
    throw CniError(kErrInvalidConfig, "vlan " + std::to_string(access) + " is in vlanTrunk too: it is either the "
                                          "port's untagged VLAN or one of its tagged ones");
  vdev::VlanConfig v;
  v.tagged = trunk;
  if (access) {
    v.pvid = access;
    v.untagged.set(access);
  }
  if (preserve && !trunk[vdev::kVidDefault]) {
    v.untagged.set(vdev::kVidDefault);
    if (!v.pvid) v.pvid = vdev::kVidDefault;
  }
  l.vlan = v;
}

// stormControl and ingressPolicer: what the container may send into the
// switch (docs/containers.md). Every field optional, a non-negative integer
// (0: no limit); a field left out is vdevd's default.
void decodeLimits(const Json& j, vdev::proto::LimitOptions& l) {
  const char* w = "the network configuration";
  if (const Json* sc = optObject(j, "stormControl", w)) {
    onlyKeys(*sc, "stormControl", {"broadcastPps", "multicastPps", "unknownUnicastPps"});
    l.storm_bcast = optU32(*sc, "broadcastPps", "stormControl");
    l.storm_mcast = optU32(*sc, "multicastPps", "stormControl");
    l.storm_unknown = optU32(*sc, "unknownUnicastPps", "stormControl");
  }
  if (const Json* ip = optObject(j, "ingressPolicer", w)) {
    onlyKeys(*ip, "ingressPolicer", {"pps", "bps", "burstMs"});
    l.police_pps = optU64(*ip, "pps", "ingressPolicer");
    l.police_bps = optU64(*ip, "bps", "ingressPolicer");
    l.police_burst_ms = optU32(*ip, "burstMs", "ingressPolicer");
    if (l.police_burst_ms == 0u)
      throw CniError(kErrInvalidConfig,
                     "ingressPolicer.burstMs: 0 is no burst (at least 1 ms; leave it out for vdevd's default)");
  }
}

Dns decodeDns(const Json& j, std::string_view where) {
  Dns d;
  d.nameservers = optStrings(j, "nameservers", where);
  d.domain = optString(j, "domain", where).value_or("");
  d.search = optStrings(j, "search", where);
  d.options = optStrings(j, "options", where);
  return d;
}

Json encodeDns(const Dns& d) {
  Json j = Json::object();
  if (!d.nameservers.empty()) j["nameservers"] = d.nameservers;
  if (!d.domain.empty()) j["domain"] = d.domain;
  if (!d.search.empty()) j["search"] = d.search;
  if (!d.options.empty()) j["options"] = d.options;
  return j;
}

bool isAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// libcni's rule for network names and container IDs.
bool validIdentifier(std::string_view s) {
  if (s.empty() || !isAlnum(s[0])) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return isAlnum(c) || c == '_' || c == '.' || c == '-'; });
}

std::string checkMac(const std::string& text, std::string_view what, unsigned code) {
  const auto mac = vdev::parseMac(text);
  if (!mac) throw CniError(code, std::string(what) + ": \"" + text + "\" is not a MAC address");
  if (auto st = vdev::proto::validateUnicastMac(*mac, what); !st)
    throw CniError(code, st.error().what);
  return vdev::formatMac(*mac);
}

}  // namespace

// ------------------------------------------------------------------ versions

const std::vector<std::string>& supportedVersions() {
  static const std::vector<std::string> v = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  return v;
}

bool isSupported(std::string_view version) {
  const auto& v = supportedVersions();
  return std::find(v.begin(), v.end(), version) != v.end();
}

int compareVersions(std::string_view a, std::string_view b) {
  const auto parts = [](std::string_view s) {
    const auto invalid = [&] { return CniError(kErrDecode, "invalid version \"" + std::string(s) + "\""); };
    std::array<uint32_t, 3> p{};
    // Up to three parts, each up to the next '.'; what follows a third is
    // not looked at.
    std::string_view rest = s;
    for (size_t n = 0; n < p.size() && !rest.empty(); ++n) {
      const size_t dot = rest.find('.');
      const auto v = vdev::parseU32(rest.substr(0, dot));
      if (!v) throw invalid();
      p[n] = *v;
      rest.remove_prefix(dot == std::string_view::npos ? rest.size() : dot + 1);
    }
    return p;
  };
  const auto pa = parts(a), pb = parts(b);
  return pa < pb ? -1 : pa > pb ? 1 : 0;
}

std::string versionList(const std::vector<std::string>& versions) {
  std::string s = "[";
  for (size_t i = 0; i < versions.size(); ++i) s += (i ? " \"" : "\"") + versions[i] + "\"";
  return s + "]";
}

// ------------------------------------------------------------- environment

const char* commandName(Command c) {
  switch (c) {
    case Command::kAdd: return "ADD";
    case Command::kDel: return "DEL";
    case Command::kCheck: return "CHECK";
    case Command::kVersion: return "VERSION";
    case Command::kGc: return "GC";
    case Command::kStatus: return "STATUS";
  }
  return "?";
}

bool validContainerId(std::string_view id) { return validIdentifier(id); }

bool validIfname(std::string_view name) { return vdev::proto::validateIfname(name, "CNI_IFNAME").ok(); }

std::string dumpJson(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Env parseEnv(const std::map<std::string, std::string>& vars) {
  const auto get = [&](const char* k) -> std::string {
    const auto it = vars.find(k);
    return it == vars.end() ? std::string() : it->second;
  };
  Env e;
  const std::string cmd = get("CNI_COMMAND");
  if (cmd.empty()) throw CniError(kErrInvalidEnv, "required env variables [CNI_COMMAND] missing");
  static const std::pair<const char*, Command> kCommands[] = {
      {"ADD", Command::kAdd},         {"DEL", Command::kDel}, {"CHECK", Command::kCheck},
      {"VERSION", Command::kVersion}, {"GC", Command::kGc},   {"STATUS", Command::kStatus}};
  bool known = false;
  for (const auto& [name, c] : kCommands)
    if (cmd == name) e.command = c, known = true;
  if (!known) throw CniError(kErrInvalidEnv, "unknown CNI_COMMAND: " + cmd);

  e.containerId = get("CNI_CONTAINERID");
  e.netns = get("CNI_NETNS");
  e.ifname = get("CNI_IFNAME");
  e.args = get("CNI_ARGS");
  const std::string path = get("CNI_PATH");
  for (size_t i = 0, j; i <= path.size(); i = j + 1) {
    j = path.find(':', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) e.path.push_back(path.substr(i, j - i));
  }

  // Which variables each command needs (the spec's "Parameters" and libcni's
  // skel agree): the attachment's for ADD/CHECK/DEL (DEL without CNI_NETNS:
  // the namespace may be gone), CNI_PATH for everything that may delegate.
  const bool attach = e.command == Command::kAdd || e.command == Command::kCheck ||
                      e.command == Command::kDel;
  std::vector<std::string> missing;
  if (attach && e.containerId.empty()) missing.push_back("CNI_CONTAINERID");
  if ((e.command == Command::kAdd || e.command == Command::kCheck) && e.netns.empty())
    missing.push_back("CNI_NETNS");
  if (attach && e.ifname.empty()) missing.push_back("CNI_IFNAME");
  if (e.command != Command::kVersion && e.path.empty()) missing.push_back("CNI_PATH");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ",") + m;
    throw CniError(kErrInvalidEnv, "required env variables [" + list + "] missing");
  }
  if (attach) {
    if (!validContainerId(e.containerId))
      throw CniError(kErrInvalidEnv, "invalid characters in containerID", e.containerId);
    if (!validIfname(e.ifname))
      throw CniError(kErrInvalidEnv,
                     "invalid CNI_IFNAME: 1..15 characters, not . or .., no /, :, % or space",
                     e.ifname);
  }
  // Only where the namespace is used. VERSION needs nothing but
  // CNI_COMMAND (spec: "Parameters"): libcni (podman, containerd, CRI-O,
  // nerdctl) validates a configuration by calling VERSION with placeholders
  // (CNI_NETNS=dummy, CNI_CONTAINERID=dummy, CNI_IFNAME=dummy); DEL must
  // succeed when the namespace is gone; GC and STATUS have none.
  if ((e.command == Command::kAdd || e.command == Command::kCheck) && e.netns[0] != '/')
    throw CniError(kErrInvalidEnv, "CNI_NETNS must be an absolute path", e.netns);

  // CNI_ARGS: "K1=V1;K2=V2". Keys this plugin does not use are ignored (as
  // if IgnoreUnknown were always set): the IPAM plugin sees the same
  // variable and takes its own (host-local: IP=).
  for (size_t i = 0, j; i < e.args.size(); i = j + 1) {
    j = e.args.find(';', i);
    if (j == std::string::npos) j = e.args.size();
    const std::string kv = e.args.substr(i, j - i);
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CniError(kErrInvalidEnv, "CNI_ARGS: \"" + kv + "\" is not KEY=VALUE", e.args);
    e.argPairs[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return e;
}

// ----------------------------------------------------------- configuration

Result decodeResult(const Json& j, std::string_view what) {
  if (!j.is_object()) typeError(what, "an object");
  Result r;
  const std::string w(what);
  if (const Json* a = optArray(j, "interfaces", w)) {
    for (const Json& i : *a) {
      if (!i.is_object()) typeError(w + ".interfaces", "objects");
      Interface itf;
      itf.name = reqString(i, "name", w + ".interfaces[]");
      itf.mac = optString(i, "mac", w + ".interfaces[]").value_or("");
      itf.mtu = optU32(i, "mtu", w + ".interfaces[]");
      itf.sandbox = optString(i, "sandbox", w + ".interfaces[]").value_or("");
      r.interfaces.push_back(std::move(itf));
    }
  }
  if (const Json* a = optArray(j, "ips", w)) {
    for (const Json& i : *a) {
      if (!i.is_object()) typeError(w + ".ips", "objects");
      IpConfig ip;
      ip.address = reqString(i, "address", w + ".ips[]");
      ip.gateway = optString(i, "gateway", w + ".ips[]");
      if (auto idx = optInt(i, "interface", w + ".ips[]")) {
        if (*idx < 0 || size_t(*idx) >= r.interfaces.size())
          throw CniError(kErrDecode, "decoding " + w + ".ips[]: interface index " +
                                         std::to_string(*idx) + " names no interface");
        ip.interface = int(*idx);
      }
      if (auto v = optString(i, "version", w + ".ips[]"); v && *v != (ip.isV6() ? "6" : "4"))
        throw CniError(kErrDecode, "decoding " + w + ".ips[]: version \"" + *v +
                                       "\" does not match address " + ip.address);
      r.ips.push_back(std::move(ip));
    }
  }
  if (const Json* a = optArray(j, "routes", w)) {
    for (const Json& i : *a) {
      if (!i.is_object()) typeError(w + ".routes", "objects");
      Route rt;
      rt.dst = reqString(i, "dst", w + ".routes[]");
      rt.gw = optString(i, "gw", w + ".routes[]");
      rt.mtu = optU32(i, "mtu", w + ".routes[]");
      rt.advmss = optU32(i, "advmss", w + ".routes[]");
      rt.priority = optU32(i, "priority", w + ".routes[]");
      rt.table = optU32(i, "table", w + ".routes[]");
      if (auto s = optInt(i, "scope", w + ".routes[]")) rt.scope = int(*s);
      r.routes.push_back(std::move(rt));
    }
  }
  if (const Json* d = optObject(j, "dns", w)) r.dns = decodeDns(*d, w + ".dns");
  return r;
}

Json encodeResult(const Result& r, std::string_view version) {
  const bool v1 = versionAtLeast(version, "1.0.0");
  const bool v11 = versionAtLeast(version, "1.1.0");
  Json j = Json::object();
  j["cniVersion"] = std::string(version);
  if (!r.interfaces.empty()) {
    Json a = Json::array();
    for (const auto& i : r.interfaces) {
      Json o = Json::object();
      o["name"] = i.name;
      if (!i.mac.empty()) o["mac"] = i.mac;
      if (v11 && i.mtu) o["mtu"] = *i.mtu;
      if (!i.sandbox.empty()) o["sandbox"] = i.sandbox;
      a.push_back(std::move(o));
    }
    j["interfaces"] = std::move(a);
  }
  if (!r.ips.empty()) {
    Json a = Json::array();
    for (const auto& ip : r.ips) {
      Json o = Json::object();
      if (!v1) o["version"] = ip.isV6() ? "6" : "4";
      if (ip.interface) o["interface"] = *ip.interface;
      o["address"] = ip.address;
      if (ip.gateway) o["gateway"] = *ip.gateway;
      a.push_back(std::move(o));
    }
    j["ips"] = std::move(a);
  }
  if (!r.routes.empty()) {
    Json a = Json::array();
    for (const auto& rt : r.routes) {
      Json o = Json::object();
      o["dst"] = rt.dst;
      if (rt.gw) o["gw"] = *rt.gw;
      if (v11) {
        if (rt.mtu) o["mtu"] = *rt.mtu;
        if (rt.advmss) o["advmss"] = *rt.advmss;
        if (rt.priority) o["priority"] = *rt.priority;
        if (rt.table) o["table"] = *rt.table;
        if (rt.scope) o["scope"] = *rt.scope;
      }
      a.push_back(std::move(o));
    }
    j["routes"] = std::move(a);
  }
  j["dns"] = encodeDns(r.dns);
  return j;
}

std::string peekVersion(std::string_view text) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  const auto it = j.find("cniVersion");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

NetConf parseNetConf(std::string_view text, Command command) {
  NetConf c;
  try {
    c.raw = Json::parse(text);
  } catch (const Json::exception& e) {
    // parse_error, and out_of_range for a number JSON allows but a double
    // cannot hold (1e999): the runtime gets an error JSON either way.
    throw CniError(kErrDecode, "decoding the network configuration: " + std::string(e.what()));
  }
  const Json& j = c.raw;
  if (!j.is_object()) typeError("the network configuration", "a JSON object");
  const char* w = "the network configuration";

  // The version first: nothing else can be read before it is known.
  c.cniVersion = optString(j, "cniVersion", w).value_or("");
  if (!isSupported(c.cniVersion))
    throw CniError(kErrIncompatibleVersion, "incompatible CNI versions",
                   "config is \"" + c.cniVersion + "\", plugin supports " +
                       versionList(supportedVersions()));

  c.name = optString(j, "name", w).value_or("");
  if (c.name.empty()) throw CniError(kErrInvalidConfig, "missing network name");
  if (!validIdentifier(c.name))
    throw CniError(kErrInvalidConfig, "invalid characters found in network name", c.name);
  c.type = optString(j, "type", w).value_or("");

  c.socket = optString(j, "socket", w).value_or(vdev::proto::kDefaultSocketPath);
  if (c.socket.empty() || c.socket[0] != '/')
    throw CniError(kErrInvalidConfig, "socket: \"" + c.socket + "\" is not an absolute path");
  if (const Json* m = field(j, "mtu")) {
    if (!m->is_number_integer() || m->get<int64_t>() < vdev::proto::kMinMtu ||
        m->get<int64_t>() > vdev::proto::kMaxMtu)
      throw CniError(kErrInvalidConfig, "mtu: " + dumpJson(*m) + " is not an integer " +
                                            std::to_string(vdev::proto::kMinMtu) + ".." +
                                            std::to_string(vdev::proto::kMaxMtu));
    c.mtu = uint32_t(m->get<int64_t>());
  }
  if (auto up = optString(j, "uplink", w)) {
    if (!validIfname(*up)) throw CniError(kErrInvalidConfig, "uplink: \"" + *up + "\" is not an interface name");
    c.uplink = *up;
  }
  c.portIsolation = optBool(j, "portIsolation", w).value_or(false);
  c.macSpoofCheck = optBool(j, "macspoofchk", w).value_or(false);
  c.spoofCheck = optBool(j, "spoofCheck", w).value_or(false);
  decodeLimits(j, c.limits);
  decodeVlan(j, c.limits);
  if (auto mac = optString(j, "mac", w)) c.mac = checkMac(*mac, "mac", kErrInvalidConfig);
  if (auto t = optString(j, "portType", w)) {
    const auto type = vdev::proto::parsePortType(*t);
    if (type != vdev::proto::PortType::kVeth && type != vdev::proto::PortType::kNetkit)
      throw CniError(kErrInvalidConfig, "portType: \"" + *t + "\" is not one of veth, netkit");
    c.portType = *type;
  }
  c.xdpMode = optString(j, "xdpMode", w).value_or("auto");
  if (c.xdpMode != "auto" && c.xdpMode != "native" && c.xdpMode != "generic")
    throw CniError(kErrInvalidConfig,
                   "xdpMode: \"" + c.xdpMode + "\" is not one of auto, native, generic");

  if (const Json* ipam = optObject(j, "ipam", w); ipam && !ipam->empty()) {
    c.ipamType = optString(*ipam, "type", "ipam").value_or("");
    if (c.ipamType.empty()) throw CniError(kErrInvalidConfig, "ipam: \"type\" is missing");
    if (c.ipamType.find('/') != std::string::npos || c.ipamType == "." || c.ipamType == "..")
      throw CniError(kErrInvalidConfig, "ipam: type \"" + c.ipamType + "\" is not a plugin name");
  }
  if (const Json* d = optObject(j, "dns", w)) c.dns = decodeDns(*d, "dns");
  if (const Json* rc = optObject(j, "runtimeConfig", w))
    if (auto mac = optString(*rc, "mac", "runtimeConfig"))
      c.runtimeMac = checkMac(*mac, "runtimeConfig.mac", kErrInvalidConfig);
  // prevResult only for the commands that use it: ADD and CHECK refuse a
  // malformed one (6) here, before anything is made. DEL does not need it
  // and must succeed as far as it can (spec: DEL is best effort; a runtime
  // that cannot DEL leaks the port and the address), so it ignores
  // prevResult, whatever it holds; GC and STATUS have none to use either.
  if (command == Command::kAdd || command == Command::kCheck)
    if (const Json* p = optObject(j, "prevResult", w)) c.prevResult = decodeResult(*p, "prevResult");
  if (const Json* a = optArray(j, "cni.dev/valid-attachments", w)) {
    c.validAttachments.emplace();
    for (const Json& e : *a) {
      if (!e.is_object()) typeError("cni.dev/valid-attachments", "objects");
      c.validAttachments->push_back({reqString(e, "containerID", "cni.dev/valid-attachments[]"),
                                     reqString(e, "ifname", "cni.dev/valid-attachments[]")});
    }
  }
  return c;
}

// ------------------------------------------------------------------ output

Json encodeError(const CniError& e, std::string_view version) {
  Json j = Json::object();
  j["cniVersion"] = std::string(version.empty() ? kLatestVersion : version);
  j["code"] = e.code;
  j["msg"] = e.msg;
  if (!e.details.empty()) j["details"] = e.details;
  return j;
}

Json encodeVersionInfo(std::string_view version) {
  Json j = Json::object();
  j["cniVersion"] = std::string(version.empty() ? kLatestVersion : version);
  j["supportedVersions"] = supportedVersions();
  return j;
}

}  // namespace vdev::cni
