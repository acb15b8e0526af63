#include "qemu_guest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "harness.h"
#include "testkit/process.h"

namespace vdev::qemutest {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::string_view kTag = "vdev-guest: ";

std::runtime_error failure(const std::string& what) { return std::runtime_error(what); }

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

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

const ImageOutcome& guestImage() {
  static const ImageOutcome outcome = [] {
    ImageOutcome o;
    const std::string dir = VDEV_QEMU_IMAGE_DIR;
    const e2e::CmdResult r =
        e2e::tryRun("sh " + e2e::shellQuote(VDEV_QEMU_IMAGE_SCRIPT) + " " + e2e::shellQuote(dir));
    if (r.status == 3) {
      o.skip = true;
      o.problem = "cannot build the test guest (scripts/install-deps.sh installs what it needs): " + r.err;
    } else if (!r.ok()) {
      o.problem = "scripts/vm-guest-image.sh failed (status " + std::to_string(r.status) + "): " + r.out + r.err;
    } else {
      o.image = GuestImage{dir};
    }
    return o;
  }();
  return outcome;
}

std::string qemuBinary() {
  if (const char* env = std::getenv("VDEV_QEMU"); env && *env) return testkit::isExecutable(env) ? env : "";
  return testkit::findExecutable("qemu-system-x86_64");
}

QemuGuest::QemuGuest(const GuestImage& image, const GuestOptions& opts, const std::string& tapMac)
    : opts_(opts) {
  const std::string qemu = qemuBinary();
  if (qemu.empty()) throw failure("qemu-system-x86_64 not found");
  if (e2e::linkExists(opts_.tap)) throw failure("tap " + opts_.tap + " already exists");
  std::string netdev = "tap,id=n0,ifname=" + opts_.tap + ",script=no,downscript=no";
  if (!opts_.vnetHdr) netdev += ",vnet_hdr=off";
  argv_ = {qemu,
           "-machine", "q35",
           "-accel", "tcg",
           "-nographic",
           "-m", "256",
           // A guest that panics stops instead of booting again.
           "-no-reboot",
           "-kernel", image.kernel(),
           "-initrd", image.initrd(),
           "-append", "console=ttyS0 quiet vdev.ip=" + opts_.address + " vdev.mtu=" + std::to_string(opts_.mtu),
           "-netdev", netdev,
           "-device", "virtio-net-pci,netdev=n0,mac=" + opts_.mac};

  // A command written after QEMU died must fail with EPIPE, not kill the
  // test with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) < 0) throw failure(errnoText("pipe"));
  if (::pipe2(out, O_CLOEXEC) < 0) {
    ::close(in[0]), ::close(in[1]);
    throw failure(errnoText("pipe"));
  }
  std::vector<char*> cargv;
  for (auto& a : argv_) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // Dies with the test (the forking thread is the test's main thread),
    // so a killed test leaves no QEMU and, with it, no tap.
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
    errno = forkErr;
    throw failure(errnoText("fork"));
  }
  reader_ = std::thread([this] { readLoop(); });

  try {
    const auto deadline = Clock::now() + opts_.bootTimeout;
    // QEMU creates the tap while it starts, before the guest runs. The
    // kernel lists a new device before its NETDEV_REGISTER notifiers have
    // run, so the tap can be there a moment before its IPv6 sysctls are:
    // wait for both (where the kernel has IPv6).
    const bool ipv6 = ::access("/proc/sys/net/ipv6/conf", F_OK) == 0;
    const std::string tapSysctl = "/proc/sys/net/ipv6/conf/" + opts_.tap;
    while (!e2e::linkExists(opts_.tap) || (ipv6 && ::access(tapSysctl.c_str(), F_OK) != 0)) {
      if (exited()) throw failure("QEMU exited before creating tap " + opts_.tap);
      if (Clock::now() >= deadline) throw failure("QEMU did not create tap " + opts_.tap);
      std::this_thread::sleep_for(20ms);
    }
    e2e::disableIpv6(opts_.tap, nullptr);
    e2e::run("ip link set dev " + opts_.tap + " address " + tapMac + " up");
    std::unique_lock lk(mu_);
    for (;;) {
      for (const auto& l : console_) {
        const std::string_view t = tagged(l);
        if (t.starts_with("ready ")) ready_ = std::string(kTag) + std::string(t);
        if (t.starts_with("error: ")) throw failure("the guest failed: " + std::string(t));
      }
      if (!ready_.empty()) break;
      if (eof_) throw failure("QEMU exited before the guest was ready");
      if (Clock::now() >= deadline)
        throw failure("the guest was not ready within " +
                      std::to_string(opts_.bootTimeout.count() / 1000) + " s");
      cv_.wait_for(lk, 100ms);
    }
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg += "\nQEMU:";
    for (const auto& a : argv_) msg += " " + a;
    msg += "\nconsole:\n" + consoleTail();
    stop();
    throw failure(msg);
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
  if (!e2e::waitUntil([&] { return !e2e::linkExists(opts_.tap); }, 5000ms, 20ms)) {
    std::cerr << "qemu: tap " << opts_.tap << " still there after QEMU exited; deleting it\n";
    e2e::tryRun("ip link del " + opts_.tap);
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

int QemuGuest::start(const std::string& cmd) {
  if (cmd.find('\n') != std::string::npos) throw failure("a guest command is one line");
  const int id = nextId_++;
  const std::string line = "@" + std::to_string(id) + " " + cmd + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(stdin_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw failure(errnoText("write to QEMU's console"));
    off += size_t(n);
  }
  return id;
}

GuestReply QemuGuest::wait(int id, Millis timeout) {
  std::unique_lock lk(mu_);
  const bool finished = cv_.wait_for(lk, timeout, [&] { return done_.count(id) || eof_; });
  if (!done_.count(id)) {
    lk.unlock();
    throw failure(std::string(finished ? "QEMU exited" : "timed out") + " waiting for guest command " +
                  std::to_string(id) + "\nconsole:\n" + consoleTail());
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

}  // namespace vdev::qemutest
