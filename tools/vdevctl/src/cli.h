// vdevctl's command layer: the command table, argument parsing helpers with
// uniform usage errors, and the lazily opened connection to vdevd. The
// global options before OBJECT go through base/cli.h, as every tool's do. Every command is `int run(Context&, Args&)`: it parses
// all of its arguments first (so bad usage never needs the daemon), then asks
// the context for the client.
//
// Exit status: 0 success, 1 the daemon or the operation failed (including
// "cannot connect"), 2 bad usage. Errors go to stderr as "vdevctl: MESSAGE".
#pragma once

#include <sys/types.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/cli.h"
#include "proto/client.h"

namespace vdev::ctl {

inline constexpr int kExitOk = vdev::cli::kExitOk;
inline constexpr int kExitFail = vdev::cli::kExitFail;
inline constexpr int kExitUsage = vdev::cli::kExitUsage;

struct GlobalOptions {
  bool json = false;    // -j: JSON output
  bool pretty = false;  // -p: indented JSON
  bool stats = false;   // -s: statistics with `port show`
  std::string socket = vdev::proto::kDefaultSocketPath;
};

class Args;
class Context;
using Handler = int (*)(Context&, Args&);

// One row of the command table. `verb` is null for single-word objects
// (stats, monitor, info). `aliases`: other spellings of the verb, space
// separated ("list ls").
struct Command {
  const char* object;
  const char* verb;
  const char* aliases;
  const char* synopsis;  // one line, after "vdevctl [OPTIONS] "
  const char* summary;   // a few words for the object's command list
  const char* help;      // the man-page text of `vdevctl OBJECT VERB --help`
  Handler run;
};

std::span<const Command> commandTable();  // commands.cpp
const char* objectSummary(std::string_view object);
// The default verb of an object given without one ("port" -> "show").
const char* defaultVerb(std::string_view object);
std::string toolHelp();                           // vdevctl --help
std::string objectHelp(std::string_view object);  // vdevctl port help

// The arguments after OBJECT [VERB], consumed left to right. Usage errors
// print "vdevctl: OBJECT VERB: message" and a hint to stderr and exit 2.
class Args {
 public:
  Args(const Command& cmd, std::vector<std::string> argv) : cmd_(cmd), argv_(std::move(argv)) {}

  bool empty() const { return pos_ >= argv_.size(); }
  const std::string& peek() const { return argv_[pos_]; }
  // The next argument; a usage error naming `what` if there is none.
  std::string next(std::string_view what);
  // Consumes the next argument if it equals `word`.
  bool accept(std::string_view word);

  // The value after `keyword`, parsed; usage errors say which keyword.
  uint32_t u32(std::string_view keyword, uint32_t lo, uint32_t hi);
  // A limit: a number 0..hi of `unit` ("frames/s"), or "off" (0, no limit).
  uint64_t limit(std::string_view keyword, uint64_t hi, std::string_view unit);
  // Bits/s: a number, or one with k, M or G (base/parse.h parseRate), or
  // "off" (0, no limit).
  uint64_t rate(std::string_view keyword);
  double seconds(std::string_view keyword, double lo, double hi);
  vdev::proto::Mac mac(std::string_view keyword);  // unicast, non-zero
  std::string ifname(std::string_view what);  // 1..15 chars, a valid interface name
  uid_t user(std::string_view keyword);       // name (getpwnam) or number
  gid_t group(std::string_view keyword);      // name (getgrnam) or number

  [[noreturn]] void usage(const std::string& msg) const;
  [[noreturn]] void unknown(const std::string& arg) const;  // "unknown argument 'x'"
  // Usage error unless every argument was consumed.
  void done() const;

  const Command& command() const { return cmd_; }
  std::string commandName() const;  // "port add", "stats"

 private:
  const Command& cmd_;
  std::vector<std::string> argv_;
  size_t pos_ = 0;
};

// Global options and the connection, opened on first use.
class Context {
 public:
  explicit Context(GlobalOptions opt) : opt_(std::move(opt)) {}
  const GlobalOptions& opt() const { return opt_; }

  // Connected client. If vdevd cannot be reached, prints why (naming the
  // socket) and exits 1.
  vdev::proto::ControlClient& client();
  // A new connection in place of the current one (vdevd closes connections
  // that stay idle longer than its idle timeout; `monitor` with a long
  // interval connects again).
  vdev::proto::ControlClient& reconnect();

  // Prints "vdevctl: " + e.message() (the daemon's message verbatim, then
  // strerror) to stderr; returns kExitFail.
  static int fail(const vdev::Error& e);
  // Writes text to stdout and flushes; kExitFail (with a message) if stdout
  // cannot be written.
  static int print(const std::string& text);

 private:
  GlobalOptions opt_;
  std::optional<vdev::proto::ControlClient> client_;
};

// Runs vdevctl; returns the exit status.
int runCli(int argc, char** argv);

}  // namespace vdev::ctl
