// sys.cpp - see sys.h.
#include "sys.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <sstream>

extern char** environ;

namespace vdev::bench {

namespace {
std::atomic<bool> g_verbose{false};
// Written from a signal handler: lock-free atomic, relaxed is enough since it
// publishes no other data (readers only stop what they are doing).
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void onStopSignal(int) { g_stop.store(true, std::memory_order_relaxed); }

void vlog(const char* prefix, const char* fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  fprintf(stderr, "vdev-bench: %s%s\n", prefix, buf);
}
}  // namespace

void setVerbose(bool on) { g_verbose.store(on, std::memory_order_relaxed); }
bool verbose() { return g_verbose.load(std::memory_order_relaxed); }

void logInfo(const char* fmt, ...) {
  if (!verbose()) return;
  va_list ap;
  va_start(ap, fmt);
  vlog("", fmt, ap);
  va_end(ap);
}

void logWarn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog("warning: ", fmt, ap);
  va_end(ap);
}

void installStopSignals() {
  struct sigaction sa = {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and we look at the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void blockStopSignals() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
}

bool stopRequested() { return g_stop.load(std::memory_order_relaxed); }
void requestStop() { g_stop.store(true, std::memory_order_relaxed); }

bool sleepUnlessStopped(double seconds) {
  double end = monotonicSeconds() + seconds;
  while (!stopRequested()) {
    double left = end - monotonicSeconds();
    if (left <= 0) return true;
    double step = left < 0.05 ? left : 0.05;
    struct timespec ts = {static_cast<time_t>(step), static_cast<long>((step - static_cast<time_t>(step)) * 1e9)};
    nanosleep(&ts, nullptr);
  }
  return false;
}

double monotonicSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

namespace {
std::string joinArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}
}  // namespace

Result<std::string> runCommandOutput(const std::vector<std::string>& argv) {
  logInfo("+ %s", joinArgv(argv).c_str());
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0) return Status::fromErrno("pipe2");
  Fd rd(pfd[0]), wr(pfd[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 2);
  // The child must not inherit our blocked/handled signal state surprises:
  // reset the mask and default the stop signals.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defs;
  sigemptyset(&none);
  sigemptyset(&defs);
  sigaddset(&defs, SIGINT);
  sigaddset(&defs, SIGTERM);
  sigaddset(&defs, SIGHUP);
  sigaddset(&defs, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defs);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::fail(rc, "spawn " + argv[0]);
  wr.reset();

  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(rd.get(), buf, sizeof buf);
    if (n > 0) {
      out.append(buf, n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    std::string what = "`" + joinArgv(argv) + "` failed";
    if (WIFEXITED(st)) what += " (exit " + std::to_string(WEXITSTATUS(st)) + ")";
    if (!out.empty()) what += ": " + out;
    return Status::failText(EIO, what);
  }
  return out;
}

Status runCommand(const std::vector<std::string>& argv) {
  auto r = runCommandOutput(argv);
  return r.status();
}

// ---- Netns ------------------------------------------------------------------

Result<Netns> Netns::create(const std::string& name) {
  VB_TRY(runCommand({"ip", "netns", "add", name}));
  std::string path = "/run/netns/" + name;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    Status s = Status::fromErrno("open " + path);
    runCommand({"ip", "netns", "del", name});
    return s;
  }
  return Netns(name, Fd(fd));
}

Netns::Netns(Netns&& o) noexcept : name_(std::move(o.name_)), fd_(std::move(o.fd_)) {
  o.name_.clear();
}

Netns::~Netns() {
  if (name_.empty()) return;
  fd_.reset();
  Status s = runCommand({"ip", "netns", "del", name_});
  if (!s.ok()) logWarn("cleanup: %s", s.message().c_str());
}

Status Netns::enter() const {
  if (setns(fd_.get(), CLONE_NEWNET) < 0) return Status::fromErrno("setns " + name_);
  return {};
}

Result<int> ifindexIn(const Netns& ns, const std::string& ifname) {
  return inNetns(ns, [&]() -> Result<int> {
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) return Status::fromErrno("if_nametoindex " + ifname + " in " + ns.name());
    return static_cast<int>(idx);
  });
}

Status sysctlIn(const Netns& ns, const std::string& path, const std::string& value) {
  return inNetns(ns, [&]() -> Status {
    // /proc/sys/net resolves in the opening thread's network namespace.
    std::string full = "/proc/sys/" + path;
    int fd = open(full.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status::fromErrno("open " + full);
    Fd f(fd);
    if (write(fd, value.data(), value.size()) != static_cast<ssize_t>(value.size()))
      return Status::fromErrno("write " + full);
    return {};
  });
}

Result<std::string> sysctlReadIn(const Netns& ns, const std::string& path) {
  return inNetns(ns, [&]() -> Result<std::string> {
    std::string full = "/proc/sys/" + path;
    int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::fromErrno("open " + full);
    Fd f(fd);
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0) return Status::fromErrno("read " + full);
    std::string v(buf, static_cast<size_t>(n));
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
  });
}

