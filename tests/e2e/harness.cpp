#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace vdev::e2e {

namespace {

using Clock = std::chrono::steady_clock;

std::string errnoText(const std::string& what, int err = errno) {
  return what + ": " + std::strerror(err);
}

[[noreturn]] void throwErrno(const std::string& what, int err = errno) {
  throw HarnessError(errnoText(what, err));
}

std::string base36(uint64_t v) {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v % 36]);
    v /= 36;
  } while (v);
  return s;
}

std::string ipPrefix(const Netns* ns) { return ns ? "ip -n " + ns->name() + " " : "ip "; }

int exitStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

// Child side of fork(): only async-signal-safe calls until exec.
[[noreturn]] void execChild(int in, int out, int err, char* const* argv) {
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
  // The child must not hold the test's taps and sockets: a tap whose fd lives
  // on in `ip` or vdevd would not disappear when the test closes it.
  ::close_range(3, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execv(argv[0], argv);
  ::_exit(127);
}

std::vector<char*> cArgv(const std::vector<std::string>& args) {
  std::vector<char*> v;
  for (const auto& a : args) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

std::string hex(std::span<const uint8_t> b, size_t max) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < b.size() && i < max; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    s += buf;
  }
  if (b.size() > max) s += "...";
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// Privileges

std::optional<std::string> privilegeProblem() {
  static const std::optional<std::string> problem = []() -> std::optional<std::string> {
    if (::geteuid() != 0) return "needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for namespaces, taps and XDP";
    const int tun = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (tun < 0) return errnoText("cannot open /dev/net/tun");
    ::close(tun);
    const int ps = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (ps < 0) return errnoText("cannot open an AF_PACKET socket");
    ::close(ps);
    const std::string probe = uniqueName('z');
    const CmdResult add = tryRun("ip netns add " + probe);
    if (!add.ok()) return "cannot create a network namespace (ip netns add): " + add.err;
    tryRun("ip netns del " + probe);
    return std::nullopt;
  }();
  return problem;
}

void requireRoot() {
  if (const auto why = privilegeProblem()) GTEST_SKIP() << *why;
}

// ---------------------------------------------------------------------------
// Commands

CmdResult runProcess(const ProcessSpec& spec) {
  CmdResult r;
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) < 0) return {-1, "", errnoText("pipe")};
  if (::pipe2(out, O_CLOEXEC) < 0) {
    ::close(in[0]), ::close(in[1]);
    return {-1, "", errnoText("pipe")};
  }
  if (::pipe2(err, O_CLOEXEC) < 0) {
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    return {-1, "", errnoText("pipe")};
  }
  const auto argv = cArgv(spec.argv);
  std::vector<std::string> envCopy = spec.env.value_or(std::vector<std::string>{});
  const auto envp = cArgv(envCopy);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0) ::_exit(126);
    ::close_range(3, ~0U, 0);  // no test taps or sockets in the child
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (spec.uid && (::setgroups(0, nullptr) < 0 || ::setgid(spec.gid) < 0 || ::setuid(*spec.uid) < 0))
      ::_exit(125);
    if (spec.env)
      ::execve(argv[0], argv.data(), envp.data());
    else
      ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    return {-1, "", errnoText("fork")};
  }
  // Inputs are far below a pipe's capacity: write it all, then read. A
  // child that exits without reading makes write() fail with EPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  for (size_t off = 0; off < spec.stdinText.size();) {
    const ssize_t n = ::write(in[1], spec.stdinText.data() + off, spec.stdinText.size() - off);
    if (n <= 0) break;
    off += size_t(n);
  }
  ::close(in[1]);
  const auto deadline = Clock::now() + spec.timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  bool killed = false;
  char buf[4096];
  while (open > 0) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    if (left <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (::poll(fds, 2, left > 0 ? int(std::min<int64_t>(left, INT32_MAX)) : 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  r.status = exitStatus(wstatus);
  return r;
}

CmdResult tryRun(const std::string& cmd) {
  // No timeout of its own: the test's ctest TIMEOUT bounds it.
  return runProcess({.argv = {"/bin/sh", "-c", cmd}, .timeout = Millis(24L * 3600 * 1000)});
}

std::string run(const std::string& cmd) {
  CmdResult r = tryRun(cmd);
  if (!r.ok())
    throw HarnessError("command failed (status " + std::to_string(r.status) + "): " + cmd +
                       "\n  stderr: " + r.err + (r.out.empty() ? "" : "\n  stdout: " + r.out));
  return std::move(r.out);
}

std::string shellQuote(std::string_view s) {
  std::string q = "'";
  for (const char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

// ---------------------------------------------------------------------------
// Names and addresses

std::string uniqueName(char role) {
  static std::atomic<uint32_t> counter{0};
  return "vt" + base36(uint64_t(::getpid())) + role + base36(counter.fetch_add(1));
}

Mac uniqueMac() {
  static std::atomic<uint32_t> counter{1};
  const uint32_t n = counter.fetch_add(1);
  const uint32_t pid = uint32_t(::getpid());
  return {0x02, 0x76, uint8_t(pid >> 8), uint8_t(pid), uint8_t(n >> 8), uint8_t(n)};
}

bool waitUntil(const std::function<bool()>& pred, Millis timeout, Millis step) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(step);
  }
}

// ---------------------------------------------------------------------------
// Namespaces and links

Netns::Netns() : name_(uniqueName('n')) {
  // A namespace left by an earlier process with the same pid (killed before
  // its destructors ran) would make `ip netns add` fail.
  if (::access(("/run/netns/" + name_).c_str(), F_OK) == 0) tryRun("ip netns del " + name_);
  run("ip netns add " + name_);
  try {
    ip("link set dev lo up");
    // Devices created in or moved into the namespace take "default".
    if (::access("/proc/sys/net/ipv6", F_OK) == 0)
      exec("sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
  } catch (...) {
    tryRun("ip netns del " + name_);
    throw;
  }
}

Netns::~Netns() {
  const CmdResult r = tryRun("ip netns del " + name_);
  if (!r.ok()) std::cerr << "e2e: warning: ip netns del " << name_ << ": " << r.err;
}

std::string Netns::ip(const std::string& args) const { return run("ip -n " + name_ + " " + args); }

std::string Netns::exec(const std::string& cmd) const {
  return run("ip netns exec " + name_ + " " + cmd);
}

NetnsGuard::NetnsGuard(const Netns* ns) {
  if (!ns) return;
  orig_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (orig_ < 0) throwErrno("open /proc/thread-self/ns/net");
  const std::string path = "/run/netns/" + ns->name();
  const int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0 || ::setns(target, CLONE_NEWNET) < 0) {
    const int err = errno;
    if (target >= 0) ::close(target);
    ::close(orig_);
    orig_ = -1;
    throwErrno("enter " + path, err);
  }
  ::close(target);
}

NetnsGuard::~NetnsGuard() {
  if (orig_ < 0) return;
  if (::setns(orig_, CLONE_NEWNET) < 0) {
    std::perror("e2e: cannot return to the original network namespace");
    std::abort();
  }
  ::close(orig_);
}

void disableIpv6(const std::string& ifname, const Netns* ns) {
  NetnsGuard guard(ns);
  // /proc/sys/net is resolved in the opening thread's network namespace.
  if (::access("/proc/sys/net/ipv6", F_OK) != 0) return;
  const std::string path = "/proc/sys/net/ipv6/conf/" + ifname + "/disable_ipv6";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throwErrno("open " + path);
  const bool ok = ::write(fd, "1\n", 2) == 2;
  const int err = errno;
  ::close(fd);
  if (!ok) throwErrno("write " + path, err);
}

LinkInfo linkInfo(const std::string& ifname, const Netns* ns) {
  const std::string out = run(ipPrefix(ns) + "-s -j link show dev " + ifname);
  LinkInfo li;
  li.raw = Json::parse(out);
  const Json& l = li.raw[0];
  li.ifindex = int(l["ifindex"].asU64());
  li.mtu = int(l["mtu"].asU64());
  if (l.has("address")) testframe::parseMac(l["address"].asString(), li.address);
  for (const Json& f : l["flags"].asArray())
    if (f.asString() == "UP") li.up = true;
  li.hasXdp = l.has("xdp");
  if (l.has("stats64")) {
    const Json& rx = l["stats64"]["rx"];
    const Json& tx = l["stats64"]["tx"];
    li.rxPackets = rx["packets"].asU64();
    li.rxBytes = rx["bytes"].asU64();
    li.rxDropped = rx["dropped"].asU64();
    li.txPackets = tx["packets"].asU64();
    li.txBytes = tx["bytes"].asU64();
    li.txDropped = tx["dropped"].asU64();
  }
  return li;
}

bool linkExists(const std::string& ifname, const Netns* ns) {
  NetnsGuard guard(ns);
  return ::if_nametoindex(ifname.c_str()) != 0;
}

VethPair::VethPair(const Netns& peerNs, const VethOptions& opts)
    : peerNs_(&peerNs),
      hostNs_(opts.hostNs),
      peerMac_(opts.peerMac.value_or(uniqueMac())),
      hostMac_(opts.hostMac.value_or(uniqueMac())) {
  const std::string base = uniqueName('v');
  host_ = base + "h";
  peer_ = base + "p";
  if (linkExists(host_)) tryRun("ip link del " + host_);  // stale, same pid
  run("ip link add name " + host_ + " type veth peer name " + peer_ + " netns " + peerNs.name());
  try {
    if (hostNs_) run("ip link set dev " + host_ + " netns " + hostNs_->name());
    disableIpv6(host_, hostNs_);
    disableIpv6(peer_, peerNs_);
    const std::string mtu = " mtu " + std::to_string(opts.mtu);
    run(ipPrefix(peerNs_) + "link set dev " + peer_ + " address " + macString(peerMac_) + mtu + " up");
    run(ipPrefix(hostNs_) + "link set dev " + host_ + " address " + macString(hostMac_) + mtu + " up");
  } catch (...) {
    tryRun(ipPrefix(hostNs_) + "link del " + host_);
    throw;
  }
}

VethPair::~VethPair() {
  if (removed_) return;
  // Deleting one end deletes both. If the namespace went first, so did the pair.
  const CmdResult r = tryRun(ipPrefix(hostNs_) + "link del " + host_);
  if (!r.ok() && linkExists(host_, hostNs_))
    std::cerr << "e2e: warning: ip link del " << host_ << ": " << r.err;
}

void VethPair::remove() {
  if (removed_) return;
  run(ipPrefix(hostNs_) + "link del " + host_);
  removed_ = true;
}

// ---------------------------------------------------------------------------
// Frames and counting

std::vector<uint8_t> buildFrame(const Spec& spec) {
  std::vector<uint8_t> f(spec.size);
  if (testframe::build(spec, f) != spec.size)
    throw HarnessError("cannot build a test frame of " + std::to_string(spec.size) +
                       " bytes (minimum " + std::to_string(testframe::minSize(spec.kind)) +
                       ", maximum " + std::to_string(testframe::kMaxSize) + ")");
  return f;
}

std::vector<uint8_t> rawFrame(const Mac& dst, const Mac& src, uint16_t ethertype, size_t size) {
  std::vector<uint8_t> f(14 + (size > 14 ? size - 14 : 0));
  std::memcpy(f.data(), dst.data(), 6);
  std::memcpy(f.data() + 6, src.data(), 6);
  f[12] = uint8_t(ethertype >> 8);
  f[13] = uint8_t(ethertype);
  for (size_t i = 14; i < f.size(); ++i) f[i] = uint8_t(i);
  f.resize(size);
  return f;
}

void FlowCounter::add(std::span<const uint8_t> frame) {
  ++frames_;
  bytesRead_ += frame.size();
  const testframe::Parsed p = testframe::parse(frame);
  switch (p.verdict) {
    case testframe::Verdict::kOk: {
      Flow& fl = flows_[p.spec.flow];
      if (!fl.seqs.insert(p.spec.seq).second) ++fl.duplicates;
      fl.sizes[p.spec.seq] = frame.size();
      fl.bytes += frame.size();
      break;
    }
    case testframe::Verdict::kCorrupt:
      ++corrupt_;
      if (samples_.size() < 6)
        samples_.push_back("corrupt (flow " + std::to_string(p.spec.flow) + " seq " +
                           std::to_string(p.spec.seq) + ", " + std::to_string(frame.size()) +
                           " bytes): " + hex(frame, 64));
      break;
    case testframe::Verdict::kForeign:
      ++foreign_;
      if (samples_.size() < 6)
        samples_.push_back("foreign (" + std::to_string(frame.size()) + " bytes): " + hex(frame, 48));
      break;
  }
}

void FlowCounter::clear() { *this = FlowCounter(); }

uint64_t FlowCounter::count(uint32_t flow) const {
  const auto it = flows_.find(flow);
  return it == flows_.end() ? 0 : it->second.seqs.size();
}

uint64_t FlowCounter::duplicates(uint32_t flow) const {
  const auto it = flows_.find(flow);
  return it == flows_.end() ? 0 : it->second.duplicates;
}

uint64_t FlowCounter::bytes(uint32_t flow) const {
  const auto it = flows_.find(flow);
  return it == flows_.end() ? 0 : it->second.bytes;
}

uint64_t FlowCounter::total() const {
  uint64_t n = 0;
  for (const auto& [id, fl] : flows_) n += fl.seqs.size();
  return n;
}

uint64_t FlowCounter::totalDuplicates() const {
  uint64_t n = 0;
  for (const auto& [id, fl] : flows_) n += fl.duplicates;
  return n;
}

const std::set<uint32_t>& FlowCounter::seqs(uint32_t flow) const {
  static const std::set<uint32_t> kEmpty;
  const auto it = flows_.find(flow);
  return it == flows_.end() ? kEmpty : it->second.seqs;
}

std::optional<size_t> FlowCounter::sizeOf(uint32_t flow, uint32_t seq) const {
  const auto it = flows_.find(flow);
  if (it == flows_.end()) return std::nullopt;
  const auto s = it->second.sizes.find(seq);
  if (s == it->second.sizes.end()) return std::nullopt;
  return s->second;
}

std::string FlowCounter::describe() const {
  std::ostringstream os;
  os << frames_ << " frames read: " << total() << " intact, " << totalDuplicates()
     << " duplicates, " << corrupt_ << " corrupt, " << foreign_ << " foreign";
  for (const auto& [id, fl] : flows_) {
    os << "\n    flow " << id << ": " << fl.seqs.size() << " frames";
    if (!fl.seqs.empty()) os << " (seq " << *fl.seqs.begin() << ".." << *fl.seqs.rbegin() << ")";
    if (fl.duplicates) os << ", " << fl.duplicates << " duplicates";
  }
  for (const auto& s : samples_) os << "\n    " << s;
  return os.str();
}

int Endpoint::sendRaw(std::span<const uint8_t> frame) {
  const int rc = writeRaw(frame);
  if (rc == 0) {
    ++sentFrames_;
    sentBytes_ += frame.size();
  }
  return rc;
}

void Endpoint::send(const Spec& spec) {
  const std::vector<uint8_t> f = buildFrame(spec);
  if (const int rc = sendRaw(f); rc < 0)
    throwErrno(label_ + ": send " + std::to_string(f.size()) + "-byte frame", -rc);
}

void Endpoint::sendFlow(Spec spec, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i, ++spec.seq) send(spec);
}

size_t Endpoint::poll() {
  if (paused_) return 0;
  static thread_local std::vector<uint8_t> buf(65536);
  size_t n = 0;
  for (;;) {
    const ssize_t len = readRaw(buf);
    if (len < 0) throwErrno(label_ + ": read", int(-len));
    if (len == 0) return n;
    rx_.add({buf.data(), size_t(len)});
    ++n;
  }
}

std::optional<std::vector<uint8_t>> Endpoint::recvRaw(Millis timeout) {
  std::vector<uint8_t> buf(65536);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const ssize_t len = readRaw(buf);
    if (len < 0) throwErrno(label_ + ": read", int(-len));
    if (len > 0) {
      buf.resize(size_t(len));
      return buf;
    }
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p = {fd(), POLLIN, 0};
    ::poll(&p, 1, int(left.count()));
  }
}

