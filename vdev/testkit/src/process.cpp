#include "testkit/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <utility>

#include "base/fd.h"
#include "testkit/files.h"
#include "testkit/wait.h"

namespace vdev::testkit {

namespace {

using Clock = std::chrono::steady_clock;

int exitStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

int reap(pid_t pid) {
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  return exitStatus(ws);
}

// Everything the child needs, prepared before fork: between fork and exec
// the child of a multi-threaded process may only make async-signal-safe
// calls (no allocation).
struct ExecPlan {
  std::string path;
  std::vector<std::string> envStore;
  std::vector<char*> argv, envp;
  bool replaceEnv = false;
  cpu_set_t cpus;
  pid_t parent = 0;
};

std::vector<char*> cStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

Result<ExecPlan> planExec(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Error{EINVAL, "start a process: empty argv"};
  ExecPlan p;
  p.path = spec.argv[0];
  if (p.path.find('/') == std::string::npos) {
    p.path = findExecutable(spec.argv[0]);
    if (p.path.empty()) return Error{ENOENT, "start " + spec.argv[0] + ": not found in $PATH"};
  }
  p.argv = cStrings(spec.argv);
  if (spec.env) {
    p.replaceEnv = true;
    p.envStore = *spec.env;
    p.envp = cStrings(p.envStore);
  }
  CPU_ZERO(&p.cpus);
  if (spec.cpu >= 0) CPU_SET(spec.cpu, &p.cpus);
  p.parent = ::getpid();
  return p;
}

// The child side of fork(): async-signal-safe calls only, until exec.
[[noreturn]] void execChild(const ExecPlan& p, const ProcessSpec& spec, int in, int out, int err) {
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
  // No taps, sockets or pipes of the caller: a tap whose fd lived on in the
  // child would not disappear when the caller closes it.
  ::close_range(3, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // An ignored signal stays ignored across exec; handled ones are reset.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  if (spec.term_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != p.parent) ::_exit(127);  // the parent died before prctl
  }
  if (spec.cpu >= 0 && ::sched_setaffinity(0, sizeof p.cpus, &p.cpus) < 0) ::_exit(125);
  if (spec.fifo_prio > 0) {
    sched_param sp = {};
    sp.sched_priority = spec.fifo_prio;
    if (::sched_setscheduler(0, SCHED_FIFO, &sp) < 0) ::_exit(125);
  }
  if (spec.uid && (::setgroups(0, nullptr) < 0 || ::setgid(spec.gid) < 0 || ::setuid(*spec.uid) < 0))
    ::_exit(125);
  if (p.replaceEnv)
    ::execve(p.path.c_str(), p.argv.data(), p.envp.data());
  else
    ::execv(p.path.c_str(), p.argv.data());
  ::_exit(127);
}

// Writes all of `text` to fd (a pipe to a child). A child that exits
// without reading makes write() fail with EPIPE; the SIGPIPE that comes with
// it is blocked in this thread and consumed here, so nothing process-wide
// changes.
void writeAll(int fd, const std::string& text) {
  if (text.empty()) return;
  sigset_t pipeSet, old;
  sigemptyset(&pipeSet);
  sigaddset(&pipeSet, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipeSet, &old);
  bool broken = false;
  for (size_t off = 0; off < text.size();) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken = errno == EPIPE;
      break;
    }
    off += size_t(n);
  }
  if (broken && !sigismember(&old, SIGPIPE)) {
    const timespec zero = {0, 0};
    ::sigtimedwait(&pipeSet, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// A whole line of `text` that is `line`, or `line`, a space and more.
bool hasLine(const std::string& text, std::string_view line) {
  for (size_t pos = text.find(line); pos != std::string::npos; pos = text.find(line, pos + 1)) {
    const bool startOk = pos == 0 || text[pos - 1] == '\n';
    const size_t end = pos + line.size();
    if (startOk && end < text.size() && (text[end] == '\n' || text[end] == ' ') &&
        text.find('\n', end) != std::string::npos)
      return true;
  }
  return false;
}

}  // namespace

std::string commandLine(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

std::string shellQuote(std::string_view s) {
  std::string q = "'";
  for (const char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

bool isExecutable(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string findExecutable(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string cand = dir + "/" + name;
    if (isExecutable(cand)) return cand;
  }
  return "";
}

Result<ProcessResult> runCaptured(const ProcessSpec& spec) {
  auto plan = planExec(spec);
  if (!plan) return plan.error();
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) < 0) return errnoError("pipe");
  FileDesc inR(in[0]), inW(in[1]);
  if (::pipe2(out, O_CLOEXEC) < 0) return errnoError("pipe");
  FileDesc outR(out[0]), outW(out[1]);
  if (::pipe2(err, O_CLOEXEC) < 0) return errnoError("pipe");
  FileDesc errR(err[0]), errW(err[1]);
  const pid_t pid = ::fork();
  if (pid == 0) execChild(*plan, spec, inR.get(), outW.get(), errW.get());
  if (pid < 0) return errnoError("fork " + spec.argv[0]);
  inR.reset();
  outW.reset();
  errW.reset();
  // Inputs are far below a pipe's capacity: write it all, then read.
  writeAll(inW.get(), spec.stdin_text);
  inW.reset();

  ProcessResult r;
  const auto deadline = Clock::now() + scaled(spec.timeout);
  pollfd fds[2] = {{outR.get(), POLLIN, 0}, {errR.get(), POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  bool killed = false;
  char buf[4096];
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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
        fds[i].fd = -1;  // closed with outR/errR
        --open;
      }
    }
  }
  r.status = reap(pid);
  return r;
}

Result<std::string> runChecked(const ProcessSpec& spec) {
  auto r = runCaptured(spec);
  if (!r) return r.error();
  if (r->ok()) return std::move(r->out);
  std::string text = r->err.empty() ? r->out : r->err;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string what = "`" + commandLine(spec.argv) + "` failed (exit " + std::to_string(r->status) + ")";
  if (!text.empty()) what += ": " + text;
  return Error{0, what};  // the text says everything: no strerror
}

// ---------------------------------------------------------------------------
// Child

Result<Child> Child::start(const ProcessSpec& spec, const ChildOutput& output) {
  auto plan = planExec(spec);
  if (!plan) return plan.error();
  FileDesc in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return errnoError("open /dev/null");
  FileDesc out(::open(output.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return errnoError("open " + output.stdout_path);
  FileDesc err;
  if (!output.stderr_path.empty()) {
    err = FileDesc(::open(output.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!err.valid()) return errnoError("open " + output.stderr_path);
  }
  const pid_t pid = ::fork();
  if (pid == 0) execChild(*plan, spec, in.get(), out.get(), err.valid() ? err.get() : out.get());
  if (pid < 0) return errnoError("fork " + spec.argv[0]);
  return Child(pid, output);
}

Child::Child(Child&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), status_(o.status_), output_(std::move(o.output_)) {}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    kill();
    pid_ = std::exchange(o.pid_, -1);
    status_ = o.status_;
    output_ = std::move(o.output_);
  }
  return *this;
}

Child::~Child() { kill(); }

void Child::kill() {
  if (pid_ <= 0 || status_) return;
  ::kill(pid_, SIGKILL);
  status_ = reap(pid_);
}

bool Child::running() {
  if (pid_ <= 0 || status_) return false;
  int ws = 0;
  if (::waitpid(pid_, &ws, WNOHANG) == pid_) status_ = exitStatus(ws);
  return !status_;
}

Status Child::signal(int sig) {
  if (running() && ::kill(pid_, sig) < 0) return errnoError("kill " + std::to_string(pid_));
  return {};
}

std::optional<int> Child::wait(std::chrono::nanoseconds timeout) {
  waitUntil([&] { return !running(); }, timeout, 2ms);
  return status_;
}

Status Child::waitForLine(std::string_view line, std::chrono::nanoseconds timeout,
                          const std::function<bool()>& cancel) {
  const auto seen = [&] {
    auto text = readFile(output_.stdout_path);
    return text.ok() && hasLine(*text, line);
  };
  timeout = scaled(timeout);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (seen()) return {};
    if (!running()) {
      if (seen()) return {};
      return Error{ECHILD, "exited with status " + std::to_string(status_.value_or(-1)) + " before printing '" +
                               std::string(line) + "'"};
    }
    if (cancel && cancel()) return Error{EINTR, "interrupted while waiting for '" + std::string(line) + "'"};
    if (Clock::now() >= deadline)
      return Error{ETIMEDOUT, "did not print '" + std::string(line) + "' within " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                                  " ms"};
    std::this_thread::sleep_for(5ms);
  }
}

}  // namespace vdev::testkit
