// vdevd's state file end to end: a newer vdevd's file read by this one
// loses nothing, and a disk that refuses the save (full: ENOSPC; read-only:
// EROFS) refuses the change with it -- what vdevctl was told succeeded is on
// disk, what it was told failed is not applied, the old file is intact, and
// vdevd runs on without leaking (its fds here; memory: LeakSanitizer at its
// stop in the ASan build).
//
// The state directory is a tmpfs of 64 KiB of the test's own, mounted in a
// private mount namespace the test process makes (vdevd, its child, sees
// it; nothing outside does, and it goes with the process even if the test
// dies), on a directory under /run the test makes and removes.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"
#include "vdevctl_fixture.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

class StateFileTest : public VdevctlFixture {
 protected:
  void SetUp() override {
    VdevctlFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    static bool private_ns = false;
    if (!private_ns) {
      ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << "unshare(CLONE_NEWNS): " << std::strerror(errno);
      // Nothing mounted from here on propagates to the host's namespace.
      ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
      private_ns = true;
    }
    char d[] = "/run/vdev-e2e-state.XXXXXX";
    ASSERT_NE(::mkdtemp(d), nullptr) << std::strerror(errno);
    run_ = d;
    ASSERT_EQ(::chmod(run_.c_str(), 0755), 0);  // the socket, for an unprivileged vdevctl
    mnt_ = run_ + "/state";
    ASSERT_EQ(::mkdir(mnt_.c_str(), 0700), 0) << std::strerror(errno);
    // 64 KiB; mode 0700: vdevd's state directory must be private (ensurePrivateDir).
    ASSERT_EQ(::mount("vdev-e2e-state", mnt_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "size=64k,mode=0700"),
              0)
        << std::strerror(errno);
    mounted_ = true;
    sock_ = run_ + "/vdevd.sock";
    state_ = mnt_ + "/vdevd.state";
  }
  void TearDown() override {
    if (mounted_) ::umount2(mnt_.c_str(), MNT_DETACH);
    if (!run_.empty()) std::filesystem::remove_all(run_);
  }

  // Fills the tmpfs: the next write in it gets ENOSPC.
  void fill() {
    std::ofstream f(filler());
    const std::string block(4096, 'x');
    for (int i = 0; i < 64 && f; i++) f << block << std::flush;
    ASSERT_FALSE(f) << "64 KiB tmpfs took 256 KiB";
  }
  std::string filler() const { return mnt_ + "/filler"; }
  void remount(bool ro) {
    ASSERT_EQ(::mount(nullptr, mnt_.c_str(), nullptr, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC | (ro ? MS_RDONLY : 0),
                      "size=64k,mode=0700"),
              0)
        << std::strerror(errno);
  }

  static size_t openFds(pid_t pid) {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
      n++;
    return n;
  }

  // A refused request: exit 1, `why` and `errtext` on stderr, nothing on stdout.
  void refused(const std::vector<std::string>& args, const std::string& why, const std::string& errtext) {
    const CmdResult r = ctl(args);
    EXPECT_EQ(r.status, 1) << describe(args, r);
    EXPECT_NE(r.err.find(why), std::string::npos) << describe(args, r);
    EXPECT_NE(r.err.find(errtext), std::string::npos) << describe(args, r);
    EXPECT_TRUE(r.out.empty()) << describe(args, r);
  }

  std::string run_, mnt_;
  bool mounted_ = false;
};

