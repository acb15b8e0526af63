// child.h - the processes vdev-bench starts and owns (vdevd, a VM stand-in,
// iperf3), and where it finds their executables.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fd.h"
#include "result.h"

namespace vdev::bench {

// A regular file this process may execute.
bool isExecutable(const std::string& path);
// name's path in PATH (or the usual system directories), or "".
std::string searchPath(const std::string& name);
// The directory of vdev-bench's own executable.
std::string selfDir();
// "exit status 1", "killed by Terminated": a waitpid() status in words.
std::string waitStatusText(int status);

struct ChildOptions {
  std::string name;          // in messages and logs: "vdevd", "iperf3 server"
  int cpu = -1;              // pinned to this CPU (inherited through exec); -1: anywhere
  int fifoPrio = 0;          // SCHED_FIFO at this priority (inherited through exec); 0: normal
  std::string readyPrefix;   // waitReady(): a line that starts with this
  bool keepOutput = false;   // keep everything it prints (output()), not only the tail
};

// A child process: stdin /dev/null, stdout and stderr into a pipe that a
// thread of this object reads line by line (logged with -v, the last 40
// lines kept for error messages), so the child never blocks on a full
// pipe. It gets SIGTERM when vdev-bench dies (PR_SET_PDEATHSIG) and cleans
// up after itself; the destructor stops it as stop() does.
class Child {
 public:
  // Starts argv: argv[0] is a path, or a name looked up with searchPath().
  static Result<std::unique_ptr<Child>> start(const std::vector<std::string>& argv, ChildOptions opt);
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  // Waits until the child printed a line that starts with opt.readyPrefix.
  // ECHILD when it exited first, ETIMEDOUT after timeoutS, EINTR on a stop
  // request (the child keeps running: stop() or the destructor end it).
  Status waitReady(double timeoutS);
  // Waits up to timeoutS for the child to exit by itself and returns its
  // waitpid() status (ETIMEDOUT: still running; EINTR: stop requested).
  Result<int> wait(double timeoutS);
  // SIGTERM, up to timeoutS for it to exit, then SIGKILL (ETIMEDOUT then,
  // with a warning). Returns its waitpid() status; a child that had
  // already exited returns the status it had.
  Result<int> stop(double timeoutS);
  // While running: its pid; 0 once it has been reaped.
  pid_t pid() const { return pid_ > 0 ? pid_ : 0; }
  // Everything it printed so far (opt.keepOutput), stdout and stderr mixed.
  std::string output() const;
  // "; NAME output:" and its last lines, indented, or "" when it printed none.
  std::string tail() const;

 private:
  explicit Child(ChildOptions opt) : opt_(std::move(opt)) {}
  void readMain(Fd fd);
  // waitpid(WNOHANG) (or blocking): true once reaped, status in status_.
  bool reap(bool block);

  ChildOptions opt_;
  pid_t pid_ = -1;
  int status_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;  // guarded by mu_
  std::string output_;             // guarded by mu_
  bool ready_ = false;             // guarded by mu_
  bool eof_ = false;               // guarded by mu_
};

}  // namespace vdev::bench
