// What the suites that drive vdevd through the vdevctl binary share: a
// vdevd of the test's own (socket and state file in a temp dir the
// unprivileged client can traverse), and vdevctl run as root or as another
// user, with its output checked or parsed.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"

namespace vdev::e2e {

inline constexpr uid_t kNobody = 65534;
inline constexpr gid_t kNogroup = 65534;

// Credentials a child switches to before exec.
struct Creds {
  uid_t uid;
  gid_t gid;
};
inline constexpr Creds kNobodyCreds{kNobody, kNogroup};

// Runs argv (no shell), capturing stdout and stderr; as `creds` if given
// (supplementary groups dropped: only the primary gid counts). Kills it after
// `timeout`. Never throws.
inline CmdResult runArgv(const std::vector<std::string>& argv, std::optional<Creds> creds = {},
                         Millis timeout = 20s) {
  ProcessSpec p{.argv = argv, .timeout = timeout};
  if (creds) p.uid = creds->uid, p.gid = creds->gid;
  return runProcess(p);
}

// "vdevctl ARGS", its exit status and output, for failure messages.
inline std::string describe(const std::vector<std::string>& args, const CmdResult& r) {
  std::string s = "vdevctl";
  for (const auto& a : args) s += " " + a;
  return s + "\n  exit " + std::to_string(r.status) + "\n  stdout: " + r.out + "\n  stderr: " + r.err;
}

class VdevctlFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vdevctlBinary().empty()) GTEST_SKIP() << "vdevctl not built and $VDEVCTL not set";
    requireRoot();
    if (IsSkipped()) return;
    VDEV_E2E_REQUIRE_VDEVD();
    // The socket's directory must be traversable for the unprivileged client.
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0) << std::strerror(errno);
  }

  std::unique_ptr<Vdevd> startVdevd(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--socket", sock_, "--state", state_};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<Vdevd>(args);
  }

  // `vdevctl -S SOCK ARGS`, as `as` if given.
  CmdResult ctl(const std::vector<std::string>& args, std::optional<Creds> as = {},
                Millis timeout = 20s) {
    std::vector<std::string> argv = {as ? vdevctlForOthers() : vdevctlBinary(), "-S", sock_};
    argv.insert(argv.end(), args.begin(), args.end());
    return runArgv(argv, as, timeout);
  }
  // Runs and expects success; returns stdout.
  std::string ok(const std::vector<std::string>& args, std::optional<Creds> as = {}) {
    const CmdResult r = ctl(args, as);
    if (!r.ok()) throw HarnessError("failed: " + describe(args, r));
    return r.out;
  }
  // `vdevctl -j ARGS`, parsed.
  Json json(std::vector<std::string> args) {
    args.insert(args.begin(), "-j");
    const std::string out = ok(args);
    try {
      return Json::parse(out);
    } catch (const std::exception& e) {
      throw HarnessError(std::string("vdevctl -j output: ") + e.what() + "\n" + out);
    }
  }

  // The port's object in `port show -j`, or nullptr.
  static const Json* findPort(const Json& ports, const std::string& name) {
    for (const Json& p : ports)
      if (p.at("name").get<std::string>() == name) return &p;
    return nullptr;
  }

  // The vdevctl another user runs. The build tree's may lie below a
  // directory only root can enter (a clone in /root, mode 0700 on Debian),
  // where exec as that user fails with nothing on stderr (exit 127): it gets
  // a copy in the test's own directory (0755, under /tmp) instead, made once.
  const std::string& vdevctlForOthers() {
    if (vdevctlCopy_.empty()) {
      const std::string copy = dir_.file("vdevctl");
      const CmdResult r = runArgv({"cp", vdevctlBinary(), copy});
      if (!r.ok() || ::chmod(copy.c_str(), 0755) != 0)
        throw HarnessError("copy vdevctl for an unprivileged user to " + copy + ": " + r.err);
      vdevctlCopy_ = copy;
    }
    return vdevctlCopy_;
  }

  TempDir dir_;
  std::string vdevctlCopy_;
  std::string sock_ = dir_.file("vdevd.sock");  // a suite may put them elsewhere in its SetUp
  std::string state_ = dir_.file("vdevd.state");
};

}  // namespace vdev::e2e
