// ControlServer: see server.h.
#include "proto/server.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59  // Linux 4.13; older libc headers lack it
#endif

namespace vdev::proto {

namespace {

constexpr int kSendFlags = MSG_DONTWAIT | MSG_NOSIGNAL;
constexpr uint64_t kRearmTimerId = UINT64_MAX;      // epoll id of rearm_timer_ (clients: 1, 2, ...)
constexpr uint64_t kSweepTimerId = UINT64_MAX - 1;  // epoll id of sweep_timer_

Result<sockaddr_un> unixAddr(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(a.sun_path))
    return Error{ENAMETOOLONG, "control socket path \"" + path + "\""};
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// mkdir -p of dir, new directories with `mode`.
vdev::Status makeDirs(const std::string& dir, mode_t mode) {
  if (dir.empty()) return {};
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), mode) == 0) {
      // mkdir applies the umask; the mode is part of the contract.
      if (::chmod(part.c_str(), mode) != 0) return vdev::errnoError("chmod " + part);
      continue;
    }
    if (errno != EEXIST) return vdev::errnoError("mkdir " + part);
    struct stat st;
    if (::stat(part.c_str(), &st) != 0) return vdev::errnoError("stat " + part);
    if (!S_ISDIR(st.st_mode)) return Error{ENOTDIR, part + " is not a directory"};
  }
  return {};
}

// The directory the socket lives in: a real directory (lstat: not a
// symlink), ours, and writable by nobody else. Otherwise another user could
// rename our socket away and put their own in its place, or make the path
// lead elsewhere.
vdev::Status checkPrivateDir(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return vdev::errnoError("lstat " + dir);
  if (S_ISLNK(st.st_mode)) return Error{EPERM, dir + " is a symbolic link, not a directory"};
  if (!S_ISDIR(st.st_mode)) return Error{ENOTDIR, dir + " is not a directory"};
  if (st.st_uid != ::geteuid())
    return Error{EPERM, dir + " is owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
                            std::to_string(::geteuid()) + " (vdevd)"};
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return Error{EPERM, dir + " is writable by its group or by others (mode " +
                            [&] {
                              char b[8];
                              std::snprintf(b, sizeof b, "%04o", unsigned(st.st_mode & 07777));
                              return std::string(b);
                            }() +
                            "): anyone there could replace the socket"};
  return {};
}

std::string groupLabel(gid_t g) {
  std::vector<char> buf(4096);
  group gr, *res = nullptr;
  if (getgrgid_r(g, &gr, buf.data(), buf.size(), &res) == 0 && res)
    return std::string(res->gr_name) + " (gid " + std::to_string(g) + ")";
  return "gid " + std::to_string(g);
}

std::vector<gid_t> procGroups(pid_t pid, bool& ok) {
  ok = false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  ok = text.find("\nGroups:") != std::string::npos;
  return parseProcStatusGroups(text);
}

std::vector<gid_t> dbGroups(uid_t uid, gid_t gid) {
  std::vector<char> buf(16384);
  passwd pw, *res = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) != 0 || !res) return {};
  int n = 64;
  std::vector<gid_t> g(static_cast<size_t>(n));
  if (getgrouplist(res->pw_name, gid, g.data(), &n) < 0) {
    g.resize(static_cast<size_t>(n));
    if (getgrouplist(res->pw_name, gid, g.data(), &n) < 0) return {};
  }
  g.resize(static_cast<size_t>(n));
  return g;
}

}  // namespace

// ------------------------------------------------------------ credentials

std::vector<gid_t> parseProcStatusGroups(std::string_view status) {
  std::vector<gid_t> out;
  size_t pos = status.rfind("Groups:", 0) == 0 ? 0 : status.find("\nGroups:");
  if (pos == std::string_view::npos) return out;
  if (status[pos] == '\n') ++pos;
  pos += 7;  // "Groups:"
  size_t end = status.find('\n', pos);
  std::string_view line = status.substr(pos, end == std::string_view::npos ? end : end - pos);
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) {
      unsigned long v = 0;
      auto [p, ec] = std::from_chars(line.data() + i, line.data() + j, v);
      if (ec == std::errc() && p == line.data() + j && v <= UINT32_MAX)
        out.push_back(static_cast<gid_t>(v));
    }
    i = j;
  }
  return out;
}

