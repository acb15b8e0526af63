#include "daemon/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <type_traits>

#include "base/fd.h"
#include "base/parse.h"
#include "proto/codec.h"

namespace vdev::daemon {

namespace {

constexpr const char* kHeader = "# vdevd state v1";

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A record kind or a key a newer vdevd may write: [a-z][a-z0-9_-]*.
bool isKeyword(std::string_view w) {
  if (w.empty() || w[0] < 'a' || w[0] > 'z') return false;
  return w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string_view::npos;
}

// A line whose first word is not "port": a record of a kind a newer vdevd
// writes, kept as it is, when it has the form every record has (a keyword,
// then key=value words); "" or what is wrong with it.
std::string checkOtherRecord(const std::string& line) {
  std::istringstream ls(line);
  std::string kind, word;
  ls >> kind;
  if (!isKeyword(kind)) return "unknown record '" + kind + "'";
  bool any = false;
  while (ls >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || !isKeyword(std::string_view(word).substr(0, eq)))
      return "unknown record '" + kind + "' with a word that is not key=value: '" + word + "'";
    any = true;
  }
  if (!any) return "unknown record '" + kind + "' without key=value";
  return "";
}

// A port's own policy in a record: one key per row of spec/port_policy.h
// (VLAN: vlan_pvid, vlan_tagged, vlan_untagged), read and written by the
// field's type. Numbers take the row's range.
using PolicyOptions = vdev::proto::LimitOptions;

template <class Row>
std::string rangeText(const Row& r, const std::string& v) {
  return "invalid " + std::string(r.key) + " '" + v + "' (" + std::string(r.unit) + ", " + std::to_string(r.min) +
         ".." + std::to_string(r.max) + (r.min == 0 ? "; 0: no limit)" : ")");
}
template <class Row>
std::string parseValue(const Row& r, const std::string&, const std::string& v, std::optional<uint32_t>& out) {
  const auto n = vdev::parseU32(v, uint32_t(r.min), uint32_t(r.max));
  if (!n) return rangeText(r, v);
  out = *n;
  return "";
}
template <class Row>
std::string parseValue(const Row& r, const std::string&, const std::string& v, std::optional<uint64_t>& out) {
  const auto n = vdev::parseU64(v, r.min, r.max);
  if (!n) return rangeText(r, v);
  out = *n;
  return "";
}
template <class Row>
std::string parseValue(const Row&, const std::string& k, const std::string& v, std::optional<bool>& out) {
  if (v != "0" && v != "1") return "invalid " + k + " '" + v + "' (0 or 1)";
  out = v == "1";
  return "";
}
template <class Row>
std::string parseValue(const Row&, const std::string&, const std::string& v, std::optional<vdev::Mac>& out) {
  const auto m = vdev::parseMac(v);
  if (!m || (*m != vdev::Mac{} && !vdev::proto::validateUnicastMac(*m, "allowed_mac")))
    return "invalid allowed_mac '" + v + "' (a unicast MAC, or 00:00:00:00:00:00 for any source)";
  out = *m;
  return "";
}
template <class Row>
std::string parseValue(const Row&, const std::string&, const std::string& v,
                       std::optional<std::vector<vdev::IpAddr>>& out) {
  auto ips = vdev::parseIpList(v);  // "any": none, any address
  if (!ips) return "invalid allowed_ips '" + v + "' (IPv4 and IPv6 addresses, comma-separated, or any)";
  if (auto s = vdev::proto::validateAllowedIps(*ips, "allowed_ips"); !s)
    return "invalid allowed_ips '" + v + "': " + s.error().what;
  out = std::move(*ips);
  return "";
}
// VLAN: three keys fill one VlanConfig (checked whole after the line).
template <class Row>
std::string parseValue(const Row&, const std::string& k, const std::string& v, std::optional<vdev::VlanConfig>& out) {
  if (k == "vlan_pvid") {
    const auto n = vdev::parseU32(v, 0, vdev::kVidMax);
    if (!n) return "invalid vlan_pvid '" + v + "' (0..4094; 0: untagged frames not taken)";
    if (!out) out.emplace();
    out->pvid = uint16_t(*n);
    return "";
  }
  const auto s = vdev::parseVidList(v);
  if (!s) return "invalid " + k + " '" + v + "' (VLAN IDs 1..4094, e.g. 10,20-29)";
  if (!out) out.emplace();
  (k == "vlan_tagged" ? out->tagged : out->untagged) = *s;
  return "";
}
template <class Row>
bool isKeyOf(const Row& r, const std::string& k) {
  if constexpr (std::is_same_v<typename Row::Type, vdev::VlanConfig>)
    return k == "vlan_pvid" || k == "vlan_tagged" || k == "vlan_untagged";
  else
    return k == r.key;
}
// Whether `k` is a policy key; if it is, `why` is what is wrong with `v`
// ("" when it was read into `l`).
bool policyKey(const std::string& k, const std::string& v, PolicyOptions& l, std::string& why) {
  bool found = false;
  vdev::spec::forEachPolicyField([&](const auto& r) {
    if (found || !isKeyOf(r, k)) return;
    found = true;
    why = parseValue(r, k, v, l.*r.option);
  });
  return found;
}

void putValue(std::string& o, std::string_view k, uint32_t v) { o += " " + std::string(k) + "=" + std::to_string(v); }
void putValue(std::string& o, std::string_view k, uint64_t v) { o += " " + std::string(k) + "=" + std::to_string(v); }
void putValue(std::string& o, std::string_view k, bool v) { o += " " + std::string(k) + (v ? "=1" : "=0"); }
void putValue(std::string& o, std::string_view k, const vdev::Mac& v) {
  o += " " + std::string(k) + "=" + vdev::formatMac(v);
}
void putValue(std::string& o, std::string_view k, const std::vector<vdev::IpAddr>& v) {
  std::string ips;
  for (const vdev::IpAddr& a : v) ips += (ips.empty() ? "" : ",") + vdev::formatIp(a);
  o += " " + std::string(k) + "=" + (ips.empty() ? std::string("any") : ips);
}
void putValue(std::string& o, std::string_view, const vdev::VlanConfig& v) {
  // Given: vlan_pvid always (0 alone: no VLAN settings), the lists when set.
  o += " vlan_pvid=" + std::to_string(v.pvid);
  if (v.tagged.any()) o += " vlan_tagged=" + vdev::formatVidList(v.tagged);
  if (v.untagged.any()) o += " vlan_untagged=" + vdev::formatVidList(v.untagged);
}

// One "port ..." line; "" and the record, or what is wrong with it.
std::string parsePortLine(const std::string& line, PortRecord& r) {
  std::istringstream ls(line);
  std::string word;
  ls >> word;
  if (word != "port") return "unknown record '" + word + "'";
  std::set<std::string> seen;
  while (ls >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) return "expected key=value, got '" + word + "'";
    std::string k = word.substr(0, eq), v = word.substr(eq + 1);
    if (!seen.insert(k).second) return "'" + k + "' given twice";
    if (k == "name") {
      // The protocol's rule, the one place it is written (proto/validate.cpp).
      if (!vdev::proto::validateIfname(v, "name")) return "invalid interface name '" + v + "'";
      r.name = v;
    } else if (k == "type") {
      if (!vdev::proto::parsePortType(v)) return "invalid type '" + v + "'";
      r.type = v;
    } else if (k == "queues") {
      const auto q = vdev::parseU32(v, 0, 64);
      if (!q) return "invalid queues '" + v + "' (0..64)";
      r.queues = *q;
    } else if (k == "xdp-mode") {
      if (!xdpModeByName(v)) return "invalid xdp-mode '" + v + "'";
      r.xdp_mode = v;
    } else if (k == "managed") {
      if (v != "0" && v != "1") return "invalid managed '" + v + "' (0 or 1)";
      r.managed = v == "1";
    } else if (k == "id") {
      if (v.size() != 16 || v.find_first_not_of("0123456789abcdef") != std::string::npos)
        return "invalid id '" + v + "' (16 hex digits)";
      r.id = v;
    } else if (k == "tun-owner") {
      const auto u = vdev::parseU32(v, 0, UINT32_MAX - 1);
      if (!u) return "invalid tun-owner '" + v + "'";
      r.tun_owner = *u;
    } else if (k == "fast-rx") {
      if (v != "0" && v != "1") return "invalid fast-rx '" + v + "' (0 or 1)";
      r.fast_rx = v == "1";
    } else if (k == "uid") {
      const auto u = vdev::parseU32(v, 0, UINT32_MAX - 1);
      if (!u) return "invalid uid '" + v + "'";
      r.owner_uid = *u;
    } else if (k == "tag") {
      if (!vdev::proto::validatePortTag(v)) return "invalid tag '" + v + "'";
      r.tag = v;
    } else if (k == "hook") {
      if (!portHookByName(v)) return "invalid hook '" + v + "' (xdp, tc or auto)";
      r.hook = v;
    } else if (k == "isolated") {
      if (v != "0" && v != "1") return "invalid isolated '" + v + "' (0 or 1)";
      r.isolated = v == "1";
    } else if (std::string why; policyKey(k, v, r.limits, why)) {
      if (!why.empty()) return why;
    } else if (isKeyword(k)) {
      // A newer vdevd's: kept as written and saved back (state_file.h).
      r.unknown.push_back(word);
    } else {
      return "invalid key '" + k + "'";
    }
  }
  if (r.name.empty()) return "port without name=";
  if (r.limits.vlan)
    if (const std::string why = vdev::vlanConfigError(*r.limits.vlan); !why.empty()) return "invalid VLANs: " + why;
  return "";
}

