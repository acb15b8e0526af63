// vdev::sd (vdev/sd_notify.h): what reaches a NOTIFY_SOCKET, byte for byte.
//
// The test plays systemd: it binds its own AF_UNIX datagram socket in a
// temporary directory, points NOTIFY_SOCKET at it, and reads what the
// wrappers send. Unprivileged.
#include "daemon/sd_notify.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

using namespace std::chrono_literals;

class SdNotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vdev-sdnotify-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    path_ = dir_ + "/notify";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd_, 0) << std::strerror(errno);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    ASSERT_LT(path_.size(), sizeof sa.sun_path);
    std::memcpy(sa.sun_path, path_.c_str(), path_.size() + 1);
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
  }

  void TearDown() override {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    if (fd_ >= 0) close(fd_);
    if (!path_.empty()) unlink(path_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }

  // One datagram, or nullopt after `timeout`.
  std::optional<std::string> recvOne(std::chrono::milliseconds timeout = 2s) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }

  std::string dir_, path_;
  int fd_ = -1;
};

TEST_F(SdNotifyTest, ReadyStatusStoppingWatchdog) {
  EXPECT_TRUE(vdev::daemon::sd::notifySocketSet());

  auto st = vdev::daemon::sd::notifyReady();
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(recvOne(), "READY=1");

  st = vdev::daemon::sd::notifyStatus("3 ports up, 0 down");
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(recvOne(), "STATUS=3 ports up, 0 down");

  st = vdev::daemon::sd::notifyWatchdog();
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(recvOne(), "WATCHDOG=1");

  st = vdev::daemon::sd::notifyStopping();
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(recvOne(), "STOPPING=1");
}

TEST_F(SdNotifyTest, ReadyWithStatusIsOneDatagram) {
  ASSERT_TRUE(vdev::daemon::sd::notifyReady("ready: 2 ports"));
  EXPECT_EQ(recvOne(), "READY=1\nSTATUS=ready: 2 ports");
}

TEST_F(SdNotifyTest, StatusIsOneLine) {
  // A newline would start a second assignment (e.g. "READY=1") that the
  // caller never meant to send.
  ASSERT_TRUE(vdev::daemon::sd::notifyStatus("port vdc1 gone\nREADY=1"));
  EXPECT_EQ(recvOne(), "STATUS=port vdc1 gone READY=1");
}

TEST_F(SdNotifyTest, WatchdogInterval) {
  EXPECT_EQ(vdev::daemon::sd::watchdogInterval(), 0us) << "no WATCHDOG_USEC: off";

  setenv("WATCHDOG_USEC", "30000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  EXPECT_EQ(vdev::daemon::sd::watchdogInterval(), 30s);
  // The variables stay (unset_environment=0): asking again gives the same.
  EXPECT_EQ(vdev::daemon::sd::watchdogInterval(), 30s);

  ASSERT_TRUE(vdev::daemon::sd::notifyWatchdog());
  EXPECT_EQ(recvOne(), "WATCHDOG=1");

  // Inherited from a parent: meant for another process.
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  EXPECT_EQ(vdev::daemon::sd::watchdogInterval(), 0us);

  // Without WATCHDOG_PID, the interval applies to whoever reads it.
  unsetenv("WATCHDOG_PID");
  EXPECT_EQ(vdev::daemon::sd::watchdogInterval(), 30s);
}

TEST_F(SdNotifyTest, NoSocketIsANoOp) {
  unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(vdev::daemon::sd::notifySocketSet());
  EXPECT_TRUE(vdev::daemon::sd::notifyReady("x"));
  EXPECT_TRUE(vdev::daemon::sd::notifyStatus("x"));
  EXPECT_TRUE(vdev::daemon::sd::notifyWatchdog());
  EXPECT_TRUE(vdev::daemon::sd::notifyStopping());
  EXPECT_EQ(recvOne(100ms), std::nullopt) << "nothing may be sent";
}

TEST_F(SdNotifyTest, UnreachableSocketIsAnError) {
  const std::string gone = dir_ + "/gone";
  setenv("NOTIFY_SOCKET", gone.c_str(), 1);
  auto st = vdev::daemon::sd::notifyReady();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().err, ENOENT) << st.error().message();
  EXPECT_NE(st.error().message().find("sd_notify READY=1"), std::string::npos) << st.error().message();
}

}  // namespace