Result<PeerCred> peerCred(int fd) {
  ucred uc{};
  socklen_t len = sizeof uc;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0)
    return vdev::errnoError("getsockopt SO_PEERCRED");
  PeerCred p;
  p.pid = uc.pid;
  p.uid = uc.uid;
  p.gid = uc.gid;
  // The groups the peer had when it connected, from the kernel.
  std::vector<gid_t> g(64);
  socklen_t glen = static_cast<socklen_t>(g.size() * sizeof(gid_t));
  int rc = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g.data(), &glen);
  if (rc != 0 && errno == ERANGE) {
    g.resize(glen / sizeof(gid_t));
    rc = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g.data(), &glen);
  }
  if (rc == 0) {
    g.resize(glen / sizeof(gid_t));
    p.groups = std::move(g);
    return p;
  }
  bool ok = false;
  if (p.pid > 0) p.groups = procGroups(p.pid, ok);
  if (!ok) p.groups = dbGroups(p.uid, p.gid);
  return p;
}

bool isAuthorized(const PeerCred& peer, std::optional<gid_t> group) {
  if (peer.uid == 0) return true;
  if (!group) return false;
  if (peer.gid == *group) return true;
  for (gid_t g : peer.groups)
    if (g == *group) return true;
  return false;
}

Result<gid_t> groupByName(const std::string& name) {
  std::vector<char> buf(4096);
  for (;;) {
    group gr, *res = nullptr;
    int rc = getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &res);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc != 0) return vdev::makeError(rc, "getgrnam_r " + name);
    if (!res) return Error{ENOENT, "no group named \"" + name + "\""};
    return res->gr_gid;
  }
}

// ----------------------------------------------------------------- server

ControlServer::ControlServer(const ServerConfig& config, ControlHandler& handler)
    : cfg_(config), handler_(handler), rx_(kMaxMessageSize) {}