// Reads at most kStateFileMax bytes. Errors: EFBIG past that, and read's.
Result<std::string> readSmallFile(const std::string& path, bool& missing) {
  missing = false;
  FileDesc fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      missing = true;
      return std::string();
    }
    return errnoError("read state file " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errnoError("stat state file " + path);
  if (!S_ISREG(st.st_mode)) return Error{EINVAL, "state file " + path + " is not a regular file"};
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) {
    text.append(buf, size_t(n));
    if (text.size() > kStateFileMax) return Error{EFBIG, "state file " + path + " is larger than 1 MiB"};
  }
  if (n < 0) return errnoError("read state file " + path);
  return text;
}

// The port's own limits, each only when given (state_file.h).
std::string limitsText(const PolicyOptions& l) {
  std::string o;
  vdev::spec::forEachPolicyField([&](const auto& r) {
    if (l.*r.option) putValue(o, r.key, *(l.*r.option));
  });
  return o;
}

}  // namespace

std::string serializeState(const DaemonState& st) {
  std::string o = kHeader;
  o += "\n# written by vdevd: the ports it restores at start; edit only while it is stopped\n";
  for (const auto& p : st.ports) {
    o += "port name=" + p.name + " type=" + p.type + " queues=" + std::to_string(p.queues) +
         " xdp-mode=" + p.xdp_mode + " managed=" + (p.managed ? "1" : "0") +
         (p.fast_rx ? "" : " fast-rx=0") + (p.owner_uid ? " uid=" + std::to_string(p.owner_uid) : "") +
         (p.tag.empty() ? "" : " tag=" + p.tag) + (p.hook.empty() ? "" : " hook=" + p.hook) +
         (p.isolated ? " isolated=1" : "") + (p.id.empty() ? "" : " id=" + p.id) +
         (p.tun_owner ? " tun-owner=" + std::to_string(*p.tun_owner) : "") + limitsText(p.limits);
    for (const std::string& kv : p.unknown) o += " " + kv;
    o += "\n";
  }
  for (const std::string& line : st.other_records) o += line + "\n";
  return o;
}

