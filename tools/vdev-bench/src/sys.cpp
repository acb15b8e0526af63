// sys.cpp - see sys.h.
#include "sys.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdarg>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "testkit/files.h"
#include "testkit/process.h"
#include "testkit/wait.h"

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
  const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
  return !testkit::waitUntil([] { return stopRequested(); }, d, std::chrono::milliseconds(50));
}

double monotonicSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::optional<std::vector<std::string>> dirEntries(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(path.c_str()), closedir);
  if (!d) return std::nullopt;
  std::vector<std::string> names;
  while (const dirent* e = readdir(d.get()))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  return names;
}

Status runCommand(const std::vector<std::string>& argv) {
  logInfo("+ %s", testkit::commandLine(argv).c_str());
  // iproute2 and friends return at once; a minute means one hangs.
  auto r = testkit::runChecked({.argv = argv, .timeout = std::chrono::minutes(1)});
  if (!r) return r.error();
  return {};
}

// ---- child processes ------------------------------------------------------------

std::string childExitText(int st) {
  if (st > 128 && st < 128 + NSIG) return std::string("killed by ") + strsignal(st - 128);
  return "exit status " + std::to_string(st);
}

std::vector<std::string> childOutputLines(const std::string& path, size_t max) {
  auto text = testkit::readFile(path);
  std::vector<std::string> lines;
  if (!text) return lines;
  std::stringstream ss(*text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  if (lines.size() > max) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(max));
  return lines;
}

std::string childOutputTail(const std::string& path, const std::string& name) {
  const auto lines = childOutputLines(path, 40);
  if (lines.empty()) return "";
  std::string s = "; " + name + " output:";
  for (const auto& l : lines) s += "\n    " + l;
  return s;
}

std::optional<int> stopChild(testkit::Child& child, std::chrono::nanoseconds timeout, const std::string& name) {
  if (!child.running()) return child.status();
  (void)child.signal(SIGTERM);
  std::optional<int> st = child.wait(timeout);
  if (st) return st;
  logWarn("%s (pid %d) did not exit %.0f s after SIGTERM; killing it", name.c_str(), child.pid(),
          std::chrono::duration<double>(timeout).count());
  (void)child.signal(SIGKILL);
  return child.wait(std::chrono::seconds(10));
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

// ---- CPUs ---------------------------------------------------------------------

pid_t gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

Status pinTask(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(tid, sizeof set, &set) < 0)
    return errnoError("sched_setaffinity(" + std::to_string(tid) + ", cpu " + std::to_string(cpu) + ")");
  return {};
}

Status setRealtime(pid_t tid, int prio) {
  sched_param sp = {};
  sp.sched_priority = prio;
  if (sched_setscheduler(tid, prio > 0 ? SCHED_FIFO : SCHED_OTHER, &sp) < 0)
    return errnoError("sched_setscheduler(" + std::to_string(tid) + ", prio " + std::to_string(prio) + ")");
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
  if (!f) return errnoError("open /proc/stat");
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
  if (!f) return makeError(ESRCH, "open " + path);
  std::string s;
  std::getline(f, s);
  // comm may hold spaces and parentheses: fields start after the last ')'.
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return makeError(EINVAL, "parse " + path);
  std::istringstream is(s.substr(rp + 2));
  std::string field;
  // After ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt
  // majflt cmajflt utime(14) stime(15).
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15; ++i) {
    if (!(is >> field)) return makeError(EINVAL, "parse " + path);
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return (utime + stime) / clkTck();
}

Result<double> threadCpuSeconds(pid_t tid) {
  std::string path = "/proc/" + std::to_string(tid) + "/schedstat";
  std::ifstream f(path);
  unsigned long long ns = 0;
  if (!(f >> ns)) return makeError(ESRCH, "read " + path);
  return ns * 1e-9;
}

Result<uint64_t> readIpis() {
  std::ifstream f("/proc/interrupts");
  if (!f) return errnoError("open /proc/interrupts");
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
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  const auto tasks = dirEntries(dir);
  if (!tasks) return errnoError("open " + dir);
  uint64_t sum = 0;
  for (const std::string& t : *tasks) {
    std::ifstream f(dir + "/" + t + "/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) sum += std::stoull(line.substr(24));
  }
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
  if (!f) return errnoError("set the autogroup's nice to " + std::to_string(nice));
  return {};
}

std::vector<pid_t> findTasksByComm(const std::string& prefix) {
  std::vector<pid_t> out;
  for (const std::string& e : dirEntries("/proc").value_or(std::vector<std::string>{})) {
    char* end;
    long pid = strtol(e.c_str(), &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream f("/proc/" + e + "/comm");
    std::string comm;
    if (std::getline(f, comm) && comm.compare(0, prefix.size(), prefix) == 0)
      out.push_back(static_cast<pid_t>(pid));
  }
  return out;
}

}  // namespace vdev::bench