Result<std::unique_ptr<ControlServer>> ControlServer::create(const ServerConfig& config,
                                                             ControlHandler& handler) {
  auto addr = unixAddr(config.path);
  if (!addr) return addr.error();
  const std::string& path = config.path;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (slash != std::string::npos && slash > 0)
    if (auto s = makeDirs(dir, config.dir_mode); !s) return s.error();
  if (auto s = checkPrivateDir(dir); !s)
    return Error{s.error().err, "control socket directory: " + s.error().what};

  // An existing file: a live daemon's socket (refuse), a stale one (remove),
  // or something else (refuse: never delete what is not a socket).
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Error{EEXIST, path + " exists and is not a socket"};
    vdev::FileDesc probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!probe.valid()) return vdev::errnoError("socket");
    int rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
    // EAGAIN: backlog full; EPROTOTYPE: a live socket of another type.
    if (rc == 0 || errno == EAGAIN || errno == EINPROGRESS || errno == EPROTOTYPE)
      return Error{EADDRINUSE, "another daemon is listening on " + path};
    if (errno != ECONNREFUSED) return vdev::errnoError("connect " + path);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return vdev::errnoError("unlink stale socket " + path);
  } else if (errno != ENOENT) {
    return vdev::errnoError("lstat " + path);
  }

  std::unique_ptr<ControlServer> srv(new ControlServer(config, handler));
  srv->spare_ = vdev::FileDesc(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!srv->spare_.valid()) return vdev::errnoError("open /dev/null");
  srv->listen_ =
      vdev::FileDesc(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!srv->listen_.valid()) return vdev::errnoError("socket");

  // Bound in a private directory (0700, made here, inside a directory that
  // only we can write), where group and mode are set by path without anyone
  // being able to swap the file for a symlink; then renamed into place.
  // Until listen() a connect fails (ECONNREFUSED), so the permissions are
  // in place before anyone can talk to us.
  std::string tmpl = dir + "/.vdevd-XXXXXX";
  if (!::mkdtemp(tmpl.data())) return vdev::errnoError("mkdtemp " + tmpl);
  const std::string tmpDir = tmpl;
  vdev::FileDesc dfd(::open(tmpDir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  auto cleanup = [&] {
    if (dfd.valid()) ::unlinkat(dfd.get(), "s", 0);
    ::rmdir(tmpDir.c_str());
  };
  auto fail = [&](Error e) {
    cleanup();
    return e;
  };
  if (!dfd.valid()) return fail(vdev::errnoError("open " + tmpDir));
  // Bound through the directory's fd: a short path, whatever the length of
  // `path` (sun_path holds 107 bytes).
  auto tmpAddr = unixAddr("/proc/self/fd/" + std::to_string(dfd.get()) + "/s");
  if (!tmpAddr) return fail(tmpAddr.error());
  if (::bind(srv->listen_.get(), reinterpret_cast<const sockaddr*>(&*tmpAddr), sizeof(*tmpAddr)) != 0)
    return fail(vdev::errnoError("bind " + path));
  if (config.group && ::fchownat(dfd.get(), "s", static_cast<uid_t>(-1), *config.group, AT_SYMLINK_NOFOLLOW) != 0)
    return fail(vdev::errnoError("chown " + path + " to " + groupLabel(*config.group)));
  if (::fchmodat(dfd.get(), "s", config.mode, 0) != 0) return fail(vdev::errnoError("chmod " + path));
  if (::renameat(dfd.get(), "s", AT_FDCWD, path.c_str()) != 0)
    return fail(vdev::errnoError("rename the socket to " + path));
  ::rmdir(tmpDir.c_str());
  // From here the destructor removes the file.
  if (::lstat(path.c_str(), &st) != 0) return vdev::errnoError("lstat " + path);
  srv->sock_dev_ = st.st_dev;
  srv->sock_ino_ = st.st_ino;
  if (::listen(srv->listen_.get(), 64) != 0) return vdev::errnoError("listen " + path);

  srv->epoll_ = vdev::FileDesc(::epoll_create1(EPOLL_CLOEXEC));
  if (!srv->epoll_.valid()) return vdev::errnoError("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (::epoll_ctl(srv->epoll_.get(), EPOLL_CTL_ADD, srv->listen_.get(), &ev) != 0)
    return vdev::errnoError("epoll_ctl");
  srv->rearm_timer_ = vdev::FileDesc(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!srv->rearm_timer_.valid()) return vdev::errnoError("timerfd_create");
  ev.data.u64 = kRearmTimerId;
  if (::epoll_ctl(srv->epoll_.get(), EPOLL_CTL_ADD, srv->rearm_timer_.get(), &ev) != 0)
    return vdev::errnoError("epoll_ctl");
  // Idle and stalled clients are looked at a few times per timeout.
  srv->sweep_timer_ = vdev::FileDesc(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!srv->sweep_timer_.valid()) return vdev::errnoError("timerfd_create");
  const auto shortest = std::min(config.idle_timeout, config.stall_timeout);
  const auto every = std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(20),
                                                          std::chrono::milliseconds(1000));
  itimerspec it{};
  it.it_interval.tv_sec = every.count() / 1000;
  it.it_interval.tv_nsec = (every.count() % 1000) * 1000000;
  it.it_value = it.it_interval;
  if (::timerfd_settime(srv->sweep_timer_.get(), 0, &it, nullptr) != 0)
    return vdev::errnoError("timerfd_settime");
  ev.data.u64 = kSweepTimerId;
  if (::epoll_ctl(srv->epoll_.get(), EPOLL_CTL_ADD, srv->sweep_timer_.get(), &ev) != 0)
    return vdev::errnoError("epoll_ctl");
  return srv;
}

ControlServer::~ControlServer() {
  clients_.clear();
  if (listen_.valid()) {
    // Only our own socket file: a successor may already have replaced it.
    struct stat st;
    if (::lstat(cfg_.path.c_str(), &st) == 0 && st.st_dev == sock_dev_ && st.st_ino == sock_ino_)
      ::unlink(cfg_.path.c_str());
  }
}

void ControlServer::log(std::string_view msg) const {
  if (cfg_.log) cfg_.log(msg);
}

void ControlServer::rearmListener() {
  if (listening_) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_.get(), &ev) == 0) listening_ = true;
}

void ControlServer::processEvents() {
  rearmListener();
  epoll_event evs[64];
  int n = ::epoll_wait(epoll_.get(), evs, 64, 0);
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 == 0) {
      acceptAll();
    } else if (evs[i].data.u64 == kSweepTimerId) {
      uint64_t expirations;
      (void)!::read(sweep_timer_.get(), &expirations, sizeof expirations);
      sweep();
    } else if (evs[i].data.u64 == kRearmTimerId) {
      uint64_t expirations;
      (void)!::read(rearm_timer_.get(), &expirations, sizeof expirations);
      rearmListener();
    } else {
      onClientEvent(evs[i].data.u64, evs[i].events);
    }
  }
}

