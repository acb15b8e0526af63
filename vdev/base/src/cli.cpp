// The shared command-line layer: see base/cli.h.
#include "base/cli.h"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/parse.h"
#include "base/version.h"

namespace vdev::cli {

namespace {

// getopt_long's value for the long form of options_[i]; short forms return
// their letter, which is always below this.
constexpr int kLongBase = 256;

[[noreturn]] void badTable(const Tool& tool, const std::string& why) {
  std::fprintf(stderr, "%s: BUG: option table: %s\n", tool.name.c_str(), why.c_str());
  std::abort();
}

// Writes text to `out` and flushes it; false (errno set) if that failed,
// e.g. --help piped into a closed reader.
bool writeAll(FILE* out, const std::string& text) {
  return std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
}

}  // namespace

void fail(const std::string& message) { throw UsageError(message); }

uint32_t u32(std::string_view value, uint32_t lo, uint32_t hi, const std::string& message) {
  const auto v = parseU32(value, lo, hi);
  if (!v) fail(message);
  return *v;
}

uint64_t u64(std::string_view value, uint64_t lo, uint64_t hi, const std::string& message) {
  const auto v = parseU64(value, lo, hi);
  if (!v) fail(message);
  return *v;
}

double number(std::string_view value, double lo, double hi, const std::string& message) {
  const auto v = parseDouble(value, lo, hi);
  if (!v) fail(message);
  return *v;
}

uint64_t rate(std::string_view value, const std::string& message) {
  const auto v = parseRate(value);
  if (!v) fail(message);
  return *v;
}

Mac mac(std::string_view value, const std::string& message) {
  const auto m = parseMac(value);
  if (!m) fail(message);
  return *m;
}

Parser::Parser(Tool tool, std::vector<Option> options) : tool_(std::move(tool)) {
  options.push_back({"help", 'h', Arg::kNone, nullptr});
  options.push_back({"version", 'V', Arg::kNone, nullptr});
  for (size_t i = 0; i < options.size(); ++i) {
    const Option& o = options[i];
    if (!o.name || !*o.name) badTable(tool_, "an option without a long name");
    if (i + 2 < options.size() && !o.handler) badTable(tool_, std::string("--") + o.name + " has no handler");
    for (size_t j = 0; j < i; ++j) {
      if (std::strcmp(o.name, options[j].name) == 0) badTable(tool_, std::string("--") + o.name + " twice");
      if (o.letter && o.letter == options[j].letter)
        badTable(tool_, std::string("-") + o.letter + " twice");
    }
  }
  options_ = std::move(options);
}

int Parser::report(const std::string& message, FILE* err) const {
  std::fprintf(err, "%s: %s\nTry '%s --help'.\n", tool_.name.c_str(), message.c_str(), tool_.name.c_str());
  std::fflush(err);
  return kExitUsage;
}

void Parser::usageError(const std::string& message) const {
  std::exit(report(message));
}

Parser::Outcome Parser::parse(int argc, char** argv, const Check& check, FILE* out, FILE* err) const {
  // ':' first: a missing value is reported as ':' rather than '?'; '+'
  // before it stops at the first operand (POSIX order).
  std::string shorts = tool_.operands == Operands::kCommand ? "+:" : ":";
  std::vector<option> longs;
  for (size_t i = 0; i < options_.size(); ++i) {
    const Option& o = options_[i];
    const int has = o.arg == Arg::kRequired ? required_argument : no_argument;
    longs.push_back({o.name, has, nullptr, kLongBase + int(i)});
    if (o.letter) {
      shorts += o.letter;
      if (o.arg == Arg::kRequired) shorts += ':';
    }
  }
  longs.push_back({nullptr, 0, nullptr, 0});
  const size_t help = options_.size() - 2, version = options_.size() - 1;

  Outcome result;
  // 0, not 1: glibc then starts afresh (a second parse in one process, as
  // the tests do) and re-reads the '+' in `shorts`.
  optind = 0;
  opterr = 0;  // the messages are ours
  try {
    int c;
    while ((c = getopt_long(argc, argv, shorts.c_str(), longs.data(), nullptr)) != -1) {
      // The option as the user spelled it, for messages. optopt is the
      // letter of a bad short option, kLongBase + i for a long option that
      // was recognised, 0 for one that was not (argv[optind - 1] is it).
      const auto spelled = [&]() -> std::string {
        if (optopt >= kLongBase) return std::string("--") + options_[size_t(optopt - kLongBase)].name;
        if (optopt > 0) return std::string("-") + char(optopt);
        std::string a = argv[optind - 1];
        return a.substr(0, a.find('='));
      };
      if (c == ':') fail("option '" + spelled() + "' needs a value");
      if (c == '?') {
        if (optopt >= kLongBase) fail("option '" + spelled() + "' takes no value");
        fail("unknown option '" + spelled() + "'");
      }
      size_t i = 0;
      if (c >= kLongBase) {
        i = size_t(c - kLongBase);
      } else {
        while (options_[i].letter != c) ++i;  // getopt only returns letters of `shorts`
      }
      if (i == help || i == version) {
        const std::string text =
            i == help ? tool_.help : tool_.name + " " + VDEV_VERSION + "\n";
        if (!writeAll(out, text)) {
          std::fprintf(err, "%s: cannot write output: %s\n", tool_.name.c_str(), std::strerror(errno));
          result.exit = kExitFail;
        } else {
          result.exit = kExitOk;
        }
        return result;
      }
      options_[i].handler(optarg ? std::string_view(optarg) : std::string_view());
    }
    result.operands.assign(argv + optind, argv + argc);
    if (tool_.operands == Operands::kNone && !result.operands.empty())
      fail("unexpected argument '" + result.operands.front() + "'");
    if (check) check(result.operands);
  } catch (const UsageError& e) {
    result.operands.clear();
    result.exit = report(e.what(), err);
  }
  return result;
}

std::vector<std::string> Parser::parseOrExit(int argc, char** argv, const Check& check) const {
  Outcome r = parse(argc, argv, check);
  if (r.exit) std::exit(*r.exit);
  return std::move(r.operands);
}

}  // namespace vdev::cli