bool pumpUntil(const Endpoints& eps, const std::function<bool()>& pred, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<pollfd> pfds;
  for (;;) {
    for (Endpoint* e : eps) e->poll();
    if (pred()) return true;
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pfds.clear();
    for (Endpoint* e : eps)
      if (!e->paused()) pfds.push_back({e->fd(), POLLIN, 0});
    ::poll(pfds.data(), pfds.size(), int(std::min<int64_t>(left.count(), 10)));
  }
}

void pumpFor(const Endpoints& eps, Millis duration) {
  pumpUntil(eps, [] { return false; }, duration);
}

namespace {
Mac ifaceMac(const std::string& ifname, const Netns* ns) {
  NetnsGuard guard(ns);
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) throwErrno("socket");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ::ioctl(s, SIOCGIFHWADDR, &ifr);
  const int err = errno;
  ::close(s);
  if (rc < 0) throwErrno("SIOCGIFHWADDR " + ifname, err);
  Mac m;
  std::memcpy(m.data(), ifr.ifr_hwaddr.sa_data, 6);
  return m;
}
}  // namespace

PacketSocket::PacketSocket(const std::string& ifname, const Netns* ns, std::optional<Mac> mac)
    : Endpoint((ns ? ns->name() + "/" : "") + ifname, mac ? *mac : ifaceMac(ifname, ns)) {
  NetnsGuard guard(ns);
  ifindex_ = int(::if_nametoindex(ifname.c_str()));
  if (ifindex_ == 0) throwErrno("if_nametoindex " + ifname);
  // Protocol 0 until bound: receive nothing from other interfaces meanwhile.
  fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throwErrno("socket(AF_PACKET)");
  try {
    const int one = 1;
    if (::setsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
      throwErrno("PACKET_IGNORE_OUTGOING");
    const int bufSize = 16 << 20;
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &bufSize, sizeof bufSize) < 0)
      throwErrno("SO_RCVBUFFORCE");
    if (::setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &bufSize, sizeof bufSize) < 0)
      throwErrno("SO_SNDBUFFORCE");
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifindex_;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0)
      throwErrno("bind AF_PACKET to " + ifname);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

