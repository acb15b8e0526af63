// child.cpp - see child.h.
#include "child.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "sys.h"

namespace vdev::bench {

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

std::string waitStatusText(int st) {
  if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("killed by ") + strsignal(WTERMSIG(st));
  return "status " + std::to_string(st);
}

namespace {
// What a reader thread keeps at most of a child's output (opt.keepOutput):
// iperf3's JSON report of a long run is well below.
constexpr size_t kMaxOutput = 16u << 20;
constexpr size_t kTailLines = 40;
}  // namespace

Result<std::unique_ptr<Child>> Child::start(const std::vector<std::string>& argv, ChildOptions opt) {
  if (argv.empty()) return Status::fail(EINVAL, "start " + opt.name + ": no command");
  std::string exe = argv[0].find('/') == std::string::npos ? searchPath(argv[0]) : argv[0];
  if (exe.empty()) return Status::fail(ENOENT, argv[0] + " not found in PATH");
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (opt.cpu >= 0) logInfo("+ %s  (cpu %d)", cmd.c_str(), opt.cpu);
  else logInfo("+ %s", cmd.c_str());

  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls until exec (another thread may hold malloc's lock).
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0) return Status::fromErrno("pipe2");
  Fd rd(pfd[0]), wr(pfd[1]);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (opt.cpu >= 0) CPU_SET(opt.cpu, &cpus);
  const pid_t parent = getpid();
  const int prio = opt.fifoPrio;
  const bool pin = opt.cpu >= 0;

  std::unique_ptr<Child> c(new Child(std::move(opt)));
  pid_t pid = fork();
  if (pid < 0) return Status::fromErrno("fork");
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR2}) signal(sig, SIG_DFL);
    // If vdev-bench dies, the child gets SIGTERM and cleans up after itself.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    if (pin) sched_setaffinity(0, sizeof cpus, &cpus);
    if (prio > 0) {
      sched_param sp = {};
      sp.sched_priority = prio;
      sched_setscheduler(0, SCHED_FIFO, &sp);  // inherited through exec
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(pfd[1], 1);
    dup2(pfd[1], 2);
    execv(exe.c_str(), cargv.data());
    _exit(127);
  }
  c->pid_ = pid;
  wr.reset();
  c->reader_ = std::thread([p = c.get(), fd = std::move(rd)]() mutable { p->readMain(std::move(fd)); });
  return c;
}

void Child::readMain(Fd fd) {
  blockStopSignals();
  std::string pending;
  char buf[4096];
  auto keepLine = [&](const std::string& line) {
    logInfo("%s: %s", opt_.name.c_str(), line.c_str());
    std::lock_guard<std::mutex> lk(mu_);
    lines_.push_back(line);
    if (lines_.size() > kTailLines) lines_.pop_front();
    if (!opt_.readyPrefix.empty() && line.rfind(opt_.readyPrefix, 0) == 0) ready_ = true;
  };
  for (;;) {
    ssize_t r = read(fd.get(), buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    pending.append(buf, static_cast<size_t>(r));
    if (opt_.keepOutput) {
      std::lock_guard<std::mutex> lk(mu_);
      if (output_.size() < kMaxOutput) output_.append(buf, static_cast<size_t>(r));
    }
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      keepLine(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
    cv_.notify_all();
  }
  if (!pending.empty()) keepLine(pending);
  fd.reset();
  std::lock_guard<std::mutex> lk(mu_);
  eof_ = true;
  cv_.notify_all();
}

bool Child::reap(bool block) {
  if (pid_ <= 0) return true;
  int st = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &st, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  status_ = st;
  pid_ = -1;
  return true;
}

Status Child::waitReady(double timeoutS) {
  const double deadline = monotonicSeconds() + timeoutS;
  std::unique_lock<std::mutex> lk(mu_);
  while (!ready_) {
    if (stopRequested()) return Status::fail(EINTR, "waiting for " + opt_.name);
    if (eof_) {
      lk.unlock();
      reap(true);
      return Status::failText(ECHILD, opt_.name + " exited before it was ready (" + waitStatusText(status_) + ")" +
                                          tail());
    }
    if (monotonicSeconds() >= deadline) {
      lk.unlock();
      char secs[32];
      snprintf(secs, sizeof secs, "%g", timeoutS);
      return Status::failText(ETIMEDOUT, opt_.name + " did not print '" + opt_.readyPrefix + "' within " + secs +
                                             " s" + tail());
    }
    cv_.wait_for(lk, std::chrono::milliseconds(50));
  }
  return {};
}

Result<int> Child::wait(double timeoutS) {
  const double deadline = monotonicSeconds() + timeoutS;
  while (!reap(false)) {
    if (stopRequested()) return Status::fail(EINTR, "waiting for " + opt_.name);
    if (monotonicSeconds() >= deadline)
      return Status::failText(ETIMEDOUT, opt_.name + " still running after " + std::to_string(timeoutS) + " s");
    usleep(10'000);
  }
  if (reader_.joinable()) reader_.join();
  return status_;
}

Result<int> Child::stop(double timeoutS) {
  bool killed = false;
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    const double deadline = monotonicSeconds() + timeoutS;
    while (!reap(false) && monotonicSeconds() < deadline) usleep(10'000);
    if (pid_ > 0) {
      logWarn("%s (pid %d) did not exit %.0f s after SIGTERM; killing it", opt_.name.c_str(), pid_, timeoutS);
      kill(pid_, SIGKILL);
      reap(true);
      killed = true;
    }
  }
  if (reader_.joinable()) reader_.join();
  if (killed) return Status::failText(ETIMEDOUT, opt_.name + " did not exit after SIGTERM");
  return status_;
}

Child::~Child() { stop(15); }

std::string Child::output() const {
  std::lock_guard<std::mutex> lk(mu_);
  return output_;
}

std::string Child::tail() const {
  std::lock_guard<std::mutex> lk(mu_);
  if (lines_.empty()) return "";
  std::string s = "; " + opt_.name + " output:";
  for (const auto& l : lines_) s += "\n    " + l;
  return s;
}

}  // namespace vdev::bench