void ControlServer::acceptAll() {
  for (;;) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of fds: a pending connection keeps the (level-triggered)
        // listener readable and would spin the control thread. Refuse it
        // with the spare fd: free it, accept, close, take it back.
        // (accept4 allocates the fd first: EMFILE even with an empty backlog.)
        int c = -1, err = errno;
        if (spare_.valid()) {
          spare_.reset();
          c = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
          err = errno;
          if (c >= 0) ::close(c);
          spare_ = vdev::FileDesc(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        }
        if (c >= 0) {
          log("control socket: out of file descriptors, connection refused");
          continue;
        }
        if (err == EAGAIN || err == EWOULDBLOCK) return;  // nothing pending
        // Even that failed: stop listening for a second rather than spin
        // (re-armed by the timer, the next processEvents() or a client leaving).
        log("control socket: out of file descriptors, not accepting for now");
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listen_.get(), nullptr);
        listening_ = false;
        itimerspec in{};
        in.it_value.tv_sec = 1;
        ::timerfd_settime(rearm_timer_.get(), 0, &in, nullptr);
        return;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        log(std::string("control socket: accept: ") + std::strerror(errno));
      return;
    }
    vdev::FileDesc f(fd);
    // Credentials at once: a connection that may not talk to us holds no
    // slot, and nobody's connections can take root's.
    auto cred = peerCred(fd);
    if (!cred) {
      log("control socket: " + cred.error().message());
      continue;
    }
    if (const std::string why = refusal(*cred); !why.empty()) {
      // seq 0: a connection-level error the client takes as its answer.
      const int err = isAuthorized(*cred, cfg_.group) ? EBUSY : EPERM;
      auto e = encodeError(MsgHeader{}, err, why);
      (void)!::send(fd, e.data(), e.size(), kSendFlags);
      log("control client pid " + std::to_string(cred->pid) + " uid " + std::to_string(cred->uid) +
          ": connection refused: " + why);
      continue;
    }
    const uint64_t id = next_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      log(std::string("control socket: epoll_ctl: ") + std::strerror(errno));
      continue;
    }
    Client& c = clients_[id];
    c.id = id;
    c.fd = std::move(f);
    c.cred = std::move(*cred);
    c.cred.conn = id;
    c.events = EPOLLIN;
    c.last_progress = Clock::now();
    per_uid_[c.cred.uid]++;
    num_clients_.store(clients_.size(), std::memory_order_relaxed);
  }
}

std::string ControlServer::refusal(const PeerCred& cred) const {
  if (!isAuthorized(cred, cfg_.group)) {
    std::string why = "permission denied: uid " + std::to_string(cred.uid) + " is not root";
    why += cfg_.group ? " and not in group " + groupLabel(*cfg_.group) : " (only root may)";
    return why;
  }
  if (clients_.size() >= cfg_.max_clients)
    return "too many control clients (" + std::to_string(cfg_.max_clients) + ")";
  if (cred.uid == 0) return "";
  // Everyone but root shares what root's reserve leaves, and each uid has
  // its own cap: members cannot lock root (or one another) out.
  const size_t others = clients_.size() - [&] {
    auto it = per_uid_.find(0);
    return it == per_uid_.end() ? size_t(0) : it->second;
  }();
  const size_t shared = cfg_.max_clients > cfg_.root_reserve ? cfg_.max_clients - cfg_.root_reserve : 0;
  if (others >= shared)
    return "too many control clients (" + std::to_string(shared) + " for users other than root)";
  auto it = per_uid_.find(cred.uid);
  if (it != per_uid_.end() && it->second >= cfg_.max_clients_per_uid)
    return "too many control clients (" + std::to_string(cfg_.max_clients_per_uid) + " per uid) for uid " +
           std::to_string(cred.uid);
  return "";
}

void ControlServer::sweep() {
  const auto now = Clock::now();
  std::vector<std::pair<uint64_t, std::string>> doomed;
  for (const auto& [id, c] : clients_) {
    const auto quiet = now - c.last_progress;
    if (!c.out.empty() && quiet >= cfg_.stall_timeout)
      doomed.emplace_back(id, "does not read its replies (nothing read for " +
                                  std::to_string(cfg_.stall_timeout.count()) + " ms)");
    else if (c.out.empty() && quiet >= cfg_.idle_timeout)
      doomed.emplace_back(id, "idle (no request for " + std::to_string(cfg_.idle_timeout.count()) + " ms)");
  }
  for (const auto& [id, why] : doomed) drop(id, why);
}

void ControlServer::onClientEvent(uint64_t id, uint32_t events) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;  // dropped earlier in this batch
  Client& c = it->second;
  if (events & EPOLLERR) return drop(id, "socket error");
  if ((events & EPOLLOUT) && !flush(c)) return;
  if (events & EPOLLIN) {
    if (!readRequests(c)) return;
  } else if (events & EPOLLHUP) {
    return drop(id, "hung up");
  }
  updateInterest(c);
}

