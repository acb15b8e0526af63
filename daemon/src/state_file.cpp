#include "daemon/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <sstream>

#include "base/fd.h"
#include "base/parse.h"

namespace vdev::daemon {

namespace {

constexpr const char* kHeader = "# vdevd state v1";

bool validName(const std::string& n) {
  if (n.empty() || n.size() > 15 || n == "." || n == "..") return false;
  for (char c : n)
    if (c <= ' ' || c > '~' || c == '/' || c == ':') return false;  // the kernel's rule (dev_valid_name)
  return true;
}

}  // namespace

std::string serializeState(const DaemonState& st) {
  std::string o = kHeader;
  o += "\n# written by vdevd: the ports it restores at start; edit only while it is stopped\n";
  for (const auto& p : st.ports) {
    o += "port name=" + p.name + " type=" + p.type + " queues=" + std::to_string(p.queues) +
         " xdp-mode=" + p.xdp_mode + " managed=" + (p.managed ? "1" : "0") +
         (p.fast_rx ? "" : " fast-rx=0") + (p.hook.empty() ? "" : " hook=" + p.hook) + "\n";
  }
  return o;
}

Result<DaemonState> parseState(const std::string& text) {
  DaemonState st;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::set<std::string> names;
  bool header = false;
  auto bad = [&](const std::string& why) { return Error{EINVAL, "line " + std::to_string(lineno) + ": " + why}; };
  while (std::getline(in, line)) {
    lineno++;
    if (lineno == 1) {
      if (line != kHeader) return bad("not a vdevd state file (expected \"" + std::string(kHeader) + "\")");
      header = true;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word != "port") return bad("unknown record '" + word + "'");
    PortRecord r;
    std::set<std::string> seen;
    while (ls >> word) {
      auto eq = word.find('=');
      if (eq == std::string::npos) return bad("expected key=value, got '" + word + "'");
      std::string k = word.substr(0, eq), v = word.substr(eq + 1);
      if (!seen.insert(k).second) return bad("'" + k + "' given twice");
      if (k == "name") {
        if (!validName(v)) return bad("invalid interface name '" + v + "'");
        r.name = v;
      } else if (k == "type") {
        if (v != "tap" && v != "veth" && v != "netdev") return bad("invalid type '" + v + "'");
        r.type = v;
      } else if (k == "queues") {
        const auto q = vdev::parseU32(v, 0, 64);
        if (!q) return bad("invalid queues '" + v + "' (0..64)");
        r.queues = *q;
      } else if (k == "xdp-mode") {
        if (v != "native" && v != "generic" && v != "auto") return bad("invalid xdp-mode '" + v + "'");
        r.xdp_mode = v;
      } else if (k == "managed") {
        if (v != "0" && v != "1") return bad("invalid managed '" + v + "' (0 or 1)");
        r.managed = v == "1";
      } else if (k == "fast-rx") {
        if (v != "0" && v != "1") return bad("invalid fast-rx '" + v + "' (0 or 1)");
        r.fast_rx = v == "1";
      } else if (k == "hook") {
        if (v != "xdp" && v != "tc" && v != "auto") return bad("invalid hook '" + v + "' (xdp, tc or auto)");
        r.hook = v;
      } else {
        return bad("unknown key '" + k + "'");
      }
    }
    if (r.name.empty()) return bad("port without name=");
    if (!names.insert(r.name).second) return bad("port " + r.name + " listed twice");
    st.ports.push_back(r);
  }
  if (!header) return Error{EINVAL, "empty state file"};
  return st;
}

Result<DaemonState> loadState(const std::string& path) {
  FileDesc fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return DaemonState{};
    return errnoError("read state file " + path);
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) {
    text.append(buf, size_t(n));
    if (text.size() > (1u << 20)) return Error{EFBIG, "state file " + path + " is larger than 1 MiB"};
  }
  if (n < 0) return errnoError("read state file " + path);
  auto st = parseState(text);
  if (!st) return Error{st.error().err, "state file " + path + ": " + st.error().what};
  return st;
}

Status saveState(const std::string& path, const DaemonState& st) {
  const std::string data = serializeState(st);
  const std::string tmp = path + ".tmp";
  {
    FileDesc fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return errnoError("write state file " + tmp);
    size_t off = 0;
    while (off < data.size()) {
      ssize_t w = ::write(fd.get(), data.data() + off, data.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        Error e = errnoError("write state file " + tmp);
        ::unlink(tmp.c_str());
        return e;
      }
      off += size_t(w);
    }
    if (::fsync(fd.get())) {
      Error e = errnoError("fsync state file " + tmp);
      ::unlink(tmp.c_str());
      return e;
    }
  }
  if (::rename(tmp.c_str(), path.c_str())) {
    Error e = errnoError("rename " + tmp + " to " + path);
    ::unlink(tmp.c_str());
    return e;
  }
  // Make the rename itself durable.
  std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  FileDesc d(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.valid()) ::fsync(d.get());
  return {};
}

}  // namespace vdev::daemon
