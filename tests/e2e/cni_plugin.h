// Runs vdev-cni exactly as a container runtime does: a fresh process whose
// environment holds the CNI_* variables (and PATH), the network configuration
// on stdin, the result or error JSON read from stdout. Shared by cni_test and
// vm_test. Header-only, test code (exceptions allowed).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace vdev::e2e::cni {

using OJson = nlohmann::ordered_json;

// $VDEV_CNI, else the CMake target's path, else "".
inline std::string pluginBinary() {
  if (const char* env = std::getenv("VDEV_CNI"); env && *env) return env;
#ifdef VDEV_E2E_VDEV_CNI
  return VDEV_E2E_VDEV_CNI;
#else
  return "";
#endif
}

// Where Debian's containernetworking-plugins keep host-local.
inline constexpr const char* kDebianCniDir = "/usr/lib/cni";

inline std::string pluginDir() {
  const std::string b = pluginBinary();
  return b.substr(0, b.rfind('/'));
}

struct Invocation {
  std::string command;      // CNI_COMMAND
  std::string containerId;  // CNI_CONTAINERID ("" leaves it unset)
  std::string netns;        // CNI_NETNS
  std::string ifname;       // CNI_IFNAME
  std::string args;         // CNI_ARGS
  std::string path;         // CNI_PATH; default: the plugin's directory and /usr/lib/cni
  std::map<std::string, std::string> extraEnv;
};

struct Outcome {
  int status = -1;
  std::string out, err;
  // stdout as JSON; throws HarnessError with everything when it is not.
  OJson json() const {
    try {
      return OJson::parse(out);
    } catch (const std::exception& e) {
      throw HarnessError(std::string("plugin stdout is not JSON: ") + e.what() + "\n" + describe());
    }
  }
  std::string describe() const {
    return "exit " + std::to_string(status) + "\n  stdout: " + out + "\n  stderr: " + err;
  }
};

// Runs the plugin; kills it after `timeout`. Never throws.
inline Outcome runPlugin(const Invocation& inv, const std::string& stdinText,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  Outcome r;
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  const auto set = [&](const char* k, const std::string& v) {
    if (!v.empty()) env.push_back(std::string(k) + "=" + v);
  };
  set("CNI_COMMAND", inv.command);
  set("CNI_CONTAINERID", inv.containerId);
  set("CNI_NETNS", inv.netns);
  set("CNI_IFNAME", inv.ifname);
  set("CNI_ARGS", inv.args);
  set("CNI_PATH", inv.path.empty() ? pluginDir() + ":" + kDebianCniDir : inv.path);
  for (const auto& [k, v] : inv.extraEnv) env.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string bin = pluginBinary();
  char* argv[] = {const_cast<char*>(bin.c_str()), nullptr};

  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) < 0) return r;
  if (::pipe2(out, O_CLOEXEC) < 0) return r;
  if (::pipe2(err, O_CLOEXEC) < 0) return r;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0) ::_exit(126);
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    return r;
  }
  // Configurations are far below a pipe's capacity: write it all, then read.
  ::signal(SIGPIPE, SIG_IGN);  // a plugin that exits before reading stdin
  for (size_t off = 0; off < stdinText.size();) {
    const ssize_t n = ::write(in[1], stdinText.data() + off, stdinText.size() - off);
    if (n <= 0) break;
    off += size_t(n);
  }
  ::close(in[1]);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open = 2;
  bool killed = false;
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (::poll(fds, 2, left > 0 ? int(left) : 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i ? r.err : r.out).append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return r;
}

// A network configuration for vdev-cni with host-local IPAM: `subnet`
// (e.g. "198.18.200.0/24"), its state in `ipamDir` (a test's temp dir, so
// nothing is left in /var/lib/cni).
inline OJson netConf(const std::string& version, const std::string& name,
                     const std::string& socket, const std::string& subnet,
                     const std::string& ipamDir) {
  OJson c = OJson::object();
  c["cniVersion"] = version;
  c["name"] = name;
  c["type"] = "vdev-cni";
  c["socket"] = socket;
  c["mtu"] = 1500;
  OJson range = OJson::object();
  range["subnet"] = subnet;
  c["ipam"] = {{"type", "host-local"},
               {"dataDir", ipamDir},
               {"ranges", OJson::array({OJson::array({range})})}};
  return c;
}

// The configuration with the ADD result as prevResult (CHECK, DEL).
inline OJson withPrev(OJson conf, const OJson& result) {
  conf["prevResult"] = result;
  return conf;
}

}  // namespace vdev::e2e::cni