// A newer vdevd's file (a key of a port this vdevd does not know, a record
// kind it does not know): the port starts with what it knows, the rest is
// named in `info`, and kept in the file through a port set, a restart and
// another port's delete.
TEST_F(StateFileTest, ANewerFilesKeysAndRecordsSurviveThisVdevd) {
  const std::string t1 = uniqueName('t'), t2 = uniqueName('t');
  DeviceGuard guard({t1, t2});
  auto d = startVdevd();
  ok({"port", "add", t1, "type", "tap", "create"});
  ok({"port", "add", t2, "type", "tap", "create"});
  ASSERT_TRUE(expectCleanStop(*d));

  // What a newer vdevd would have added to that file.
  std::string text = readFile(state_);
  const size_t at = text.find("port name=" + t1 + " ");
  ASSERT_NE(at, std::string::npos) << text;
  text.insert(text.find('\n', at), " mtu=9000 qos_class=gold");
  text += "mirror name=m1 from=" + t1 + " to=" + t2 + "\n";
  {
    std::ofstream(state_) << text;
  }

  d = startVdevd();
  Json ports = json({"port", "show"});
  ASSERT_TRUE(findPort(ports, t1)) << ports.dump() << d->logs();
  EXPECT_FALSE(findPort(ports, t1)->contains("link_note")) << "started with what it knows: " << ports.dump();
  const std::string info = ok({"info"});
  EXPECT_NE(info.find("keys this vdevd does not know (a newer one's) kept in the file, not applied: mtu=9000 "
                      "qos_class=gold"),
            std::string::npos)
      << info;
  EXPECT_NE(info.find("not applied: mirror name=m1"), std::string::npos) << info;
  EXPECT_EQ(readFile(state_ + ".rejected"), "") << "a newer file is not set aside";

  ok({"port", "set", t1, "isolated", "on"});  // saves the file
  text = readFile(state_);
  EXPECT_NE(text.find(" isolated=1"), std::string::npos) << text;
  EXPECT_NE(text.find(" mtu=9000 qos_class=gold\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmirror name=m1 from=" + t1 + " to=" + t2 + "\n"), std::string::npos) << text;
  ASSERT_TRUE(expectCleanStop(*d));

  d = startVdevd();
  EXPECT_TRUE((*findPort(json({"port", "show"}), t1)).at("isolated").get<bool>());
  ok({"port", "del", t2});
  text = readFile(state_);
  EXPECT_EQ(text.find("port name=" + t2), std::string::npos) << text;
  EXPECT_NE(text.find(" mtu=9000 qos_class=gold\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmirror name=m1"), std::string::npos) << text;
  ok({"port", "del", t1});
  EXPECT_EQ(readFile(state_).find(" mtu=9000"), std::string::npos) << "its keys went with the port";
  EXPECT_TRUE(expectCleanStop(*d));
}

// A full disk, then a read-only one: every change that cannot be saved is
// refused and not applied, the file is what it was, no temporary is left,
// vdevd runs on with the fds it had; once the disk takes writes again the
// same requests succeed and are on disk.
TEST_F(StateFileTest, AChangeThatCannotBeSavedIsRefusedAndNotApplied) {
  const std::string t1 = uniqueName('t'), t2 = uniqueName('t');
  DeviceGuard guard({t1, t2});
  auto d = startVdevd();
  ok({"port", "add", t1, "type", "tap", "create"});
  const std::string before = readFile(state_);
  ASSERT_NE(before.find("port name=" + t1 + " "), std::string::npos) << before;
  const std::string shown = ok({"-j", "port", "show"});
  const size_t fds = openFds(d->pid());

  const auto unchanged = [&](const std::string& step) {
    EXPECT_EQ(readFile(state_), before) << step;
    EXPECT_FALSE(std::filesystem::exists(state_ + ".tmp")) << step << ": temporary file left behind";
    EXPECT_EQ(ok({"-j", "port", "show"}), shown) << step << ": a refused change was applied";
    EXPECT_FALSE(linkExists(t2)) << step << ": the refused add left its device";
    EXPECT_TRUE(linkExists(t1)) << step;
    EXPECT_TRUE(d->running()) << step << d->logs();
  };
  struct Fault {
    const char* name;
    std::string errtext;
  };
  for (const Fault& f : {Fault{"full", "No space left on device"}, Fault{"read-only", "Read-only file system"}}) {
    SCOPED_TRACE(f.name);
    if (std::string(f.name) == "full") fill();
    else remount(true);
    if (HasFatalFailure()) return;
    refused({"port", "add", t2, "type", "tap", "create"}, "port not added: write state file", f.errtext);
    unchanged("add");
    refused({"port", "set", t1, "isolated", "on", "police-pps", "5"}, "port " + t1 + " not changed", f.errtext);
    unchanged("set");
    refused({"port", "del", t1}, "port not deleted", f.errtext);
    unchanged("del");
    // The control connections the refusals used are closed: vdevd holds the
    // fds it held before (a leaked temporary file or connection would show).
    EXPECT_TRUE(waitUntil([&] { return openFds(d->pid()) == fds; }, 5s, 20ms))
        << openFds(d->pid()) << " fds open, " << fds << " before";
    if (std::string(f.name) == "full") std::filesystem::remove(filler());
    else remount(false);
  }

  // A disk that takes writes again: what succeeds is on disk.
  ok({"port", "set", t1, "isolated", "on"});
  EXPECT_NE(readFile(state_).find(" isolated=1"), std::string::npos) << readFile(state_);
  ok({"port", "add", t2, "type", "tap", "create"});
  EXPECT_NE(readFile(state_).find("port name=" + t2 + " "), std::string::npos) << readFile(state_);
  ok({"port", "del", t1});
  EXPECT_EQ(readFile(state_).find("port name=" + t1 + " "), std::string::npos) << readFile(state_);
  EXPECT_FALSE(linkExists(t1));
  ok({"port", "del", t2});
  EXPECT_TRUE(expectCleanStop(*d));
}

}  // namespace
}  // namespace vdev::e2e
