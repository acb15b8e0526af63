// Child processes: commands run to completion with their output captured
// (runCaptured), and processes that run beside the caller with their output in
// files (Child) -- vdevd, vdev-vm, a CNI plugin, iproute2.
//
// Every child starts with an empty signal mask, SIGPIPE at its default, and
// no file descriptor beyond 0-2: it cannot keep a test's tap or socket (or a
// benchmark's) alive after the caller closes it. argv[0] without a '/' is
// looked up in $PATH (before fork: the child only execs).
//
// Errors are Results: only a child that cannot be started is an Error; how it
// exited is its status. Thread safe: no process-wide state is changed
// (SIGPIPE from writing a child's stdin is blocked in the calling thread and
// consumed there).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace vdev::testkit {

using namespace std::chrono_literals;

// How a child is started.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::optional<uid_t> uid;  // with gid: run as this user (supplementary groups dropped)
  gid_t gid = 0;
  std::optional<std::vector<std::string>> env;  // "K=V" entries replacing the environment
  std::string stdin_text;                      // runCaptured: written to stdin, which is then closed
  std::chrono::milliseconds timeout = 20s;     // runCaptured: then SIGKILL (status 137); scaled() (wait.h)
  int cpu = -1;                                // >= 0: pinned to this CPU before exec
  int fifo_prio = 0;                           // > 0: SCHED_FIFO at this priority (kept across exec)
  // SIGTERM to the child when the thread that started it exits (prctl
  // PR_SET_PDEATHSIG): a daemon under test cleans up after a dead caller.
  bool term_with_parent = false;
};

struct ProcessResult {
  // Exit status, 128 + signal if killed. The child itself exits 125 when it
  // cannot take spec's user, CPU or priority, 127 when exec fails.
  int status = -1;
  std::string out;
  std::string err;
  bool ok() const { return status == 0; }
};

// Runs spec to completion, capturing stdout and stderr. An Error only when it
// cannot be started (pipe, fork, no such executable).
Result<ProcessResult> runCaptured(const ProcessSpec& spec);

// Runs spec; its stdout when it exits 0, else an Error whose text is the
// command line, the exit status and what it printed on stderr.
Result<std::string> runChecked(const ProcessSpec& spec);

// The command line for messages: arguments joined by spaces, unquoted.
std::string commandLine(const std::vector<std::string>& argv);
// Single-quotes `s` for /bin/sh.
std::string shellQuote(std::string_view s);
// A regular file we may execute.
bool isExecutable(const std::string& path);
// The first executable `name` in $PATH (a default path if unset), or "".
std::string findExecutable(const std::string& name);

// Where a Child's output goes: files, created or truncated. stderr_path ""
// sends stderr to the stdout file.
struct ChildOutput {
  std::string stdout_path;
  std::string stderr_path;
};

// A child running beside the caller, stdin /dev/null. Move-only; the
// destructor SIGKILLs and reaps it if it is still running. Not thread safe.
class Child {
 public:
  // spec.stdin_text and spec.timeout are not used.
  static Result<Child> start(const ProcessSpec& spec, const ChildOutput& output);
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  // Reaps the child if it exited; false once it has.
  bool running();
  // Its exit status (128 + signal if killed) once reaped.
  std::optional<int> status() const { return status_; }
  // Sends sig while it runs; nothing once it has exited.
  Status signal(int sig);
  // Waits up to `timeout` for it to exit; its status, or nullopt if it still runs.
  std::optional<int> wait(std::chrono::nanoseconds timeout);
  // Waits until its stdout file has a whole line that is `line`, or starts
  // with `line` and a space ("vdevd: ready (3 ports)" for "vdevd: ready").
  // Errors: ECHILD when it exits first, ETIMEDOUT after `timeout`, EINTR when
  // cancel() (checked every few milliseconds) returns true.
  Status waitForLine(std::string_view line, std::chrono::nanoseconds timeout,
                     const std::function<bool()>& cancel = {});
  const ChildOutput& output() const { return output_; }

 private:
  Child(pid_t pid, ChildOutput output) : pid_(pid), output_(std::move(output)) {}
  void kill();

  pid_t pid_ = -1;
  std::optional<int> status_;
  ChildOutput output_;
};

}  // namespace vdev::testkit