Status sysfsNetWrite(const Netns& ns, const std::string& ifname, const std::string& attr,
                     const std::string& value) {
  // Names are generated by vdev-bench ([a-z0-9-]), values are numbers: no quoting needed.
  return runCommand({"ip", "netns", "exec", ns.name(), "sh", "-c",
                     "echo " + value + " > /sys/class/net/" + ifname + "/" + attr});
}

// ---- CPUs ---------------------------------------------------------------------

pid_t gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

Status pinTask(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(tid, sizeof set, &set) < 0)
    return Status::fromErrno("sched_setaffinity(" + std::to_string(tid) + ", cpu " + std::to_string(cpu) + ")");
  return {};
}

Status setRealtime(pid_t tid, int prio) {
  sched_param sp = {};
  sp.sched_priority = prio;
  if (sched_setscheduler(tid, prio > 0 ? SCHED_FIFO : SCHED_OTHER, &sp) < 0)
    return Status::fromErrno("sched_setscheduler(" + std::to_string(tid) + ", prio " + std::to_string(prio) + ")");
  return {};
}

int onlineCpus() { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }

int possibleCpus() {
  // /sys/devices/system/cpu/possible is "0-N" (or a list); the count of slots
  // in a per-CPU map value is N + 1, which libbpf computes the same way.
  std::ifstream f("/sys/devices/system/cpu/possible");
  std::string s;
  std::getline(f, s);
  int maxCpu = 0;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    int hi = std::stoi(dash == std::string::npos ? part : part.substr(dash + 1));
    if (hi > maxCpu) maxCpu = hi;
  }
  return maxCpu + 1;
}

namespace {
double clkTck() {
  static const double t = static_cast<double>(sysconf(_SC_CLK_TCK));
  return t;
}
}  // namespace

Result<CpuBusy> readCpuBusy() {
  std::ifstream f("/proc/stat");
  if (!f) return Status::fromErrno("open /proc/stat");
  CpuBusy b;
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, 3, "cpu") != 0) break;
    if (line.size() < 4 || line[3] == ' ') continue;  // the "cpu " total line
    std::istringstream is(line);
    std::string name;
    unsigned long long user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    is >> name >> user >> nice >> sys >> idle >> iowait >> irq >> softirq >> steal;
    unsigned cpu = std::stoul(name.substr(3));
    if (b.perCpu.size() <= cpu) b.perCpu.resize(cpu + 1, 0.0);
    double busy = (user + nice + sys + irq + softirq) / clkTck();
    b.perCpu[cpu] = busy;
    b.all += busy;
    b.steal += steal / clkTck();
  }
  return b;
}

Result<double> taskCpuSeconds(pid_t pid, pid_t tid) {
  std::string path = "/proc/" + std::to_string(pid);
  if (tid != 0) path += "/task/" + std::to_string(tid);
  path += "/stat";
  std::ifstream f(path);
  if (!f) return Status::fail(ESRCH, "open " + path);
  std::string s;
  std::getline(f, s);
  // comm may hold spaces and parentheses: fields start after the last ')'.
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return Status::fail(EINVAL, "parse " + path);
  std::istringstream is(s.substr(rp + 2));
  std::string field;
  // After ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt
  // majflt cmajflt utime(14) stime(15).
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15; ++i) {
    if (!(is >> field)) return Status::fail(EINVAL, "parse " + path);
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return (utime + stime) / clkTck();
}

Result<double> threadCpuSeconds(pid_t tid) {
  std::string path = "/proc/" + std::to_string(tid) + "/schedstat";
  std::ifstream f(path);
  unsigned long long ns = 0;
  if (!(f >> ns)) return Status::fail(ESRCH, "read " + path);
  return ns * 1e-9;
}

Result<uint64_t> readIpis() {
  std::ifstream f("/proc/interrupts");
  if (!f) return Status::fromErrno("open /proc/interrupts");
  std::string line;
  uint64_t sum = 0;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string name;
    is >> name;
    if (name != "RES:" && name != "CAL:") continue;
    unsigned long long v;
    while (is >> v) sum += v;  // stops at the description
  }
  return sum;
}

Result<uint64_t> voluntarySwitches(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!d) return Status::fromErrno("open /proc/" + std::to_string(pid) + "/task");
  uint64_t sum = 0;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + e->d_name + "/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) sum += std::stoull(line.substr(24));
  }
  closedir(d);
  return sum;
}

std::optional<int> autogroupNice() {
  std::ifstream on("/proc/sys/kernel/sched_autogroup_enabled");
  int enabled = 0;
  if (!(on >> enabled) || !enabled) return std::nullopt;
  std::ifstream f("/proc/self/autogroup");  // "/autogroup-9 nice 0"
  std::string group, word;
  int nice = 0;
  if (!(f >> group >> word >> nice) || word != "nice") return std::nullopt;
  return nice;
}

Status setAutogroupNice(int nice) {
  std::ofstream f("/proc/self/autogroup");
  f << nice;
  f.flush();
  if (!f) return Status::fromErrno("set the autogroup's nice to " + std::to_string(nice));
  return {};
}

std::vector<pid_t> findTasksByComm(const std::string& prefix) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/comm");
    std::string comm;
    if (std::getline(f, comm) && comm.compare(0, prefix.size(), prefix) == 0)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

}  // namespace vdev::bench
