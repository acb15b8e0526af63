// qemu_guest.cpp - see testkit/qemu_guest.h.
#include "testkit/qemu_guest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "testkit/process.h"
#include "testkit/wait.h"

namespace vdev::testkit {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::string_view kTag = "vdev-guest: ";

// `ip [-n NS] ARGS...`, checked.
Status ipIn(const Netns* ns, std::vector<std::string> args) {
  std::vector<std::string> argv = {"ip"};
  if (ns) argv.insert(argv.end(), {"-n", ns->name()});
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = runChecked({.argv = std::move(argv)});
  if (!r) return r.error();
  return {};
}

// The text after "vdev-guest: " on a console line, or "" if the line has
// none. Firmware and kernel write terminal escapes that can precede it.
std::string_view tagged(std::string_view line) {
  const size_t pos = line.find(kTag);
  return pos == std::string_view::npos ? std::string_view() : line.substr(pos + kTag.size());
}

// "ID REST" -> ID, REST; false if it does not start with a number.
bool splitId(std::string_view s, int& id, std::string_view& rest) {
  size_t i = 0;
  int v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
  if (i == 0) return false;
  id = v;
  rest = i < s.size() && s[i] == ' ' ? s.substr(i + 1) : s.substr(i);
  return true;
}

}  // namespace

std::string GuestReply::text() const {
  std::string s;
  for (const auto& l : out) s += l + "\n";
  return s;
}

ImageOutcome buildGuestImage(const std::string& script, const std::string& dir) {
  ImageOutcome o;
  // The first build copies a kernel and packs an initramfs: seconds.
  auto r = runCaptured({.argv = {"sh", script, dir}, .timeout = std::chrono::seconds(300)});
  if (!r) {
    o.problem = "cannot run " + script + ": " + r.error().message();
  } else if (r->status == 3) {
    o.skip = true;
    o.problem = "cannot build the test guest (scripts/install-deps.sh installs what it needs): " + r->err;
  } else if (!r->ok()) {
    o.problem = script + " failed (status " + std::to_string(r->status) + "): " + r->out + r->err;
  } else {
    o.image = GuestImage{dir};
  }
  return o;
}

bool hasVhostNet() { return ::access("/dev/vhost-net", R_OK | W_OK) == 0; }

std::string qemuBinary() {
  if (const char* env = std::getenv("VDEV_QEMU"); env && *env) return testkit::isExecutable(env) ? env : "";
  return testkit::findExecutable("qemu-system-x86_64");
}

Result<std::unique_ptr<QemuGuest>> QemuGuest::boot(const GuestImage& image, const GuestOptions& opts,
                                                  const std::string& tapMac) {
  std::unique_ptr<QemuGuest> g(new QemuGuest(opts));
  Status st = g->startQemu(image);
  if (st.ok()) st = g->awaitReady(tapMac);
  if (!st.ok()) {
    std::string msg = st.error().message();
    msg += "\nQEMU:";
    for (const auto& a : g->argv_) msg += " " + a;
    msg += "\nconsole:\n" + g->consoleTail();
    g->stop();
    return Error{st.error().err, msg};
  }
  return g;
}

Status QemuGuest::startQemu(const GuestImage& image) {
  const std::string qemu = qemuBinary();
  if (qemu.empty()) return Error{ENOENT, "qemu-system-x86_64 not found"};
  if (linkExists(opts_.tap, opts_.ns)) return Error{EEXIST, "tap " + opts_.tap + " already exists"};
  std::string netdev = "tap,id=n0,ifname=" + opts_.tap + ",script=no,downscript=no";
  if (!opts_.vnetHdr) netdev += ",vnet_hdr=off";
  if (opts_.vhost) netdev += ",vhost=on";
  if (opts_.ns) {
    // ip netns exec execs QEMU: the pid stays QEMU's.
    const std::string ip = findExecutable("ip");
    if (ip.empty()) return Error{ENOENT, "ip (iproute2) not found"};
    argv_ = {ip, "netns", "exec", opts_.ns->name()};
  }
  const std::vector<std::string> qemuArgs = {
      qemu,
      "-machine", "q35",
      "-accel", opts_.accel,
      "-nographic",
      "-m", "256",
      // A guest that panics stops instead of booting again.
      "-no-reboot",
      "-kernel", image.kernel(),
      "-initrd", image.initrd(),
      "-append", "console=ttyS0 quiet vdev.ip=" + opts_.address + " vdev.mtu=" + std::to_string(opts_.mtu),
      "-netdev", netdev,
      "-device", "virtio-net-pci,netdev=n0,mac=" + opts_.mac};
  argv_.insert(argv_.end(), qemuArgs.begin(), qemuArgs.end());
  if (!opts_.cpu.empty()) argv_.insert(argv_.end(), {"-cpu", opts_.cpu});

  // A command written after QEMU died must fail with EPIPE, not kill the
  // caller with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) < 0) return errnoError("pipe");
  if (::pipe2(out, O_CLOEXEC) < 0) {
    const Error e = errnoError("pipe");
    ::close(in[0]), ::close(in[1]);
    return e;
  }
  std::vector<char*> cargv;
  for (auto& a : argv_) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // Dies with the caller (the forking thread is its main thread), so a
    // killed test or benchmark leaves no QEMU and, with it, no tap.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close_range(3, ~0u, 0);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  const int forkErr = errno;
  ::close(in[0]);
  ::close(out[1]);
  stdin_ = in[1];
  stdout_ = out[0];
  if (pid_ < 0) {
    ::close(stdin_), ::close(stdout_);
    stdin_ = stdout_ = -1;
    return Error{forkErr, "fork"};
  }
  reader_ = std::thread([this] { readLoop(); });
  return {};
}

