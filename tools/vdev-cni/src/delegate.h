// Delegation to another CNI plugin (the IPAM plugin named by ipam.type), as
// the spec's "Delegated plugin protocol" defines it: the plugin is found in
// CNI_PATH, run with this invocation's environment (CNI_COMMAND set to the
// delegated command) and the network configuration on stdin; its stdout is a
// result or an error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni.h"

namespace vdev::cni {

class Delegate {
 public:
  // Finds `type` in env.path. Errors: kErrIpamExec when it is not there.
  Delegate(std::string type, const Env& env);

  const std::string& type() const { return type_; }
  const std::string& binary() const { return binary_; }

  // The versions the plugin speaks (its VERSION answer). Errors: kErrIpamExec.
  const std::vector<std::string>& versions();
  bool speaks(const std::string& version) { return contains(versions(), version); }

  // The version to speak to the plugin for a configuration of `version`:
  // that one if the plugin has it; for a 1.x configuration the highest 1.x
  // the plugin has (1.0.0 and 1.1.0 results have the same layout; Debian 12's
  // host-local stops at 1.0.0). Errors: kErrIncompatibleVersion.
  std::string negotiate(const std::string& version);

  // ADD: the plugin's result. CHECK, DEL, GC, STATUS: nothing on success.
  // `conf` is the whole network configuration; its cniVersion is replaced by
  // `version`. A plugin that fails with an error JSON: that error, unchanged
  // (its code included); anything else: kErrIpamExec.
  Result add(const Json& conf, const std::string& version);
  void run(Command cmd, const Json& conf, const std::string& version);

 private:
  static bool contains(const std::vector<std::string>& v, const std::string& s);
  // Runs the plugin; returns its stdout. Throws on a non-zero exit.
  std::string exec(Command cmd, const std::string& input);

  std::string type_;
  std::string binary_;
  const Env& env_;
  std::optional<std::vector<std::string>> versions_;
};

}  // namespace vdev::cni
