#include "harness.h"

#include <fcntl.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#include "testkit/names.h"
#include "testkit/stats.h"
#include "testkit/wait.h"

namespace vdev::e2e {

namespace {

using Clock = std::chrono::steady_clock;

std::string errnoText(const std::string& what, int err = errno) {
  return what + ": " + std::strerror(err);
}

[[noreturn]] void throwErrno(const std::string& what, int err = errno) {
  throw HarnessError(errnoText(what, err));
}

// The value of a testkit Result, or HarnessError with its message.
template <class T>
T orThrow(Result<T> r, const std::string& context = "") {
  if (!r) throw HarnessError((context.empty() ? "" : context + ": ") + r.error().message());
  return std::move(r).value();
}
void orThrow(const Status& s, const std::string& context = "") {
  if (!s) throw HarnessError((context.empty() ? "" : context + ": ") + s.error().message());
}

const testkit::Netns* kitOf(const Netns* ns) { return ns ? &ns->kit() : nullptr; }

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
    auto probe = testkit::Netns::create(uniqueName('z'));
    if (!probe) return "cannot create a network namespace: " + probe.error().message();
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
  auto r = testkit::runCaptured(spec);
  if (!r) return {-1, "", r.error().message()};
  return std::move(r).value();
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

// ---------------------------------------------------------------------------
// Names and addresses

std::string uniqueName(char role) { return testkit::uniqueName("vt", role); }

Mac uniqueMac() { return testkit::uniqueMac(0x76); }

bool waitUntil(const std::function<bool()>& pred, Millis timeout, Millis step) {
  return testkit::waitUntil(pred, timeout, step);
}

// ---------------------------------------------------------------------------
// Namespaces and links

Netns::Netns() : kit_(orThrow(testkit::Netns::create(uniqueName('n')))) {}

Netns::~Netns() {
  const std::string name = kit_.name();
  if (Status s = kit_.remove(); !s) std::cerr << "e2e: warning: ip netns del " << name << ": " << s.error().message() << "\n";
}

std::string Netns::ip(const std::string& args) const { return run("ip -n " + name() + " " + args); }

std::string Netns::exec(const std::string& cmd) const { return run("ip netns exec " + name() + " " + cmd); }

void disableIpv6(const std::string& ifname, const Netns* ns) { orThrow(testkit::disableIpv6(ifname, kitOf(ns))); }

LinkInfo linkInfo(const std::string& ifname, const Netns* ns) {
  return orThrow(testkit::linkInfo(ifname, kitOf(ns)));
}

bool linkExists(const std::string& ifname, const Netns* ns) { return testkit::linkExists(ifname, kitOf(ns)); }

std::vector<TcFilter> ingressFilters(const std::string& ifname) {
  const Json j = Json::parse(run("tc -j filter show dev " + ifname + " ingress"));
  std::vector<TcFilter> out;
  for (const Json& f : j) {
    // tc lists each priority's classifier once without options (its head),
    // then each filter with them.
    if (!f.contains("options")) continue;
    const Json& o = f.at("options");
    TcFilter t;
    t.pref = uint32_t(f.at("pref").get<uint64_t>());
    t.kind = f.at("kind").get<std::string>();
    if (o.contains("handle")) t.handle = o.at("handle").get<std::string>();
    if (o.contains("fh")) t.handle = o.at("fh").get<std::string>();
    if (o.contains("prog")) {
      const Json& prog = o.at("prog");
      if (prog.contains("name")) t.prog_name = prog.at("name").get<std::string>();
      if (prog.contains("id")) t.prog_id = prog.at("id").get<uint64_t>();
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<TcFilter> vdevFilters(const std::string& ifname) {
  std::vector<TcFilter> out;
  for (TcFilter& f : ingressFilters(ifname))
    if (f.prog_name == "vdev_tc_port" || f.prog_name == "vdev_tc_copy") out.push_back(std::move(f));
  return out;
}

bool hasClsact(const std::string& ifname) {
  const Json j = Json::parse(run("tc -j qdisc show dev " + ifname));
  for (const Json& q : j)
    if (q.at("kind").get<std::string>() == "clsact") return true;
  return false;
}

VethPair::VethPair(const Netns& peerNs, const VethOptions& opts)
    : peerNs_(&peerNs),
      hostNs_(opts.hostNs),
      peerMac_(opts.peerMac.value_or(uniqueMac())),
      hostMac_(opts.hostMac.value_or(uniqueMac())) {
  const std::string base = uniqueName('v');
  kit_.emplace(orThrow(testkit::VethPair::create({.host_name = base + "h",
                                                  .peer_name = base + "p",
                                                  .host_ns = kitOf(hostNs_),
                                                  .peer_ns = &peerNs.kit(),
                                                  .host_mac = hostMac_,
                                                  .peer_mac = peerMac_,
                                                  .mtu = opts.mtu})));
}

VethPair::~VethPair() {
  if (Status s = kit_->remove(); !s) std::cerr << "e2e: warning: " << s.error().message() << "\n";
}

void VethPair::remove() { orThrow(kit_->remove()); }

// ---------------------------------------------------------------------------
// Frames and counting

std::vector<uint8_t> buildFrame(const Spec& spec) {
  std::vector<uint8_t> f(spec.size);
  if (testkit::buildTestFrame(spec, f) != spec.size)
    throw HarnessError("cannot build a test frame of " + std::to_string(spec.size) + " bytes (minimum " +
                       std::to_string(testkit::testFrameMinSize(spec.kind)) + ", maximum " +
                       std::to_string(testkit::kTestFrameMaxSize) + ")");
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
  sentFlows_.insert(spec.flow);
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
  const auto deadline = Clock::now() + testkit::scaled(timeout);
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

namespace {
// pumpUntil's loop; `deadline` as given (pumpFor's period is not scaled).
bool pumpUntilTime(const Endpoints& eps, const std::function<bool()>& pred, Clock::time_point deadline) {
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
}  // namespace

bool pumpUntil(const Endpoints& eps, const std::function<bool()>& pred, Millis timeout) {
  return pumpUntilTime(eps, pred, Clock::now() + testkit::scaled(timeout));
}

void pumpFor(const Endpoints& eps, Millis duration) {
  pumpUntilTime(eps, [] { return false; }, Clock::now() + duration);
}

PacketSocket::PacketSocket(const std::string& ifname, const Netns* ns, std::optional<Mac> mac)
    : Endpoint((ns ? ns->name() + "/" : "") + ifname,
               mac ? *mac : orThrow(testkit::deviceMac(ifname, kitOf(ns)))),
      fd_(orThrow(testkit::openPacketSocket(ifname, kitOf(ns), /*receive=*/true))) {}

int PacketSocket::writeRaw(std::span<const uint8_t> frame) {
  const auto deadline = Clock::now() + testkit::scaled(2s);
  for (;;) {
    const ssize_t n = ::send(fd_.get(), frame.data(), frame.size(), 0);
    if (n == ssize_t(frame.size())) return 0;
    if (n >= 0) return -EMSGSIZE;
    // Send buffer full: wait for room rather than fail a burst.
    if ((errno != EAGAIN && errno != ENOBUFS) || Clock::now() >= deadline) return -errno;
    pollfd p = {fd_.get(), POLLOUT, 0};
    ::poll(&p, 1, 1);
  }
}

ssize_t PacketSocket::readRaw(std::span<uint8_t> buf) {
  const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
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
  if (::getsockopt(fd_.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
    throwErrno("PACKET_STATISTICS");
  drops_ += st.tp_drops;
  return drops_;
}

Tap::Tap(const TapOptions& opts)
    : Endpoint("tap", opts.vmMac.value_or(uniqueMac())),
      hostMac_(opts.hostMac.value_or(uniqueMac())),
      kit_(orThrow(testkit::Tap::open({.name = uniqueName('t'), .mac = hostMac_, .mtu = opts.mtu}))) {}

int Tap::writeRaw(std::span<const uint8_t> frame) {
  if (fd() < 0) return -EBADF;
  const ssize_t n = ::write(fd(), frame.data(), frame.size());
  if (n < 0) return -errno;
  return n == ssize_t(frame.size()) ? 0 : -EMSGSIZE;
}

ssize_t Tap::readRaw(std::span<uint8_t> buf) {
  if (fd() < 0) return 0;
  const ssize_t n = ::read(fd(), buf.data(), buf.size());
  if (n < 0) {
    // EBADFD: the device was deleted under the fd (ip link del).
    return errno == EAGAIN || errno == EINTR || errno == EBADFD ? 0 : -errno;
  }
  return n;
}

// ---------------------------------------------------------------------------
// Child processes and vdevd

TempDir::TempDir() : kit_(orThrow(testkit::TempDir::create("/tmp/vdev-e2e."))) {}

TempDir::~TempDir() {
  if (std::getenv("VDEV_E2E_KEEP")) {
    std::cerr << "e2e: keeping " << kit_.path() << "\n";
    kit_.keep();
  }
}

std::string readFile(const std::string& path) {
  auto text = testkit::readFile(path);
  return text ? std::move(text).value() : "";
}

namespace {
testkit::Child startChild(const std::string& label, const std::vector<std::string>& argv, const TempDir& dir) {
  return orThrow(testkit::Child::start({.argv = argv}, {.stdout_path = dir.file(label + ".stdout"),
                                                        .stderr_path = dir.file(label + ".stderr")}),
                 "start " + label);
}
}  // namespace

Child::Child(const std::string& label, const std::vector<std::string>& argv)
    : label_(label), kit_(startChild(label, argv, dir_)) {}

Child::~Child() {
  if (kit_.running()) {
    (void)kit_.signal(SIGKILL);
    kit_.wait(24h);
  }
  if (::testing::Test::HasFailure()) std::cerr << logs();
}

void Child::waitForLine(const std::string& line, Millis timeout) {
  if (Status s = kit_.waitForLine(line, timeout); !s) throw HarnessError(label_ + " " + s.error().what + "\n" + logs());
}

void Child::signal(int sig) {
  if (Status s = kit_.signal(sig); !s) throw HarnessError(label_ + ": " + s.error().message());
}

std::string Child::logs() const {
  auto tail = [](std::string s) {
    constexpr size_t kMax = 16384;
    return s.size() > kMax ? "[...]" + s.substr(s.size() - kMax) : s;
  };
  return "---- " + label_ + " (pid " + std::to_string(pid()) + ") stdout ----\n" + tail(out()) + "---- " + label_ +
         " stderr ----\n" + tail(err()) + "---- end of " + label_ + " ----\n";
}

Stats Stats::parse(const std::string& text) {
  return Stats{orThrow(testkit::parseStats(text), "vdevd stats")};
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

std::string vdevctlBinary() {
  if (const char* env = std::getenv("VDEVCTL"); env && *env) return env;
#ifdef VDEV_E2E_VDEVCTL
  return VDEV_E2E_VDEVCTL;
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
  // $VDEV_E2E_DEFAULT_HOOK names another for a run (the kernel guests run
  // the CNI suite with "auto", vdevd's own default, as users get it).
  if (!has("--default-hook")) {
    const char* hook = std::getenv("VDEV_E2E_DEFAULT_HOOK");
    args.push_back("--default-hook");
    args.push_back(hook && *hook ? hook : "xdp");
  }
  return args;
}

Vdevd::Vdevd(std::vector<std::string> args, Millis readyTimeout)
    : statsPath_(statsDir_.file("stats.json")), child_("vdevd", argv(std::move(args), statsPath_)) {
  child_.waitForLine("vdevd: ready", readyTimeout);
}

Stats Vdevd::stats(Millis timeout) {
  auto text = testkit::requestStats(child_.kit(), statsPath_, timeout);
  if (!text) throw HarnessError(text.error().what + "\n" + logs());
  try {
    return Stats::parse(*text);
  } catch (const HarnessError& e) {
    throw HarnessError(std::string("vdevd stats file: ") + e.what() + "\n" + *text);
  }
}

Stats Vdevd::statsUntil(const std::function<bool(const Stats&)>& pred, Millis timeout) {
  const auto deadline = Clock::now() + testkit::scaled(timeout);
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
  } catch (const HarnessError& e) {
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