bool ControlServer::readRequests(Client& c) {
  const uint64_t id = c.id;
  for (unsigned i = 0; i < cfg_.max_requests_per_event && c.out.empty(); ++i) {
    iovec iov{rx_.data(), rx_.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    // MSG_TRUNC: the real length of an oversized datagram.
    ssize_t n = ::recvmsg(c.fd.get(), &mh, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      drop(id, std::string("recv: ") + std::strerror(errno));
      return false;
    }
    if (n == 0) {
      drop(id, "closed");
      return false;
    }
    c.last_progress = Clock::now();
    const bool truncated = (mh.msg_flags & MSG_TRUNC) || static_cast<size_t>(n) > rx_.size();
    const size_t got = std::min(static_cast<size_t>(n), rx_.size());
    bool keep = true;
    if (truncated) {
      keep = false;
      if (!enqueue(c, encodeError(peekHeader({rx_.data(), got}), EMSGSIZE,
                                  "message of " + std::to_string(n) + " bytes exceeds the " +
                                      std::to_string(kMaxMessageSize) + "-byte limit")))
        return false;
    } else if (!handleDatagram(c, {rx_.data(), got}, keep)) {
      return false;
    }
    if (!flush(c)) return false;
    if (!keep) {
      // Best effort: the error went out with the flush above if there was room.
      drop(id, truncated ? "oversized message" : "malformed or unauthorised request");
      return false;
    }
  }
  return true;
}

// Answers one datagram. keep=false: close the connection after the answer.
// Returns false if the client was dropped.
bool ControlServer::handleDatagram(Client& c, std::span<const uint8_t> dg, bool& keep) {
  auto h = decodeHeader(dg);
  if (!h) {
    log("control client pid " + std::to_string(c.cred.pid) + ": " + h.error().what);
    keep = false;
    return enqueue(c, encodeError(peekHeader(dg), h.error().err, h.error().what));
  }
  // Authorised at accept (refusal()); checked again in case the
  // configuration ever allowed a connection through that it should not.
  if (!isAuthorized(c.cred, cfg_.group)) {
    keep = false;
    return enqueue(c, encodeError(*h, EPERM, refusal(c.cred)));
  }
  auto req = decodeRequest(dg);
  if (!req) return enqueue(c, encodeError(*h, req.error().err, req.error().what));

  Reply reply;
  try {
    reply = handler_.handle(*req, c.cred);
  } catch (const std::exception& e) {
    reply = ErrorReply{EIO, std::string("internal error: ") + e.what()};
  }
  auto out = encodeReply(*req, reply);
  if (!out) return enqueue(c, encodeError(*h, out.error().err, out.error().what));
  for (auto& d : *out)
    if (!enqueue(c, std::move(d))) return false;
  return true;
}

bool ControlServer::enqueue(Client& c, std::vector<uint8_t> dg) {
  if (dg.empty()) {  // encoding ran out of memory
    drop(c.id, "out of memory");
    return false;
  }
  if (c.out.empty()) {
    // Straight into the socket while it has room; SEQPACKET sends whole or not at all.
    ssize_t r = ::send(c.fd.get(), dg.data(), dg.size(), kSendFlags);
    if (r == static_cast<ssize_t>(dg.size())) return true;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      drop(c.id, std::string("send: ") + std::strerror(errno));
      return false;
    }
  }
  // No byte limit: one reply is queued at most (no request is read while
  // output is pending), so a dump of any size goes out whole; a client that
  // stops reading it is dropped by sweep() after stall_timeout.
  c.out_bytes += dg.size();
  c.out.push_back(std::move(dg));
  return true;
}

bool ControlServer::flush(Client& c) {
  while (!c.out.empty()) {
    const auto& d = c.out.front();
    ssize_t r = ::send(c.fd.get(), d.data(), d.size(), kSendFlags);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      drop(c.id, std::string("send: ") + std::strerror(errno));
      return false;
    }
    c.out_bytes -= d.size();
    c.out.pop_front();
    c.last_progress = Clock::now();
  }
  return true;
}

void ControlServer::updateInterest(Client& c) {
  // Output pending: wait for room and read nothing (one reply in flight);
  // else wait for requests. Level-triggered, so nothing is missed.
  const uint32_t want = c.out.empty() ? EPOLLIN : EPOLLOUT;
  if (want == c.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev) != 0)
    return drop(c.id, std::string("epoll_ctl: ") + std::strerror(errno));
  c.events = want;
}

void ControlServer::drop(uint64_t id, std::string_view why) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  if (why != "closed")
    log("control client pid " + std::to_string(it->second.cred.pid) + " uid " +
        std::to_string(it->second.cred.uid) + " disconnected: " + std::string(why));
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
  if (auto u = per_uid_.find(it->second.cred.uid); u != per_uid_.end() && --u->second == 0) per_uid_.erase(u);
  clients_.erase(it);
  handler_.disconnected(id);
  num_clients_.store(clients_.size(), std::memory_order_relaxed);
  rearmListener();  // an fd is free again
}

}  // namespace vdev::proto
