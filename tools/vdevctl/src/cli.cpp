#include "cli.h"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/cli.h"
#include "base/parse.h"
#include "output.h"

namespace vdev::ctl {

namespace {

bool hasWord(const char* list, std::string_view w) {
  if (!list) return false;
  std::string_view l(list);
  while (!l.empty()) {
    const size_t sp = l.find(' ');
    if (l.substr(0, sp) == w) return true;
    if (sp == std::string_view::npos) break;
    l.remove_prefix(sp + 1);
  }
  return false;
}

bool isHelp(std::string_view a) { return a == "help" || a == "--help" || a == "-h"; }

}  // namespace

// ---------------------------------------------------------------- Args

std::string Args::commandName() const {
  return cmd_.verb ? std::string(cmd_.object) + " " + cmd_.verb : std::string(cmd_.object);
}

void Args::usage(const std::string& msg) const {
  std::fprintf(stderr, "vdevctl: %s: %s\nTry 'vdevctl %s --help'.\n", commandName().c_str(),
               msg.c_str(), commandName().c_str());
  std::exit(kExitUsage);
}

void Args::unknown(const std::string& arg) const { usage("unknown argument '" + arg + "'"); }

void Args::done() const {
  if (!empty()) unknown(peek());
}

std::string Args::next(std::string_view what) {
  if (empty()) usage("missing " + std::string(what));
  return argv_[pos_++];
}

bool Args::accept(std::string_view word) {
  if (empty() || peek() != word) return false;
  ++pos_;
  return true;
}

uint32_t Args::u32(std::string_view keyword, uint32_t lo, uint32_t hi) {
  const std::string k(keyword);
  const std::string s = next("value after '" + k + "'");
  const auto v = vdev::parseU32(s, lo, hi);
  if (!v)
    usage("invalid " + k + " '" + s + "' (expected " + std::to_string(lo) + ".." +
          std::to_string(hi) + ")");
  return uint32_t(*v);
}

uint64_t Args::limit(std::string_view keyword, uint64_t hi, std::string_view unit) {
  const std::string k(keyword);
  const std::string s = next("value after '" + k + "' (" + std::string(unit) + ", or off)");
  if (s == "off") return 0;
  const auto v = vdev::parseU64(s, 0, hi);
  if (!v)
    usage("invalid " + k + " '" + s + "' (" + std::string(unit) + ", 0.." + std::to_string(hi) +
          "; off or 0: no limit)");
  return *v;
}

uint64_t Args::rate(std::string_view keyword) {
  const std::string k(keyword);
  const std::string s = next("value after '" + k + "' (bits/s, or off)");
  if (s == "off") return 0;
  const auto v = vdev::parseRate(s);
  if (!v)
    usage("invalid " + k + " '" + s + "' (bits/s: a number, or one with k, M or G for 10^3, 10^6, 10^9, as in "
          "100M; off or 0: no limit)");
  return *v;
}

double Args::seconds(std::string_view keyword, double lo, double hi) {
  const std::string k(keyword);
  const std::string s = next("value after '" + k + "'");
  const auto v = vdev::parseDouble(s, lo, hi);
  if (!v) usage("invalid " + k + " '" + s + "' (seconds, " + fixed(lo, 3) + ".." + fixed(hi, 3) + ")");
  return *v;
}

vdev::proto::Mac Args::mac(std::string_view keyword) {
  const std::string k(keyword);
  const std::string s = next("MAC address after '" + k + "'");
  const auto m = vdev::parseMac(s);
  if (!m) usage("invalid MAC address '" + s + "' for " + k + " (expected xx:xx:xx:xx:xx:xx)");
  if (vdev::macIsMulticast(*m)) usage(k + " " + s + " is a multicast address (a station needs a unicast one)");
  if (vdev::macIsZero(*m)) usage(k + " 00:00:00:00:00:00 is not an address");
  return *m;
}

std::string Args::ifname(std::string_view what) {
  const std::string s = next(what);
  if (auto st = vdev::proto::validateIfname(s, "IFNAME"); !st) {
    // The library's message names the protocol attribute; say it in CLI terms.
    std::string m = st.error().what;
    const std::string prefix = "attribute IFNAME: ";
    if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
    usage("invalid interface name: " + m);
  }
  return s;
}

// Names first, as chown(1) does: a user literally called "1000" wins over
// uid 1000. A number that is no user's is taken as is (QEMU may run under a
// uid without a passwd entry).
uid_t Args::user(std::string_view keyword) {
  const std::string k(keyword);
  const std::string s = next("user after '" + k + "'");
  errno = 0;
  if (const struct passwd* pw = ::getpwnam(s.c_str())) return pw->pw_uid;
  const int err = errno;
  if (const auto v = vdev::parseU32(s, 0, UINT32_MAX - 1)) return uid_t(*v);
  if (err && err != ENOENT && err != ESRCH && err != EBADF && err != EPERM)
    usage(k + " " + s + ": cannot look up the user: " + std::strerror(err));
  usage(k + " " + s + ": no such user");
}

gid_t Args::group(std::string_view keyword) {
  const std::string k(keyword);
  const std::string s = next("group after '" + k + "'");
  errno = 0;
  if (const struct group* gr = ::getgrnam(s.c_str())) return gr->gr_gid;
  const int err = errno;
  if (const auto v = vdev::parseU32(s, 0, UINT32_MAX - 1)) return gid_t(*v);
  if (err && err != ENOENT && err != ESRCH && err != EBADF && err != EPERM)
    usage(k + " " + s + ": cannot look up the group: " + std::strerror(err));
  usage(k + " " + s + ": no such group");
}

// ---------------------------------------------------------------- Context

vdev::proto::ControlClient& Context::client() {
  if (client_) return *client_;
  auto c = vdev::proto::ControlClient::connect(opt_.socket);
  if (!c) {
    const int err = c.error().err;
    std::string hint;
    if (err == ENOENT || err == ECONNREFUSED)
      hint = " (is vdevd running? -S selects another socket)";
    else if (err == EACCES || err == EPERM)
      hint = " (root, or a member of vdevd's --group, may use it)";
    std::fprintf(stderr, "vdevctl: cannot connect to vdevd at %s: %s%s\n", opt_.socket.c_str(),
                 std::strerror(err), hint.c_str());
    std::exit(kExitFail);
  }
  client_.emplace(std::move(c.value()));
  return *client_;
}

vdev::proto::ControlClient& Context::reconnect() {
  client_.reset();
  return client();
}

int Context::fail(const vdev::Error& e) {
  std::fprintf(stderr, "vdevctl: %s\n", e.message().c_str());
  return kExitFail;
}

int Context::print(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "vdevctl: cannot write output: %s\n", std::strerror(errno));
    return kExitFail;
  }
  return kExitOk;
}