LenientState parseStateLenient(std::string_view text) {
  LenientState out;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  std::set<std::string> names;
  bool header = false;
  auto bad = [&](const std::string& why) { out.problems.push_back("line " + std::to_string(lineno) + ": " + why); };
  while (std::getline(in, line)) {
    lineno++;
    if (lineno == 1) {
      if (line != kHeader) {
        bad("not a vdevd state file (expected \"" + std::string(kHeader) + "\")");
        return out;  // nothing else in it can be trusted to mean what it says
      }
      header = true;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string kind;
    std::istringstream(line) >> kind;
    if (kind != "port") {
      if (std::string why = checkOtherRecord(line); !why.empty()) bad(why);
      else out.state.other_records.push_back(line);
      continue;
    }
    PortRecord r;
    if (std::string why = parsePortLine(line, r); !why.empty()) {
      bad(why);
      continue;
    }
    if (!names.insert(r.name).second) {
      bad("port " + r.name + " listed twice");
      continue;
    }
    out.state.ports.push_back(r);
  }
  if (!header) out.problems.push_back("empty state file");
  return out;
}

Result<DaemonState> parseState(const std::string& text) {
  LenientState l = parseStateLenient(text);
  if (!l.problems.empty()) return Error{EINVAL, l.problems.front()};
  return std::move(l.state);
}

Result<DaemonState> loadState(const std::string& path) {
  bool missing = false;
  auto text = readSmallFile(path, missing);
  if (!text) return text.error();
  if (missing) return DaemonState{};
  auto st = parseState(*text);
  if (!st) return Error{st.error().err, "state file " + path + ": " + st.error().what};
  return st;
}

LenientState loadStateLenient(const std::string& path) {
  LenientState out;
  bool missing = false;
  auto text = readSmallFile(path, missing);
  if (missing) return out;
  if (!text) {
    out.problems.push_back(text.error().message());
  } else {
    out = parseStateLenient(*text);
    for (auto& p : out.problems) p = "state file " + path + ": " + p;
  }
  if (!out.problems.empty()) {
    const std::string aside = path + ".rejected";
    if (::rename(path.c_str(), aside.c_str()) == 0)
      out.problems.push_back("state file " + path + " kept as " + aside);
    else
      out.problems.push_back("state file " + path + ": cannot keep it as " + aside + ": " + std::strerror(errno));
  }
  return out;
}

Status writeFileAtomic(const std::string& path, std::string_view data, mode_t mode, std::string* warning) {
  const std::string tmp = path + ".tmp";
  FileDesc fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid() && errno == EEXIST) {
    // Left by a crash (or planted): unlink removes the name itself, never
    // what a symlink points to.
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return errnoError("remove stale " + tmp);
    fd = FileDesc(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  }
  if (!fd.valid()) return errnoError("create " + tmp);
  auto fail = [&](const std::string& what) {
    Error e = errnoError(what);
    ::unlink(tmp.c_str());
    return e;
  };
  size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::write(fd.get(), data.data() + off, data.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail("write " + tmp);
    }
    off += size_t(w);
  }
  if (::fsync(fd.get()) != 0) return fail("fsync " + tmp);
  if (::close(fd.release()) != 0) return fail("close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename " + tmp + " to " + path);
  // Make the rename itself durable. The file is in place from here on:
  // a failure is a warning (state_file.h), never an error that a caller
  // would undo a change for.
  const std::string dir = dirOf(path);
  FileDesc d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const char* step = nullptr;
  if (!d.valid()) step = "open directory ";
  else if (::fsync(d.get()) != 0) step = "fsync directory ";
  if (step) {
    const int err = errno;
    const std::string problem = step + dir + ": " + std::strerror(err) + " (" + path +
                                " is written; a power loss may undo it)";
    if (warning) *warning = problem;
    else std::fprintf(stderr, "vdevd: warning: %s\n", problem.c_str());
  }
  return {};
}

