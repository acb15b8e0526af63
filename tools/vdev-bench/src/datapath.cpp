// datapath.cpp - see datapath.h.
#include "datapath.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace vdev::bench {

namespace {

bool isExecutable(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

std::string searchPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::string p = path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::stringstream ss(p);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string cand = dir + "/" + name;
    if (isExecutable(cand)) return cand;
  }
  return "";
}

std::string selfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  auto slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

// ---- vdevd ----------------------------------------------------------------

// vdevd started in the device-under-test namespace through `ip netns exec`
// (which also mounts that namespace's sysfs for it), pinned to the DUT CPU.
// `ip netns exec` execs the command in place, so the child pid is vdevd's.
// kind: "vdevd" (xconnect), "vdevd-switch" (--no-fast-path), "vdevd-fast"
// (switch with the kernel fast path), "vdevd-rx-off" (vdevd-fast with
// --no-fast-rx on the ingress port: what the generator sends goes through
// vdevd's thread, what the sink answers may take the fast path), or
// "vdevd-spin" (the
// scenario's mode with --idle-spin-us at its maximum, 1 s: the datapath
// thread never sleeps while frames come more often than once a second, the
// nearest vdevd has to busy polling).
class VdevdDatapath : public Datapath {
 public:
  VdevdDatapath(Topology& t, const Options& o, std::string path, std::string kind, std::string statsPath)
      : topo_(t), opt_(o), path_(std::move(path)), kind_(std::move(kind)), statsPath_(std::move(statsPath)) {
    bool threePorts = topo_.ports().size() > 2;
    mode_ = kind_ == "vdevd-switch" || fastPath() || threePorts ? "switch" : "xconnect";
  }
  ~VdevdDatapath() override { stop(); }

  std::string name() const override { return kind_; }
  // The kernel fast path on (required): vdevd-fast and vdevd-rx-off.
  bool fastPath() const { return kind_ == "vdevd-fast" || kind_ == "vdevd-rx-off"; }

  Status start() override {
    std::string ip = searchPath("ip");
    if (ip.empty()) return Status::fail(ENOENT, "ip (iproute2) not found in PATH");
    std::vector<std::string> args{"ip", "netns", "exec", topo_.dutNs().name(), path_};
    for (const auto& p : topo_.ports()) {
      args.push_back("--port");
      args.push_back(p);
    }
    for (const char* a : {"--mode", mode_.c_str(), "--stats-json", statsPath_.c_str(),
                          // the host's control socket and saved ports are not ours
                          "--no-socket", "--no-state"})
      args.emplace_back(a);
    if (kind_ == "vdevd-spin") {
      args.emplace_back("--idle-spin-us");
      args.emplace_back(std::to_string(kSpinUs));
    }
    // vdevd-fast requires the kernel fast path; the others measure vdevd's
    // own (AF_XDP) path, so in switch mode they turn it off (it is on by
    // default, and a tap always takes redirected frames).
    if (fastPath()) args.emplace_back("--fast-path");
    else if (mode_ == "switch") args.emplace_back("--no-fast-path");
    if (kind_ == "vdevd-rx-off") {
      args.emplace_back("--no-fast-rx");
      args.push_back(topo_.portA());
    }
    // The generator's frames are XDP frames, a NIC-like source: the ports
    // take vdevd's XDP hook (the skb path would see none of them: a veth
    // without NAPI drops redirected frames). --vdevd-arg --default-hook=...
    // comes after and wins.
    args.emplace_back("--default-hook");
    args.emplace_back("xdp");
    for (const auto& a : opt_.vdevdArgs) args.push_back(a);
    std::string cmd;
    for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    logInfo("+ %s  (cpu %d)", cmd.c_str(), opt_.dutCpu);
    unlink(statsPath_.c_str());

    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) return Status::fromErrno("pipe2");
    Fd rd(pfd[0]), wr(pfd[1]);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(opt_.dutCpu, &cpus);
    pid_t parent = getpid();
    const int prio = opt_.dpPrio;

