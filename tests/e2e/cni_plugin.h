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
  const CmdResult c =
      runProcess({.argv = {pluginBinary()}, .env = env, .stdin_text = stdinText, .timeout = timeout});
  Outcome r;
  r.status = c.status;
  r.out = c.out;
  r.err = c.err;
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