Status saveState(const std::string& path, const DaemonState& st, std::string* warning) {
  if (auto s = writeFileAtomic(path, serializeState(st), 0600, warning); !s)
    return Error{s.error().err, "write state file: " + s.error().what};
  return {};
}

Status ensurePrivateDir(const std::string& dir, mode_t mode) {
  if (dir.empty()) return {};
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), mode) == 0) {
      if (::chmod(part.c_str(), mode) != 0) return errnoError("chmod " + part);  // the umask
    } else if (errno != EEXIST) {
      return errnoError("mkdir " + part);
    }
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return errnoError("lstat " + dir);
  if (S_ISLNK(st.st_mode)) return Error{EPERM, dir + " is a symbolic link, not a directory"};
  if (!S_ISDIR(st.st_mode)) return Error{ENOTDIR, dir + " is not a directory"};
  if (st.st_uid != ::geteuid())
    return Error{EPERM, dir + " is owned by uid " + std::to_string(st.st_uid) + ", not by vdevd's uid " +
                            std::to_string(::geteuid())};
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char m[8];
    std::snprintf(m, sizeof m, "%04o", unsigned(st.st_mode & 07777));
    return Error{EPERM, dir + " is writable by its group or by others (mode " + m + ")"};
  }
  return {};
}

}  // namespace vdev::daemon
