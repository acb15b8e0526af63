// Delegation to the IPAM plugin: see delegate.h.
#include "delegate.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/fd.h"

extern char** environ;

namespace vdev::cni {

namespace {

std::string sysError(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Delegate::Delegate(std::string type, const Env& env) : type_(std::move(type)), env_(env) {
  for (const auto& dir : env.path) {
    const std::string p = dir + "/" + type_;
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0) {
      binary_ = p;
      return;
    }
  }
  std::string dirs;
  for (const auto& d : env.path) dirs += (dirs.empty() ? "" : ":") + d;
  throw CniError(kErrIpamExec, "IPAM plugin \"" + type_ + "\" not found in CNI_PATH " + dirs);
}

bool Delegate::contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Delegate::exec(Command cmd, const std::string& input) {
  // stdin from a memfd rather than a pipe: no deadlock whatever the sizes.
  vdev::FileDesc in(::memfd_create("cni-stdin", MFD_CLOEXEC));
  if (!in.valid()) throw CniError(kErrIo, sysError("memfd_create"));
  for (size_t off = 0; off < input.size();) {
    const ssize_t n = ::write(in.get(), input.data() + off, input.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw CniError(kErrIo, sysError("write to the IPAM plugin's stdin"));
    off += size_t(n);
  }
  if (::lseek(in.get(), 0, SEEK_SET) != 0) throw CniError(kErrIo, sysError("lseek"));
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw CniError(kErrIo, sysError("pipe"));
  vdev::FileDesc rd(out[0]), wr(out[1]);

  // The same environment, with this command.
  const std::string cmdVar = std::string("CNI_COMMAND=") + commandName(cmd);
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "CNI_COMMAND=", 12) != 0) envp.push_back(*e);
  envp.push_back(const_cast<char*>(cmdVar.c_str()));
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(binary_.c_str()), nullptr};

  const pid_t pid = ::fork();
  if (pid < 0) throw CniError(kErrIo, sysError("fork"));
  if (pid == 0) {
    // stderr stays ours: the runtime logs what the IPAM plugin says there.
    if (::dup2(in.get(), 0) < 0 || ::dup2(wr.get(), 1) < 0) ::_exit(126);
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  wr.reset();
  std::string output;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, size_t(n));
  }
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return output;

  const std::string who = "IPAM plugin " + type_ + " (" + commandName(cmd) + ")";
  // A CNI error from the plugin is passed on as it is: the runtime sees the
  // IPAM plugin's own code and message (as libcni-based plugins do).
  const Json err = Json::parse(output, nullptr, false);
  if (err.is_object() && err.contains("code") && err["code"].is_number_unsigned()) {
    const std::string msg =
        err.contains("msg") && err["msg"].is_string() ? err["msg"].get<std::string>() : "";
    const std::string details =
        err.contains("details") && err["details"].is_string() ? err["details"].get<std::string>()
                                                              : "";
    throw CniError(err["code"].get<unsigned>(), who + ": " + msg, details);
  }
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 127)
    throw CniError(kErrIpamExec, who + ": cannot execute " + binary_);
  throw CniError(kErrIpamExec,
                 who + (WIFEXITED(ws) ? " exited with status " + std::to_string(WEXITSTATUS(ws))
                                      : " killed by signal " + std::to_string(WTERMSIG(ws))),
                 output);
}

const std::vector<std::string>& Delegate::versions() {
  if (versions_) return *versions_;
  Json q = Json::object();
  q["cniVersion"] = kLatestVersion;
  const std::string out = exec(Command::kVersion, dumpJson(q));
  const Json j = Json::parse(out, nullptr, false);
  versions_.emplace();
  if (!j.is_object() || !j.contains("supportedVersions") || !j["supportedVersions"].is_array())
    throw CniError(kErrIpamExec, "IPAM plugin " + type_ + ": VERSION answered no supportedVersions",
                   out);
  for (const Json& v : j["supportedVersions"])
    if (v.is_string()) versions_->push_back(v.get<std::string>());
  return *versions_;
}

std::string Delegate::negotiate(const std::string& version) {
  const auto& v = versions();
  if (contains(v, version)) return version;
  if (versionAtLeast(version, "1.0.0")) {
    std::string best;
    for (const auto& s : v) {
      try {
        if (versionAtLeast(s, "1.0.0") && compareVersions(s, version) < 0 &&
            (best.empty() || compareVersions(s, best) > 0))
          best = s;
      } catch (const CniError&) {
        // a version string we cannot read: not a candidate
      }
    }
    if (!best.empty()) return best;
  }
  throw CniError(kErrIncompatibleVersion, "incompatible CNI versions",
                 "config is \"" + version + "\", IPAM plugin " + type_ + " supports " +
                     versionList(v));
}

Result Delegate::add(const Json& conf, const std::string& version) {
  Json c = conf;
  c["cniVersion"] = version;
  const std::string out = exec(Command::kAdd, dumpJson(c));
  const Json j = Json::parse(out, nullptr, false);
  if (j.is_discarded())
    throw CniError(kErrIpamExec, "IPAM plugin " + type_ + " (ADD): its result is not JSON", out);
  try {
    return decodeResult(j, "the IPAM plugin's result");
  } catch (const CniError& e) {
    throw CniError(kErrIpamExec, "IPAM plugin " + type_ + " (ADD): " + e.msg, out);
  }
}

void Delegate::run(Command cmd, const Json& conf, const std::string& version) {
  Json c = conf;
  c["cniVersion"] = version;
  (void)exec(cmd, dumpJson(c));
}

}  // namespace vdev::cni