Status QemuGuest::awaitReady(const std::string& tapMac) {
  const auto deadline = Clock::now() + opts_.bootTimeout;
  // QEMU creates the tap while it starts, before the guest runs. The
  // kernel lists a new device before its NETDEV_REGISTER notifiers have
  // run, so the tap can be there a moment before its IPv6 sysctls are:
  // wait for both (where the kernel has IPv6).
  const bool ipv6 = hasIpv6();
  const std::string tapSysctl = "net/ipv6/conf/" + opts_.tap + "/disable_ipv6";
  while (!linkExists(opts_.tap, opts_.ns) || (ipv6 && !readSysctl(tapSysctl, opts_.ns))) {
    if (exited()) return Error{ECHILD, "QEMU exited before creating tap " + opts_.tap};
    if (Clock::now() >= deadline) return Error{ETIMEDOUT, "QEMU did not create tap " + opts_.tap};
    std::this_thread::sleep_for(20ms);
  }
  if (Status s = disableIpv6(opts_.tap, opts_.ns); !s.ok()) return s;
  if (Status s = ipIn(opts_.ns, {"link", "set", "dev", opts_.tap, "address", tapMac, "up"}); !s.ok()) return s;
  std::unique_lock lk(mu_);
  for (;;) {
    for (const auto& l : console_) {
      const std::string_view t = tagged(l);
      if (t.starts_with("ready ")) ready_ = std::string(kTag) + std::string(t);
      if (t.starts_with("error: ")) return Error{EIO, "the guest failed: " + std::string(t)};
    }
    if (!ready_.empty()) return {};
    if (eof_) return Error{ECHILD, "QEMU exited before the guest was ready"};
    if (Clock::now() >= deadline)
      return Error{ETIMEDOUT,
                   "the guest was not ready within " + std::to_string(opts_.bootTimeout.count() / 1000) + " s"};
    cv_.wait_for(lk, 100ms);
  }
}

QemuGuest::~QemuGuest() { stop(); }

void QemuGuest::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int ws;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (stdin_ >= 0) ::close(stdin_);
  stdin_ = -1;
  if (reader_.joinable()) reader_.join();  // EOF: QEMU is gone
  if (stdout_ >= 0) ::close(stdout_);
  stdout_ = -1;
  // The kernel deletes a non-persistent tap when its last fd closes; an
  // AF_XDP socket or XDP program on it does not keep it.
  if (!waitUntil([&] { return !linkExists(opts_.tap, opts_.ns); }, 5000ms, 20ms)) {
    std::cerr << "qemu: tap " << opts_.tap << " still there after QEMU exited; deleting it\n";
    (void)ipIn(opts_.ns, {"link", "del", opts_.tap});
  }
}

void QemuGuest::readLoop() {
  std::string partial;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(stdout_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard lk(mu_);
    if (n <= 0) {
      if (!partial.empty()) console_.push_back(partial);
      eof_ = true;
      cv_.notify_all();
      return;
    }
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c == '\r') continue;
      if (c != '\n') {
        partial += c;
        continue;
      }
      const std::string_view t = tagged(partial);
      int id;
      std::string_view rest;
      if (t.starts_with("out ") && splitId(t.substr(4), id, rest)) {
        out_[id].emplace_back(rest);
      } else if (t.starts_with("done ") && splitId(t.substr(5), id, rest) && rest.starts_with("rc=")) {
        done_[id] = std::atoi(std::string(rest.substr(3)).c_str());
      }
      console_.push_back(std::move(partial));
      partial.clear();
    }
    cv_.notify_all();
  }
}

bool QemuGuest::exited() const {
  std::lock_guard lk(mu_);
  return eof_;
}

bool QemuGuest::virtioFeature(unsigned bit) const {
  const size_t pos = ready_.find("virtio_features=");
  if (pos == std::string::npos) return false;
  const size_t i = pos + std::strlen("virtio_features=") + bit;
  return i < ready_.size() && ready_[i] == '1';
}

Result<int> QemuGuest::start(const std::string& cmd) {
  if (cmd.find('\n') != std::string::npos) return Error{EINVAL, "a guest command is one line"};
  const int id = nextId_++;
  const std::string line = "@" + std::to_string(id) + " " + cmd + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(stdin_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoError("write to QEMU's console");
    off += size_t(n);
  }
  return id;
}

Result<GuestReply> QemuGuest::run(const std::string& cmd, Millis timeout) {
  auto id = start(cmd);
  if (!id) return id.error();
  return wait(*id, timeout);
}

Result<GuestReply> QemuGuest::wait(int id, Millis timeout) {
  std::unique_lock lk(mu_);
  const bool finished = cv_.wait_for(lk, timeout, [&] { return done_.count(id) || eof_; });
  if (!done_.count(id)) {
    lk.unlock();
    return Error{finished ? ECHILD : ETIMEDOUT, std::string(finished ? "QEMU exited" : "timed out") +
                                                    " waiting for guest command " + std::to_string(id) +
                                                    "\nconsole:\n" + consoleTail()};
  }
  GuestReply r;
  r.rc = done_[id];
  r.out = out_[id];
  done_.erase(id);
  out_.erase(id);
  return r;
}

std::string QemuGuest::consoleTail(size_t lines) const {
  std::lock_guard lk(mu_);
  std::string s;
  const size_t from = console_.size() > lines ? console_.size() - lines : 0;
  for (size_t i = from; i < console_.size(); ++i) s += "  | " + console_[i] + "\n";
  return s;
}

}  // namespace vdev::testkit
