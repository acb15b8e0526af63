// The command-line layer every vdev tool shares: a table of options parsed
// with getopt_long, the tool's hand-written --help text, --version, and one
// form and exit status for every usage error.
//
//   vdev::cli::Parser p({"vdevd", kHelp}, {
//       {"port", 'p', cli::Arg::kRequired, [&](std::string_view v) { ports.emplace_back(v); }},
//       {"frames", 0, cli::Arg::kRequired,
//        [&](std::string_view v) { cfg.frames = cli::u32(v, 512, 4194304, "--frames must be 512..4194304"); }},
//       {"force", 'f', cli::Arg::kNone, [&](std::string_view) { cfg.force = true; }},
//   });
//   p.parseOrExit(argc, argv, [&](const auto&) { if (ports.empty()) cli::fail("no ports"); });
//
// Every tool gets -h/--help (its text on stdout, exit 0) and -V/--version
// ("TOOL VERSION" on stdout, exit 0); a table must not use those names or
// letters. A usage error -- an unknown option, a missing or unexpected
// value, an operand the tool takes none of, or fail() in a handler or the
// check -- prints
//   TOOL: MESSAGE
//   Try 'TOOL --help'.
// to stderr, and the exit status is kExitUsage (2). Handlers run in
// command-line order, so the first bad option is the one reported.
//
// Not thread safe: getopt_long keeps global state (optind, optarg). Control
// plane only; parse() allocates and uses exceptions internally.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/mac.h"

namespace vdev::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;   // the tool's own failures, and stdout not writable
inline constexpr int kExitUsage = 2;

enum class Arg { kNone, kRequired };

// Called with the option's value ("" for an option without one). A bad
// value is reported with fail().
using Handler = std::function<void(std::string_view value)>;

struct Option {
  const char* name;  // the long name, without "--"
  char letter;       // the short option, or 0 for none
  Arg arg;
  Handler handler;
};

enum class Operands {
  kNone,     // an operand is a usage error: "unexpected argument 'x'"
  kAny,      // operands may stand anywhere among the options (GNU getopt permutes)
  kCommand,  // options end at the first operand: "TOOL [OPTIONS] OBJECT ARGS..." --
             // what follows it, options included, is the command's own
};

struct Tool {
  std::string name;  // "vdevd": the prefix of every message
  std::string help;  // the man-page-style text --help prints
  Operands operands = Operands::kNone;
};

// What fail() throws; the parser catches it and reports the message.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Raises a usage error from a handler or from parse()'s check. Only there:
// elsewhere nothing catches it (use Parser::usageError()).
[[noreturn]] void fail(const std::string& message);

// A handler's value as a strict decimal number inside [lo, hi]
// (base/parse.h), a MAC address (base/mac.h), or fail(message).
uint32_t u32(std::string_view value, uint32_t lo, uint32_t hi, const std::string& message);
uint64_t u64(std::string_view value, uint64_t lo, uint64_t hi, const std::string& message);
double number(std::string_view value, double lo, double hi, const std::string& message);
// A rate: a number, or one with k, M or G (10^3, 10^6, 10^9; parseRate).
uint64_t rate(std::string_view value, const std::string& message);
Mac mac(std::string_view value, const std::string& message);

class Parser {
 public:
  // Aborts on a table that cannot work (a name or letter given twice, or
  // help/version/h/V taken): a programming error, seen at the first run.
  Parser(Tool tool, std::vector<Option> options);

  struct Outcome {
    // Set when the tool is to exit now with this status: kExitOk after
    // --help or --version, kExitUsage after a usage error (already printed),
    // kExitFail when the help text could not be written.
    std::optional<int> exit;
    std::vector<std::string> operands;  // in order
  };
  using Check = std::function<void(const std::vector<std::string>& operands)>;

  // Parses argv[1..argc) (GNU getopt_long permutes argv in place). `check`
  // runs after every option has been handled, with the operands, and may
  // fail(): checks that need more than one option ("--mac needs --create").
  Outcome parse(int argc, char** argv, const Check& check = {}, FILE* out = stdout,
                FILE* err = stderr) const;
  // parse(), exiting with Outcome::exit when it is set.
  std::vector<std::string> parseOrExit(int argc, char** argv, const Check& check = {}) const;

  // Prints the usage error to `err`; returns kExitUsage.
  int report(const std::string& message, FILE* err = stderr) const;
  // report(), then exit(kExitUsage): for usage errors found after parse().
  [[noreturn]] void usageError(const std::string& message) const;

  const Tool& tool() const { return tool_; }

 private:
  Tool tool_;
  std::vector<Option> options_;
};

}  // namespace vdev::cli