    pid_t pid = fork();
    if (pid < 0) return Status::fromErrno("fork");
    if (pid == 0) {
      // Child: async-signal-safe calls only until exec.
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR2}) signal(sig, SIG_DFL);
      // If vdev-bench dies, vdevd gets SIGTERM and cleans up after itself.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      sched_setaffinity(0, sizeof cpus, &cpus);
      if (prio > 0) {
        sched_param sp = {};
        sp.sched_priority = prio;
        sched_setscheduler(0, SCHED_FIFO, &sp);  // inherited through exec
      }
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
      dup2(pfd[1], 1);
      dup2(pfd[1], 2);
      execv(ip.c_str(), cargv.data());
      _exit(127);
    }
    pid_ = pid;
    wr.reset();

    // Wait for "vdevd: ready" (docs/vdevd.md), at most 30 s.
    std::string pending;
    bool ready = false;
    double deadline = monotonicSeconds() + 30;
    while (!ready) {
      if (stopRequested()) return Status::fail(EINTR, "waiting for vdevd");
      double left = deadline - monotonicSeconds();
      if (left <= 0) return Status::failText(ETIMEDOUT, "vdevd did not print 'vdevd: ready' within 30 s" + tail());
      pollfd p = {rd.get(), POLLIN, 0};
      int n = poll(&p, 1, static_cast<int>(left * 1000) < 100 ? static_cast<int>(left * 1000) : 100);
      if (n <= 0) continue;
      char buf[4096];
      ssize_t r = read(rd.get(), buf, sizeof buf);
      if (r <= 0) {
        int st = reap(true);
        return Status::failText(ECHILD, "vdevd exited before it was ready (" + exitText(st) + ")" + tail());
      }
      pending.append(buf, r);
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        keepLine(line);
        // "vdevd: ready", possibly followed by details in parentheses.
        if (line.rfind("vdevd: ready", 0) == 0) ready = true;
      }
    }
    // vdevd keeps writing (statistics on exit, warnings): keep its pipe
    // drained so it never blocks on a full pipe.
    drain_ = std::thread([this, fd = std::move(rd)]() mutable { drainMain(std::move(fd)); });
    return {};
  }

  Status stop() override {
    if (pid_ <= 0) return {};
    kill(pid_, SIGTERM);
    int st = 0;
    bool exited = false;
    for (int i = 0; i < 1500 && !exited; ++i) {  // 15 s for drain + detach + leak check
      pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) exited = true;
      else usleep(10'000);
    }
    if (!exited) {
      logWarn("vdevd (pid %d) did not exit 15 s after SIGTERM; killing it", pid_);
      kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
    }
    pid_ = -1;
    if (drain_.joinable()) drain_.join();
    std::ifstream f(statsPath_);
    std::stringstream ss;
    ss << f.rdbuf();
    stats_ = ss.str();
    while (!stats_.empty() && isspace(static_cast<unsigned char>(stats_.back()))) stats_.pop_back();
    if (stats_.empty() || stats_[0] != '{') stats_.clear();
    unlink(statsPath_.c_str());
    if (!exited) return Status::failText(ETIMEDOUT, "vdevd did not exit after SIGTERM");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      return Status::failText(ECHILD, "vdevd " + exitText(st) +
                                          (WIFEXITED(st) && WEXITSTATUS(st) == 1 ? " (frame leak reported)" : "") +
                                          tail());
    return {};
  }

  std::optional<double> processCpuSeconds() const override {
    if (pid_ <= 0) return std::nullopt;
    auto c = taskCpuSeconds(pid_);
    if (!c) return std::nullopt;
    return c.value();
  }

  std::string statsJson() const override { return stats_; }
  // Learned unicast leaves through the devmap (ndo_xdp_xmit): the sink veth
  // needs NAPI, which vdevd gives the container end of every veth it creates.
  bool transmitsXdpFrames() const override { return fastPath(); }
  pid_t pid() const override { return pid_ > 0 ? pid_ : 0; }
  std::string liveStatsJson() override {
    if (pid_ <= 0) return "";
    struct stat before = {};
    bool had = stat(statsPath_.c_str(), &before) == 0;
    kill(pid_, SIGUSR1);
    // vdevd writes PATH.tmp and renames it: a new inode (or mtime) means done.
    for (int i = 0; i < 100; ++i) {
      struct stat now = {};
      if (stat(statsPath_.c_str(), &now) == 0 &&
          (!had || now.st_ino != before.st_ino || now.st_mtim.tv_nsec != before.st_mtim.tv_nsec ||
           now.st_mtim.tv_sec != before.st_mtim.tv_sec)) {
        std::ifstream f(statsPath_);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
      }
      usleep(2000);
    }
    return "";
  }
  std::string describe() const override {
    std::string s = "vdevd --mode " + mode_;
    if (kind_ == "vdevd-spin") s += " --idle-spin-us " + std::to_string(kSpinUs);
    if (fastPath()) s += " --fast-path";
    else if (mode_ == "switch") s += " --no-fast-path";
    if (kind_ == "vdevd-rx-off") s += " --no-fast-rx " + topo_.portA();
    if (opt_.dpPrio) s += " (SCHED_FIFO " + std::to_string(opt_.dpPrio) + ")";
    for (const auto& a : opt_.vdevdArgs) s += " " + a;
    return s;
  }

 private:
  static constexpr unsigned kSpinUs = 1'000'000;  // vdevd's maximum
  static std::string exitText(int st) {
    if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) return std::string("killed by ") + strsignal(WTERMSIG(st));
    return "status " + std::to_string(st);
  }
  int reap(bool block) {
    int st = 0;
    if (pid_ > 0 && waitpid(pid_, &st, block ? 0 : WNOHANG) == pid_) pid_ = -1;
    return st;
  }
  void keepLine(const std::string& line) {
    logInfo("vdevd: %s", line.c_str());
    std::lock_guard<std::mutex> lk(mu_);
    lines_.push_back(line);
    if (lines_.size() > 40) lines_.pop_front();
  }
  std::string tail() {
    std::lock_guard<std::mutex> lk(mu_);
    if (lines_.empty()) return "";
    std::string s = "; vdevd output:";
    for (const auto& l : lines_) s += "\n    " + l;
    return s;
  }
  void drainMain(Fd fd) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    std::string pending;
    char buf[4096];
    for (;;) {
      ssize_t r = read(fd.get(), buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      pending.append(buf, r);
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        keepLine(pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
  }

  Topology& topo_;
  const Options& opt_;
  std::string path_, kind_, mode_, statsPath_;
  pid_t pid_ = -1;
  std::thread drain_;
  std::mutex mu_;
  std::deque<std::string> lines_;  // guarded by mu_
  std::string stats_;
};

// ---- Linux bridge ---------------------------------------------------------

class BridgeDatapath : public Datapath {
 public:
  BridgeDatapath(Topology& t, const Options& o) : topo_(t), opt_(o) {}
  ~BridgeDatapath() override { stop(); }
  std::string name() const override { return "bridge"; }
  std::string describe() const override {
    return topo_.scenario() == Scenario::kSwitch ? "Linux bridge, learning" : "Linux bridge, static FDB entry for the sink";
  }

  Status start() override {
    const std::string& ns = topo_.dutNs().name();
    const std::string& br = topo_.bridgeName();
    // STP off: ports forward at once. Ageing 300 s (the unit is 1/100 s).
    VB_TRY(runCommand({"ip", "-n", ns, "link", "add", br, "type", "bridge", "stp_state", "0",
                       "ageing_time", "30000", "mcast_snooping", "0"}));
    created_ = true;
    for (const auto& p : topo_.ports()) VB_TRY(runCommand({"ip", "-n", ns, "link", "set", p, "master", br}));
    VB_TRY(runCommand({"ip", "-n", ns, "link", "set", br, "up"}));
    // A static FDB entry for the sink's MAC: forwarding, not flooding, from
    // the first frame (and no dependence on the learning frames arriving).
    // The switch scenario is about learning: no static entry there.
    if (topo_.scenario() != Scenario::kSwitch)
      VB_TRY(runCommand({"bridge", "-n", ns, "fdb", "replace", formatMac(topo_.sinkMac()), "dev",
                         topo_.portB(), "master", "static"}));
    // Frames reach an ingress veth by veth_xdp_xmit(), which only delivers
    // when that veth has NAPI, i.e. an XDP program: XDP_PASS then builds an
    // skb and the bridge gets it as from any NIC. A tap's frames come from
    // write(): nothing needed.
    if (topo_.portAIsTap()) return {};
    auto skel = loadFwd();
    if (!skel) return skel.status();
    skel_ = std::move(skel.value());
    auto link = XdpLink::attach(topo_.dutNs(), topo_.portA(), fwdPassProgram(skel_.get()));
    if (!link) return link.status();
    link_ = std::make_unique<XdpLink>(std::move(link.value()));
    return {};
  }

  Status stop() override {
    link_.reset();
    skel_.reset();
    if (!created_) return {};
    created_ = false;
    // Deleting the bridge releases both ports (they stay up).
    return runCommand({"ip", "-n", topo_.dutNs().name(), "link", "del", topo_.bridgeName()});
  }

 private:
  Topology& topo_;
  const Options& opt_;
  bool created_ = false;
  FwdSkel skel_;
  std::unique_ptr<XdpLink> link_;
};

// ---- kernel XDP redirect ----------------------------------------------------

class XdpRedirectDatapath : public Datapath {
 public:
  explicit XdpRedirectDatapath(Topology& t) : topo_(t) {}
  ~XdpRedirectDatapath() override { stop(); }
  std::string name() const override { return "xdp-redirect"; }
  std::string describe() const override { return "XDP devmap redirect A->B, and B->A for the replies"; }
  bool transmitsXdpFrames() const override { return true; }

  Status start() override {
    if (topo_.ports().size() != 2)
      return Status::failText(EINVAL, "xdp-redirect connects exactly two ports (not a learning switch)");
    auto skel = loadFwd();
    if (!skel) return skel.status();
    skel_ = std::move(skel.value());
    VB_TRY(fwdSetEgress(skel_.get(), topo_.dutNs(), topo_.portB(), 0));
    VB_TRY(fwdSetEgress(skel_.get(), topo_.dutNs(), topo_.portA(), 1));
    auto link = XdpLink::attach(topo_.dutNs(), topo_.portA(), fwdRedirectProgram(skel_.get()));
    if (!link) return link.status();
    link_ = std::make_unique<XdpLink>(std::move(link.value()));
    // The way back (latency probes' replies). Nothing else comes back, so
    // the measured direction is unaffected: an XDP program on B changes
    // only what B receives.
    auto rev = XdpLink::attach(topo_.dutNs(), topo_.portB(), fwdRedirectRevProgram(skel_.get()));
    if (!rev) return rev.status();
    revLink_ = std::make_unique<XdpLink>(std::move(rev.value()));
    return {};
  }

  Status stop() override {
    revLink_.reset();
    link_.reset();
    skel_.reset();
    return {};
  }

 private:
  Topology& topo_;
  FwdSkel skel_;
  std::unique_ptr<XdpLink> link_, revLink_;
};

}  // namespace

