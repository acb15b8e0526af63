// sys.h - small Linux helpers for vdev-bench's control code: logging, the
// stop flag, running iproute2, network namespaces, CPU pinning and CPU time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fd.h"
#include "result.h"

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
// Runs argv (PATH search, no shell), output captured. Non-zero exit -> a
// Status whose text holds the command and what it printed.
Status runCommand(const std::vector<std::string>& argv);
// As runCommand, but the output is returned (stdout and stderr together).
Result<std::string> runCommandOutput(const std::vector<std::string>& argv);

// ---- network namespaces ------------------------------------------------------
// A named network namespace (ip netns add) that this process created and
// deletes when destroyed; deleting it destroys every netdev inside, and a
// veth's peer with it.
class Netns {
 public:
  static Result<Netns> create(const std::string& name);
  Netns(Netns&& o) noexcept;
  Netns& operator=(Netns&&) = delete;
  Netns(const Netns&) = delete;
  ~Netns();

  const std::string& name() const { return name_; }
  // setns() for the calling thread only (other threads stay where they are).
  Status enter() const;

 private:
  Netns(std::string name, Fd fd) : name_(std::move(name)), fd_(std::move(fd)) {}
  std::string name_;
  Fd fd_;
};

// Runs f() on a temporary thread that has entered ns and returns its result
// (a Status or Result<T>). Netdev ifindexes, XDP attach, BPF_PROG_RUN's
// ingress_ifindex, /proc/sys/net and sockets all resolve in the calling
// thread's network namespace, hence this helper.
template <class F>
auto inNetns(const Netns& ns, F&& f) -> decltype(f()) {
  using R = decltype(f());
  R out = Status::fail(EINTR, "inNetns: not run");
  std::thread t([&] {
    Status s = ns.enter();
    if (!s.ok()) {
      out = s;
      return;
    }
    out = f();
  });
  t.join();
  return out;
}

// Ifindex of ifname inside ns.
Result<int> ifindexIn(const Netns& ns, const std::string& ifname);
// Writes value to a /proc/sys path inside ns (net.* sysctls are per netns).
Status sysctlIn(const Netns& ns, const std::string& path, const std::string& value);
// Reads a /proc/sys path inside ns (trailing newline removed).
Result<std::string> sysctlReadIn(const Netns& ns, const std::string& path);
// Writes value to /sys/class/net/IFNAME/ATTR of a device inside ns. sysfs
// shows the namespace it was mounted in, so this goes through
// `ip netns exec`, which mounts a private sysfs for the namespace.
Status sysfsNetWrite(const Netns& ns, const std::string& ifname, const std::string& attr,
                     const std::string& value);

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