// ---------------------------------------------------------------- main

int runCli(int argc, char** argv) {
  GlobalOptions opt;
  using vdev::cli::Arg;
  // Options end at OBJECT: what follows belongs to the command (Args).
  const vdev::cli::Parser parser({"vdevctl", toolHelp(), vdev::cli::Operands::kCommand}, {
      {"json", 'j', Arg::kNone, [&](std::string_view) { opt.json = true; }},
      {"pretty", 'p', Arg::kNone, [&](std::string_view) { opt.json = opt.pretty = true; }},
      {"stats", 's', Arg::kNone, [&](std::string_view) { opt.stats = true; }},
      {"socket", 'S', Arg::kRequired, [&](std::string_view v) {
         if (v.empty()) vdev::cli::fail("empty socket path");
         opt.socket = v;
       }},
  });
  auto parsed = parser.parse(argc, argv);
  if (parsed.exit) return *parsed.exit;
  const std::vector<std::string>& operands = parsed.operands;
  if (operands.empty()) {
    std::fputs(toolHelp().c_str(), stderr);
    return kExitUsage;
  }
  const auto globalUsage = [&](const std::string& msg) { return parser.report(msg); };
  const std::string& object = operands.front();
  if (isHelp(object)) {
    // `vdevctl help port`: that object's commands.
    if (object == "help" && operands.size() > 1) {
      for (const Command& cmd : commandTable())
        if (operands[1] == cmd.object)
          return Context::print(cmd.verb ? objectHelp(cmd.object) : std::string(cmd.help));
      return globalUsage("unknown object '" + operands[1] + "'");
    }
    return Context::print(toolHelp());
  }

  const auto table = commandTable();
  bool known = false;
  for (const Command& cmd : table) known = known || object == cmd.object;
  if (!known) return globalUsage("unknown object '" + object + "'");

  // Single-word objects: the command is the object itself.
  const Command* chosen = nullptr;
  for (const Command& cmd : table)
    if (object == cmd.object && !cmd.verb) chosen = &cmd;
  std::vector<std::string> rest(operands.begin() + 1, operands.end());
  if (!chosen) {
    std::string verb = rest.empty() ? defaultVerb(object) : rest.front();
    if (!rest.empty()) rest.erase(rest.begin());
    if (isHelp(verb)) return Context::print(objectHelp(object));
    for (const Command& cmd : table)
      if (object == cmd.object && (verb == cmd.verb || hasWord(cmd.aliases, verb))) chosen = &cmd;
    if (!chosen) {
      std::string verbs;
      for (const Command& cmd : table)
        if (object == cmd.object) verbs += std::string(verbs.empty() ? "" : ", ") + cmd.verb;
      std::fprintf(stderr, "vdevctl: %s: unknown command '%s' (%s)\nTry 'vdevctl %s help'.\n",
                   object.c_str(), verb.c_str(), verbs.c_str(), object.c_str());
      return kExitUsage;
    }
  }
  // `vdevctl port add help`, `... --help`, `... -h`; --help/-h anywhere.
  for (size_t i = 0; i < rest.size(); ++i)
    if (rest[i] == "--help" || rest[i] == "-h" || (i == 0 && rest[i] == "help"))
      return Context::print(chosen->help);

  Context ctx(std::move(opt));
  Args args(*chosen, std::move(rest));
  return chosen->run(ctx, args);
}

}  // namespace vdev::ctl
