// The CNI specification layer of vdev-cni: versions, the environment, the
// network configuration, results and errors, encoded exactly as the spec
// (https://www.cni.dev/docs/spec/, versions 0.3.0 .. 1.1.0) defines them.
//
// Pure: no I/O besides reading the given strings; thread safe. Failures throw
// CniError carrying the spec's error code (this is a short-lived command-line
// program: the error travels up to main(), which prints it as the error JSON
// and exits 1).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/codec.h"  // LimitOptions

namespace vdev::cni {

using Json = nlohmann::ordered_json;  // keeps the order fields are written in

// j as text. Bytes that are not UTF-8 (from CNI_CONTAINERID, CNI_ARGS, an
// IPAM plugin's output, quoted in a message) become U+FFFD instead of
// making nlohmann::json throw -- which, while printing the error JSON,
// would end the plugin with std::terminate and no answer at all.
std::string dumpJson(const Json& j, int indent = -1);

// Well-known error codes (spec: "Error codes"); 0-99 are the spec's.
enum ErrorCode : unsigned {
  kErrIncompatibleVersion = 1,
  kErrUnsupportedField = 2,
  kErrUnknownContainer = 3,
  kErrInvalidEnv = 4,
  kErrIo = 5,
  kErrDecode = 6,
  kErrInvalidConfig = 7,
  kErrTryAgainLater = 11,
  kErrPluginNotAvailable = 50,         // STATUS: cannot service ADD
  kErrPluginNotAvailableLimited = 51,  // STATUS: and existing containers may suffer
  // vdev-cni's own (100 and up, docs/containers.md):
  kErrVdevd = 100,        // vdevd refused or failed a request (its message follows)
  kErrIpamExec = 101,     // the IPAM plugin could not be run or answered garbage
  kErrContainer = 102,    // the container's namespace or interface could not be set up
  kErrCheckFailed = 103,  // CHECK found something different from prevResult
};

struct CniError : std::runtime_error {
  CniError(unsigned c, std::string m, std::string d = {})
      : std::runtime_error(m), code(c), msg(std::move(m)), details(std::move(d)) {}
  unsigned code;
  std::string msg;
  std::string details;
};

// ------------------------------------------------------------------ versions

inline constexpr const char* kLatestVersion = "1.1.0";
// Every version whose configuration and result format this plugin speaks.
// (0.1.0 and 0.2.0 had another result layout and no CHECK.)
const std::vector<std::string>& supportedVersions();
bool isSupported(std::string_view version);

// Compares two "MAJOR.MINOR.PATCH" strings (missing parts are 0); throws
// CniError kErrDecode for something else.
int compareVersions(std::string_view a, std::string_view b);
inline bool versionAtLeast(std::string_view v, std::string_view min) {
  return compareVersions(v, min) >= 0;
}

// "[\"0.3.0\",...]" for messages, as libcni prints it.
std::string versionList(const std::vector<std::string>& versions);

// ------------------------------------------------------------- environment

enum class Command { kAdd, kDel, kCheck, kVersion, kGc, kStatus };
const char* commandName(Command c);

struct Env {
  Command command = Command::kVersion;
  std::string containerId;  // CNI_CONTAINERID
  std::string netns;        // CNI_NETNS (a path)
  std::string ifname;       // CNI_IFNAME
  std::string args;         // CNI_ARGS, raw
  std::map<std::string, std::string> argPairs;  // CNI_ARGS parsed: K=V;K=V
  std::vector<std::string> path;                // CNI_PATH split at ':'
};

// Reads the CNI_* variables through `get` (getenv in the plugin, a map in
// tests), checks that the command's required ones are there and well formed.
// Errors: kErrInvalidEnv naming the variable(s).
template <typename Getter>
Env readEnv(Getter get);
Env parseEnv(const std::map<std::string, std::string>& vars);

// The container ID rule of the spec: starts with an alphanumeric character,
// then alphanumerics, '_', '.', '-'.
bool validContainerId(std::string_view id);
// An interface name as vdevd takes it (proto::validateIfname): 1..15
// printable characters, not "." or "..", no '/', ':', '%' or space.
bool validIfname(std::string_view name);

// ----------------------------------------------------------- configuration

struct Route {
  std::string dst;  // CIDR
  std::optional<std::string> gw;
  // 1.1.0 additions.
  std::optional<uint32_t> mtu, advmss, priority, table;
  std::optional<int> scope;
};

struct IpConfig {
  std::string address;  // CIDR, e.g. "198.18.5.3/24"
  std::optional<std::string> gateway;
  std::optional<int> interface;  // index into Result::interfaces
  bool isV6() const { return address.find(':') != std::string::npos; }
};

struct Interface {
  std::string name;
  std::string mac;
  std::optional<uint32_t> mtu;  // 1.1.0
  std::string sandbox;          // the netns path; empty on the host
};

struct Dns {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search;
  std::vector<std::string> options;
  bool empty() const {
    return nameservers.empty() && domain.empty() && search.empty() && options.empty();
  }
};

// A result of ADD (the plugin's, an IPAM plugin's, or a prevResult).
struct Result {
  std::vector<Interface> interfaces;
  std::vector<IpConfig> ips;
  std::vector<Route> routes;
  Dns dns;
};

// Decodes a result of any supported version (0.3.0 .. 1.1.0: the same layout,
// "version" in ips up to 0.4.0). Errors: kErrDecode naming the field.
Result decodeResult(const Json& j, std::string_view what);
// Encodes `r` as version `version` defines it: "version" in every ip before
// 1.0.0; the 1.1.0 fields (interface mtu, route mtu/advmss/priority/table/
// scope) only from 1.1.0.
Json encodeResult(const Result& r, std::string_view version);

struct Attachment {  // GC's cni.dev/valid-attachments
  std::string containerId;
  std::string ifname;
};

// The network configuration of one plugin invocation (what a runtime puts on
// stdin: one plugin of a conflist, with name and cniVersion copied in).
struct NetConf {
  std::string cniVersion;
  std::string name;
  std::string type;
  // vdev-cni's own fields (docs/containers.md).
  std::string socket;           // vdevd's control socket
  std::optional<uint32_t> mtu;  // both veth ends
  std::optional<std::string> uplink;  // a port of vdevd's whose MTU the veths take (and mtu may not exceed)
  bool portIsolation = false;         // the port is isolated (bridge CNI's key)
  bool macSpoofCheck = false;         // macspoofchk (bridge CNI's key): only the container's MAC may send
  bool spoofCheck = false;            // spoofCheck: that, only from IPAM's addresses, no RA/DHCP server
  // stormControl {broadcastPps, multicastPps, unknownUnicastPps} and
  // ingressPolicer {pps, bps, burstMs}: each given one the port's own,
  // the others vdevd's defaults (0: no limit).
  vdev::proto::LimitOptions limits;
  std::optional<std::string> mac;  // the container interface's MAC
  std::string xdpMode = "auto";
  // portType: the pair vdevd makes, "veth" or "netkit" (Linux 6.7+).
  vdev::proto::PortType portType = vdev::proto::PortType::kVeth;
  // Delegation.
  std::string ipamType;  // empty: no IPAM (L2 only)
  std::optional<Dns> dns;
  std::optional<std::string> runtimeMac;  // runtimeConfig.mac (capability "mac")
  std::optional<Result> prevResult;  // ADD and CHECK only; never set for the others
  std::optional<std::vector<Attachment>> validAttachments;  // GC
  Json raw;  // the whole document, passed on to the IPAM plugin
};

// Parses stdin's bytes for `command`. Errors: kErrDecode (not JSON, a field
// of the wrong JSON type, for ADD and CHECK a prevResult that does not decode
// as a result), kErrIncompatibleVersion (cniVersion not supported),
// kErrInvalidConfig (a required field missing, a value out of range).
// prevResult is decoded for ADD and CHECK only: the other commands ignore it.
NetConf parseNetConf(std::string_view text, Command command);

// The cniVersion of a document, or "" when it has none or is not JSON
// (for VERSION and for labelling an error reply).
std::string peekVersion(std::string_view text);

// ------------------------------------------------------------------ output

// The error JSON: {"cniVersion", "code", "msg", "details"}.
Json encodeError(const CniError& e, std::string_view version);

// VERSION's answer: {"cniVersion", "supportedVersions"}.
Json encodeVersionInfo(std::string_view version);

// --------------------------------------------------------------- templates

template <typename Getter>
Env readEnv(Getter get) {
  std::map<std::string, std::string> vars;
  for (const char* k : {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS",
                        "CNI_PATH"})
    if (const char* v = get(k)) vars[k] = v;
  return parseEnv(vars);
}

}  // namespace vdev::cni