bool isKnownDatapath(const std::string& k) {
  return k == "vdevd" || k == "vdevd-switch" || k == "vdevd-spin" || k == "vdevd-fast" || k == "vdevd-rx-off" ||
         k == "bridge" || k == "xdp-redirect";
}

bool isVdevd(const std::string& kind) { return kind.rfind("vdevd", 0) == 0; }

uint64_t sumJsonKey(const std::string& json, const std::string& key) {
  std::string needle = "\"" + key + "\":";
  uint64_t sum = 0;
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    size_t i = at + needle.size();
    while (i < json.size() && json[i] == ' ') ++i;
    sum += strtoull(json.c_str() + i, nullptr, 10);
  }
  return sum;
}

std::string datapathFitsScenario(const std::string& kind, Scenario sc) {
  if (sc != Scenario::kSwitch) return "";
  if (kind == "vdevd") return "vdevd --mode xconnect joins exactly two ports; the switch scenario has three";
  if (kind == "xdp-redirect") return "xdp-redirect connects exactly two ports (it does not learn)";
  return "";
}

std::string findVdevd(const std::string& given) {
  if (!given.empty()) return isExecutable(given) ? given : "";
  std::string dir = selfDir();
  for (const char* rel : {"/../../daemon/vdevd", "/../daemon/vdevd", "/vdevd"}) {
    std::string cand = dir + rel;
    if (isExecutable(cand)) {
      char real[PATH_MAX];
      return realpath(cand.c_str(), real) ? std::string(real) : cand;
    }
  }
  return searchPath("vdevd");
}

Result<std::unique_ptr<Datapath>> makeDatapath(const std::string& kind, Topology& topo, const Options& o,
                                               const std::string& vdevdPath, const std::string& workDir) {
  static int serial = 0;
  std::unique_ptr<Datapath> d;
  if (isVdevd(kind)) {
    if (vdevdPath.empty()) return Status::fail(ENOENT, "vdevd not found (use --vdevd PATH)");
    d = std::make_unique<VdevdDatapath>(topo, o, vdevdPath, kind,
                                        workDir + "/vdevd-stats-" + std::to_string(++serial) + ".json");
  } else if (kind == "bridge") {
    d = std::make_unique<BridgeDatapath>(topo, o);
  } else if (kind == "xdp-redirect") {
    d = std::make_unique<XdpRedirectDatapath>(topo);
  } else {
    return Status::fail(EINVAL, "unknown datapath " + kind);
  }
  return d;
}

}  // namespace vdev::bench