PacketSocket::~PacketSocket() {
  if (fd_ >= 0) ::close(fd_);
}

int PacketSocket::writeRaw(std::span<const uint8_t> frame) {
  const auto deadline = Clock::now() + 2s;
  for (;;) {
    const ssize_t n = ::send(fd_, frame.data(), frame.size(), 0);
    if (n == ssize_t(frame.size())) return 0;
    if (n >= 0) return -EMSGSIZE;
    // Send buffer full: wait for room rather than fail a burst.
    if ((errno != EAGAIN && errno != ENOBUFS) || Clock::now() >= deadline) return -errno;
    pollfd p = {fd_, POLLOUT, 0};
    ::poll(&p, 1, 1);
  }
}

ssize_t PacketSocket::readRaw(std::span<uint8_t> buf) {
  const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0) {
    // ENETDOWN: the device went away (reported once, by the socket error).
    return errno == EAGAIN || errno == EINTR || errno == ENETDOWN ? 0 : -errno;
  }
  if (size_t(n) > buf.size()) return -EMSGSIZE;
  return n;
}

uint64_t PacketSocket::kernelDrops() {
  tpacket_stats st{};
  socklen_t len = sizeof st;
  // Reading the statistics resets them: keep the running total.
  if (::getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
    throwErrno("PACKET_STATISTICS");
  drops_ += st.tp_drops;
  return drops_;
}

Tap::Tap(const TapOptions& opts)
    : Endpoint("tap", opts.vmMac.value_or(uniqueMac())),
      name_(uniqueName('t')),
      hostMac_(opts.hostMac.value_or(uniqueMac())) {
  fd_ = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throwErrno("open /dev/net/tun");
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;  // as QEMU's -netdev tap (without vnet_hdr)
  std::strncpy(ifr.ifr_name, name_.c_str(), IFNAMSIZ - 1);
  try {
    if (::ioctl(fd_, TUNSETIFF, &ifr) < 0) throwErrno("TUNSETIFF " + name_);
    disableIpv6(name_, nullptr);
    run("ip link set dev " + name_ + " address " + macString(hostMac_) + " mtu " +
        std::to_string(opts.mtu) + " up");
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

Tap::~Tap() { close(); }

void Tap::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int Tap::writeRaw(std::span<const uint8_t> frame) {
  if (fd_ < 0) return -EBADF;
  const ssize_t n = ::write(fd_, frame.data(), frame.size());
  if (n < 0) return -errno;
  return n == ssize_t(frame.size()) ? 0 : -EMSGSIZE;
}

ssize_t Tap::readRaw(std::span<uint8_t> buf) {
  if (fd_ < 0) return 0;
  const ssize_t n = ::read(fd_, buf.data(), buf.size());
  if (n < 0) {
    // EBADFD: the device was deleted under the fd (ip link del).
    return errno == EAGAIN || errno == EINTR || errno == EBADFD ? 0 : -errno;
  }
  return n;
}

// ---------------------------------------------------------------------------
// Child processes and vdevd

TempDir::TempDir() {
  char tmpl[] = "/tmp/vdev-e2e.XXXXXX";
  if (!::mkdtemp(tmpl)) throwErrno("mkdtemp");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("VDEV_E2E_KEEP")) {
    std::cerr << "e2e: keeping " << path_ << "\n";
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

Child::Child(const std::string& label, const std::vector<std::string>& argv)
    : label_(label), outPath_(dir_.file(label + ".stdout")), errPath_(dir_.file(label + ".stderr")) {
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out = ::open(outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in < 0 || out < 0 || err < 0) throwErrno("open log files in " + dir_.path());
  const auto cargv = cArgv(argv);
  pid_ = ::fork();
  if (pid_ == 0) execChild(in, out, err, cargv.data());
  const int forkErr = errno;
  ::close(in);
  ::close(out);
  ::close(err);
  if (pid_ < 0) throwErrno("fork " + label, forkErr);
}

Child::~Child() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    int ws;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
    status_ = exitStatus(ws);
  }
  if (::testing::Test::HasFailure()) std::cerr << logs();
}

bool Child::running() {
  if (status_) return false;
  int ws;
  const pid_t r = ::waitpid(pid_, &ws, WNOHANG);
  if (r == pid_) status_ = exitStatus(ws);
  return !status_;
}

void Child::waitForLine(const std::string& line, Millis timeout) {
  const auto hasLine = [&] {
    const std::string out = this->out();
    for (size_t pos = out.find(line); pos != std::string::npos; pos = out.find(line, pos + 1)) {
      const bool startOk = pos == 0 || out[pos - 1] == '\n';
      const size_t end = pos + line.size();
      if (startOk && end < out.size() && (out[end] == '\n' || out[end] == ' ')) {
        const size_t eol = out.find('\n', end);
        if (eol != std::string::npos) return true;  // the whole line is there
      }
    }
    return false;
  };
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (hasLine()) return;
    if (!running()) {
      if (hasLine()) return;
      throw HarnessError(label_ + " exited with status " + std::to_string(*status_) +
                         " before printing '" + line + "'\n" + logs());
    }
    if (Clock::now() >= deadline)
      throw HarnessError(label_ + " did not print '" + line + "' within " +
                         std::to_string(timeout.count()) + " ms\n" + logs());
    std::this_thread::sleep_for(5ms);
  }
}

void Child::signal(int sig) {
  if (running() && ::kill(pid_, sig) < 0) throwErrno("kill " + label_);
}

std::optional<int> Child::wait(Millis timeout) {
  waitUntil([&] { return !running(); }, timeout, 2ms);
  return status_;
}

std::string Child::logs() const {
  auto tail = [](std::string s) {
    constexpr size_t kMax = 16384;
    return s.size() > kMax ? "[...]" + s.substr(s.size() - kMax) : s;
  };
  return "---- " + label_ + " (pid " + std::to_string(pid_) + ") stdout ----\n" + tail(out()) +
         "---- " + label_ + " stderr ----\n" + tail(err()) + "---- end of " + label_ + " ----\n";
}

namespace {
uint64_t u64At(const Json& o, std::string_view key) { return o[key].asU64(); }
}  // namespace

uint64_t PortStats::drop(std::string_view reason) const {
  const auto it = drops.find(std::string(reason));
  if (it == drops.end())
    throw HarnessError("vdevd stats: port " + name + " has no drops." + std::string(reason));
  return it->second;
}

uint64_t PortStats::dropsTotal() const {
  uint64_t n = 0;
  for (const auto& [k, v] : drops) n += v;
  return n;
}

uint64_t PortStats::xdp(std::string_view stat) const {
  const auto it = xdpStats.find(std::string(stat));
  if (it == xdpStats.end())
    throw HarnessError("vdevd stats: port " + name + " has no xdp_stats." + std::string(stat));
  return it->second;
}

uint64_t PortStats::xdpRxDrops() const {
  uint64_t n = 0;
  for (const char* k : {"rx_dropped", "rx_ring_full"}) {
    const auto it = xdpStats.find(k);
    if (it == xdpStats.end())
      throw HarnessError("vdevd stats: port " + name + " has no xdp_stats." + k);
    n += it->second;
  }
  return n;
}

Stats Stats::parse(const std::string& text) {
  Stats s;
  s.raw = Json::parse(text);
  for (const Json& p : s.raw["ports"].asArray()) {
    PortStats ps;
    ps.name = p["name"].asString();
    ps.ifindex = int(u64At(p, "ifindex"));
    // Descriptive fields are optional here; the StatsJson test checks them.
    if (p.has("queues")) ps.queues = int(u64At(p, "queues"));
    if (p.has("xdp_mode")) ps.xdpMode = p["xdp_mode"].asString();
    if (p.has("bind_mode")) ps.bindMode = p["bind_mode"].asString();
    if (p.has("mtu")) ps.mtu = int(u64At(p, "mtu"));
    ps.rxPackets = u64At(p, "rx_packets");
    ps.rxBytes = u64At(p, "rx_bytes");
    ps.txPackets = u64At(p, "tx_packets");
    ps.txBytes = u64At(p, "tx_bytes");
    ps.txOutstanding = p.has("tx_outstanding") ? u64At(p, "tx_outstanding") : 0;
    for (const auto& [k, v] : p["drops"].asObject()) ps.drops[k] = v.asU64();
    if (p.has("xdp_stats"))
      for (const auto& [k, v] : p["xdp_stats"].asObject()) ps.xdpStats[k] = v.asU64();
    if (p.has("xdp_prog"))
      for (const auto& [k, v] : p["xdp_prog"].asObject()) ps.xdpProg[k] = v.asU64();
    if (p.has("dev")) ps.devTxDropped = u64At(p["dev"], "tx_dropped");
    s.ports.push_back(std::move(ps));
  }
  const Json& pool = s.raw["pool"];
  s.pool.total = u64At(pool, "total");
  s.pool.free = u64At(pool, "free");
  s.pool.fillRing = u64At(pool, "fill_ring");
  s.pool.kernelRx = u64At(pool, "kernel_rx");
  s.pool.rxBurst = u64At(pool, "rx_burst");
  s.pool.portRings = u64At(pool, "port_rings");
  s.pool.txRing = u64At(pool, "tx_ring");
  s.pool.kernelTx = u64At(pool, "kernel_tx");
  s.pool.sum = u64At(pool, "sum");
  return s;
}

const PortStats* Stats::findPort(std::string_view name) const {
  for (const auto& p : ports)
    if (p.name == name) return &p;
  return nullptr;
}

const PortStats& Stats::port(std::string_view name) const {
  if (const PortStats* p = findPort(name)) return *p;
  throw HarnessError("vdevd stats: no port " + std::string(name) + " in " + raw.dump());
}

std::string vdevdBinary() {
  if (const char* env = std::getenv("VDEVD"); env && *env) return env;
#ifdef VDEV_E2E_VDEVD
  return VDEV_E2E_VDEVD;
#else
  return "";
#endif
}

std::string vdevVmBinary() {
  if (const char* env = std::getenv("VDEV_VM"); env && *env) return env;
#ifdef VDEV_E2E_VDEV_VM
  return VDEV_E2E_VDEV_VM;
#else
  return "";
#endif
}

std::vector<std::string> Vdevd::argv(std::vector<std::string> args, const std::string& stats) {
  const std::string bin = vdevdBinary();
  if (bin.empty()) throw HarnessError("no vdevd binary (set $VDEVD)");
  if (::access(bin.c_str(), X_OK) != 0) throwErrno("vdevd binary " + bin);
  args.insert(args.begin(), bin);
  args.push_back("--stats-json");
  args.push_back(stats);
  // A test's vdevd never touches the host's control socket or state file,
  // unless the test names its own.
  auto has = [&](const char* opt) { return std::find(args.begin(), args.end(), opt) != args.end(); };
  if (!has("--socket") && !has("-s")) args.push_back("--no-socket");
  if (!has("--state")) args.push_back("--no-state");
  // The suite's stations stand for XDP-native sources (a NIC's frames): its
  // ports take vdevd's XDP hook unless a test asks for another. The skb path
  // that veths and taps get by default is tested where a test passes
  // --default-hook (or --hook), and with real TCP in skb_traffic_test.sh.
  if (!has("--default-hook")) {
    args.push_back("--default-hook");
    args.push_back("xdp");
  }
  return args;
}

Vdevd::Vdevd(std::vector<std::string> args, Millis readyTimeout)
    : statsPath_(statsDir_.file("stats.json")), child_("vdevd", argv(std::move(args), statsPath_)) {
  child_.waitForLine("vdevd: ready", readyTimeout);
}

Stats Vdevd::stats(Millis timeout) {
  ::unlink(statsPath_.c_str());
  child_.signal(SIGUSR1);
  const bool written = waitUntil(
      [&] { return ::access(statsPath_.c_str(), F_OK) == 0 || !child_.running(); }, timeout, 2ms);
  if (!child_.running()) throw HarnessError("vdevd exited while asked for statistics\n" + logs());
  if (!written)
    throw HarnessError("vdevd wrote no " + statsPath_ + " within " +
                       std::to_string(timeout.count()) + " ms of SIGUSR1\n" + logs());
  const std::string text = readFile(statsPath_);
  try {
    return Stats::parse(text);
  } catch (const std::exception& e) {
    throw HarnessError(std::string("vdevd stats file: ") + e.what() + "\n" + text);
  }
}

Stats Vdevd::statsUntil(const std::function<bool(const Stats&)>& pred, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    Stats s = stats();
    if (pred(s) || Clock::now() >= deadline) return s;
    std::this_thread::sleep_for(20ms);
  }
}

int Vdevd::stop(Millis timeout) {
  ::unlink(statsPath_.c_str());
  child_.signal(SIGTERM);
  if (const auto status = child_.wait(timeout)) return *status;
  child_.signal(SIGKILL);
  child_.wait(5s);
  throw HarnessError("vdevd did not exit within " + std::to_string(timeout.count()) +
                     " ms of SIGTERM (killed)\n" + logs());
}

Stats Vdevd::finalStats() const {
  const std::string text = readFile(statsPath_);
  if (text.empty()) throw HarnessError("vdevd wrote no final statistics to " + statsPath_);
  try {
    return Stats::parse(text);
  } catch (const std::exception& e) {
    throw HarnessError(std::string("vdevd final stats file: ") + e.what() + "\n" + text);
  }
}

CmdResult Vdevd::runExpectingExit(const std::vector<std::string>& args, Millis timeout) {
  TempDir dir;
  Child c("vdevd", argv(args, dir.file("stats.json")));
  const auto status = c.wait(timeout);
  if (!status) throw HarnessError("vdevd kept running with bad arguments\n" + c.logs());
  return {*status, c.out(), c.err()};
}

}  // namespace vdev::e2e
