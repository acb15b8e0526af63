// A real VM for the e2e tests and vdev-bench: QEMU boots the guest that
// scripts/vm-guest-image.sh builds -- a Debian kernel, busybox as init,
// virtio-net -- attached to a tap exactly as a user's QEMU is:
//
//   [ip netns exec NS] qemu-system-x86_64 -machine q35 -accel tcg [-cpu C]
//     -nographic -m 256 -no-reboot
//     -kernel K -initrd I -append "console=ttyS0 quiet vdev.ip=A/P vdev.mtu=M"
//     -netdev tap,id=n0,ifname=TAP,script=no,downscript=no[,vnet_hdr=off][,vhost=on]
//     -device virtio-net-pci,netdev=n0,mac=MAC
//
// Without vnet_hdr=off that is QEMU's default: the tap is opened with
// IFF_VNET_HDR and the guest gets checksum and segmentation offloads.
//
// QEMU creates the tap (ifname= names one that does not exist), in the
// namespace it runs in, so the tap is not persistent: it disappears with
// QEMU's fd, however the caller ends -- QEMU is started with
// PR_SET_PDEATHSIG(SIGKILL) and dies with the calling process even if that
// is killed.
//
// The guest talks on its serial console (QEMU's stdio): it prints
// "vdev-guest: ready ..." once eth0 is configured, then runs the commands
// written to it ("@ID CMD", each in the background) and answers with
// "vdev-guest: out ID LINE" for each line of output and
// "vdev-guest: done ID rc=N" (see scripts/vm-guest-image.sh).
//
// Errors are Results (the kit never throws): a boot that fails says why,
// with QEMU's command line and the console's last lines.
//
// Thread safety: one thread drives a QemuGuest; a reader thread of its own
// collects the console.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "testkit/netns.h"

namespace vdev::testkit {

using Millis = std::chrono::milliseconds;

// The files the image script writes.
struct GuestImage {
  std::string dir;
  std::string kernel() const { return dir + "/vmlinuz"; }
  std::string initrd() const { return dir + "/initrd.img"; }
  std::string blob() const { return dir + "/blob"; }  // /srv/blob in the guest
};

// Runs `script` (scripts/vm-guest-image.sh) on `dir`, a folder of the build
// tree (it rebuilds only when its inputs changed; callers run it once per
// process). `skip` is set when a package is missing (the script's exit 3):
// the message says which.
struct ImageOutcome {
  std::optional<GuestImage> image;
  std::string problem;  // why there is no image
  bool skip = false;
};
ImageOutcome buildGuestImage(const std::string& script, const std::string& dir);

// qemu-system-x86_64: $VDEV_QEMU if set, else the first in $PATH; "" if
// that is not an executable file.
std::string qemuBinary();

struct GuestOptions {
  std::string tap;      // ifname= for QEMU to create
  std::string mac;      // the guest NIC's MAC (locally administered)
  std::string address;  // vdev.ip: "198.18.40.2/24"
  int mtu = 1500;
  bool vnetHdr = true;  // false: vnet_hdr=off; true: QEMU's default (no option)
  bool vhost = false;   // vhost=on: the host's vhost-net moves the frames (needs /dev/vhost-net)
  std::string accel = "tcg";  // -accel: "tcg", "tcg,thread=multi", "kvm"
  std::string cpu;            // -cpu ("max", "host"); "" for QEMU's default
  const Netns* ns = nullptr;  // QEMU (and so its tap) runs in this namespace; null: the caller's
  // TCG on two loaded cores: a boot takes 10-30 s; allow far more.
  Millis bootTimeout = Millis(150000);
};

// What a guest command printed and its exit status.
struct GuestReply {
  int rc = -1;
  std::vector<std::string> out;
  std::string text() const;  // the output lines joined with '\n'
};

// Whether this host has vhost-net for QEMU (/dev/vhost-net opens).
bool hasVhostNet();

class QemuGuest {
 public:
  // Starts QEMU, waits for the tap it creates, gives the tap's host side
  // `tapMac`, disables IPv6 on it and brings it up, then waits for the
  // guest's ready line. An Error with the console log if QEMU exits or the
  // deadline passes (QEMU is killed then).
  static Result<std::unique_ptr<QemuGuest>> boot(const GuestImage& image, const GuestOptions& opts,
                                                 const std::string& tapMac);
  // Kills QEMU (SIGKILL: the guest has nothing to save) and waits until the
  // tap has gone; deletes it if it has not.
  ~QemuGuest();
  QemuGuest(const QemuGuest&) = delete;
  QemuGuest& operator=(const QemuGuest&) = delete;

  const GuestOptions& options() const { return opts_; }
  const std::string& tap() const { return opts_.tap; }
  const std::vector<std::string>& argv() const { return argv_; }
  // The "vdev-guest: ready ..." line.
  const std::string& readyLine() const { return ready_; }
  // Whether the guest's virtio-net driver negotiated feature `bit`
  // (VIRTIO_NET_F_CSUM = 0, VIRTIO_NET_F_HOST_TSO4 = 11).
  bool virtioFeature(unsigned bit) const;

  // Sends a shell command (one line); returns its id. The guest runs it in
  // the background with stdin /dev/null.
  Result<int> start(const std::string& cmd);
  // Waits for command `id` to finish: ETIMEDOUT, or ECHILD if QEMU exits.
  Result<GuestReply> wait(int id, Millis timeout);
  Result<GuestReply> run(const std::string& cmd, Millis timeout);

  // The last `lines` lines of the console, for failure messages.
  std::string consoleTail(size_t lines = 60) const;

 private:
  explicit QemuGuest(const GuestOptions& opts) : opts_(opts) {}
  Status startQemu(const GuestImage& image);
  Status awaitReady(const std::string& tapMac);
  void readLoop();
  bool exited() const;  // QEMU closed its stdout
  void stop();          // the destructor's work; idempotent

  GuestOptions opts_;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  std::thread reader_;
  std::string ready_;
  int nextId_ = 1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> console_;                   // every line
  std::map<int, std::vector<std::string>> out_;        // by command id
  std::map<int, int> done_;                            // id -> rc
  bool eof_ = false;                                   // QEMU closed its stdout
};

}  // namespace vdev::testkit
