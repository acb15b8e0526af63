// sys.h - small Linux helpers for vdev-bench's control code: logging, the
// stop flag, running iproute2, CPU pinning and CPU time. Namespaces, devices
// and processes come from testkit/.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "result.h"
#include "testkit/netns.h"
#include "testkit/process.h"

namespace vdev::bench {

// ---- logging (stderr) -------------------------------------------------------
void setVerbose(bool on);
bool verbose();
void logInfo(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // -v only
void logWarn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // always

// ---- stop flag --------------------------------------------------------------
// Set by SIGINT/SIGTERM/SIGHUP (installStopSignals) or requestStop(). Every
// wait loop polls it, so an interrupted run unwinds through the destructors
// that remove what it created.
void installStopSignals();
// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, so that they go to
// the main thread (whose wait loops poll the stop flag) rather than
// interrupting a helper thread's blocking call.
void blockStopSignals();
bool stopRequested();
void requestStop();
// Sleeps up to `seconds`, returning early (false) when a stop is requested.
bool sleepUnlessStopped(double seconds);

// ---- commands ---------------------------------------------------------------
// Runs argv (PATH search, no shell; testkit::runChecked), logged with -v.
// Non-zero exit -> an Error whose text holds the command and what it printed.
Status runCommand(const std::vector<std::string>& argv);

// ---- child processes (testkit::Child) --------------------------------------
// A testkit::Child status in words: "exit status 1", "killed by Terminated".
std::string childExitText(int status);
// The last `max` lines of a child's output file (testkit::ChildOutput).
std::vector<std::string> childOutputLines(const std::string& path, size_t max);
// "; NAME output:" and the file's last 40 lines, indented, or "" when the
// child printed nothing: for error messages.
std::string childOutputTail(const std::string& path, const std::string& name);
// SIGTERM, up to `timeout` for it to exit, then SIGKILL (with a warning that
// names it). Its status, or nullopt if even SIGKILL did not end it.
std::optional<int> stopChild(testkit::Child& child, std::chrono::nanoseconds timeout, const std::string& name);
// The directory of vdev-bench's own executable.
std::string selfDir();

// ---- network namespaces ------------------------------------------------------
// testkit's: named namespaces (ip netns add/del) with IPv6 off, code run
// inside one through testkit::inNetns, sysctls, sysfs and ifindexes there.
// Netdev ifindexes, XDP attach, BPF_PROG_RUN's ingress_ifindex, /proc/sys/net
// and sockets all resolve in the calling thread's network namespace.
using testkit::Netns;

// ---- CPUs and CPU time ------------------------------------------------------
Status pinTask(pid_t tid, int cpu);  // tid 0 = the calling thread
// SCHED_FIFO at prio (1..99) for tid, or SCHED_OTHER when prio is 0.
Status setRealtime(pid_t tid, int prio);
pid_t gettid();
int onlineCpus();
int possibleCpus();  // slots in a BPF per-CPU map value

// Busy time per CPU from /proc/stat: user + nice + system + irq + softirq, in
// seconds (steal and idle/iowait are not busy). Index = CPU number.
struct CpuBusy {
  std::vector<double> perCpu;
  double all = 0;
  double steal = 0;  // all CPUs: time the hypervisor ran something else
};
Result<CpuBusy> readCpuBusy();
// utime + stime in seconds of a whole process (tid == 0: every thread, the
// exited ones included) or one of its threads; /proc/PID/stat, 1/USER_HZ
// resolution.
Result<double> taskCpuSeconds(pid_t pid, pid_t tid = 0);
// CPU time of one thread (any process's, kernel threads included) from
// /proc/TID/schedstat: the scheduler's sum_exec_runtime, nanosecond
// resolution. It includes interrupts and softirqs that ran while the thread
// was current (this kernel has no IRQ_TIME_ACCOUNTING).
Result<double> threadCpuSeconds(pid_t tid);
// Threads (any process, kernel threads included) whose comm starts with
// prefix, e.g. "napi/vb123a-".
std::vector<pid_t> findTasksByComm(const std::string& prefix);

double monotonicSeconds();

// The names in directory `path` ("." and ".." left out), or nullopt when it
// cannot be read: /proc's pids, a process's tasks or fds, /run/netns.
std::optional<std::vector<std::string>> dirEntries(const std::string& path);
// CLOCK_MONOTONIC in nanoseconds; inline: pacing and probe loops call it.
inline uint64_t nowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Inter-processor interrupts so far, all CPUs: rescheduling (a wake-up of a
// task on another CPU) plus function-call interrupts (/proc/interrupts RES
// and CAL).
Result<uint64_t> readIpis();
// Voluntary context switches of a process (all its threads): how often it
// went to sleep.
Result<uint64_t> voluntarySwitches(pid_t pid);

// The nice value of this process's autogroup (/proc/self/autogroup: with
// CONFIG_SCHED_AUTOGROUP, CFS first shares a CPU fairly between sessions,
// whatever the threads' own nice values). nullopt when autogrouping is off
// or absent.
std::optional<int> autogroupNice();
Status setAutogroupNice(int nice);

}  // namespace vdev::bench
