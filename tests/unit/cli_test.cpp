// base/cli.h: the option layer every tool's main uses -- handlers in order,
// --help and --version, and one form and exit status for usage errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/parse.h"
#include "base/version.h"

namespace vdev::cli {
namespace {

// A FILE* whose contents the test reads back.
class Capture {
 public:
  Capture() : f_(std::tmpfile()) {}
  ~Capture() {
    if (f_) std::fclose(f_);
  }
  FILE* get() { return f_; }
  std::string text() {
    std::fflush(f_);
    std::string s;
    std::rewind(f_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f_)) > 0) s.append(buf, n);
    return s;
  }

 private:
  FILE* f_;
};

// What one parse did: the outcome, stdout, stderr and the handlers' record.
struct Parsed {
  Parser::Outcome outcome;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  // The table of a small tool: a repeatable option with a value, a number,
  // a MAC, a flag, a long-only option.
  Parser makeParser(Operands operands = Operands::kNone) {
    return Parser({"tool", "NAME\n    tool - a test\n", operands},
                  {
                      {"port", 'p', Arg::kRequired, [this](std::string_view v) { ports.emplace_back(v); }},
                      {"batch", 'b', Arg::kRequired,
                       [this](std::string_view v) { batch = u32(v, 1, 256, "--batch must be 1..256"); }},
                      {"mac", 0, Arg::kRequired,
                       [this](std::string_view v) { macs.push_back(mac(v, "invalid MAC '" + std::string(v) + "'")); }},
                      {"force", 'f', Arg::kNone, [this](std::string_view v) {
                         forced++;
                         flagValue = std::string(v);
                       }},
                      {"ratio", 0, Arg::kRequired,
                       [this](std::string_view v) { ratio = number(v, 0, 1, "--ratio must be 0..1"); }},
                      {"rate", 0, Arg::kRequired,
                       [this](std::string_view v) { bps = rate(v, "--rate must be bits/s (100M)"); }},
                  });
  }

  Parsed run(const Parser& p, std::vector<std::string> args, const Parser::Check& check = {}) {
    args.insert(args.begin(), "tool");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    Capture out, err;
    Parsed r;
    r.outcome = p.parse(int(args.size()), argv.data(), check, out.get(), err.get());
    r.out = out.text();
    r.err = err.text();
    return r;
  }

  std::vector<std::string> ports;
  std::vector<Mac> macs;
  uint32_t batch = 0;
  int forced = 0;
  std::string flagValue = "unset";
  double ratio = -1;
  uint64_t bps = 1;
};

TEST_F(CliTest, HandlersRunInOrderWithTheirValues) {
  const Parser p = makeParser();
  const Parsed r = run(p, {"-p", "a", "--port=b", "--port", "c", "-fb64", "--mac", "02:00:00:00:00:0A", "--ratio",
                        "0.25", "--rate", "100M"});
  EXPECT_FALSE(r.outcome.exit) << r.err;
  EXPECT_EQ(ports, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(batch, 64u);
  EXPECT_EQ(forced, 1);
  EXPECT_EQ(flagValue, "");  // a flag's handler gets no value
  ASSERT_EQ(macs.size(), 1u);
  EXPECT_EQ(formatMac(macs[0]), "02:00:00:00:00:0a");
  EXPECT_DOUBLE_EQ(ratio, 0.25);
  EXPECT_EQ(bps, 100000000u);
  EXPECT_TRUE(r.out.empty());
  EXPECT_TRUE(r.err.empty());
}

TEST_F(CliTest, HelpAndVersionGoToStdoutAndExit0) {
  const Parser p = makeParser();
  const Parsed help = run(p, {"--help"});
  ASSERT_TRUE(help.outcome.exit);
  EXPECT_EQ(*help.outcome.exit, kExitOk);
  EXPECT_EQ(help.out, "NAME\n    tool - a test\n");
  EXPECT_TRUE(help.err.empty());
  EXPECT_EQ(run(p, {"-h"}).out, help.out);

  const Parsed version = run(p, {"--version"});
  ASSERT_TRUE(version.outcome.exit);
  EXPECT_EQ(*version.outcome.exit, kExitOk);
  EXPECT_EQ(version.out, std::string("tool ") + VDEV_VERSION + "\n");
  EXPECT_EQ(run(p, {"-V"}).out, version.out);
}

TEST_F(CliTest, UsageErrorsHaveOneFormAndExit2) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"--bogus=1"}, "unknown option '--bogus'"},
      {{"-z"}, "unknown option '-z'"},
      {{"-fz"}, "unknown option '-z'"},
      {{"--port"}, "option '--port' needs a value"},
      {{"-p"}, "option '-p' needs a value"},
      {{"--force=yes"}, "option '--force' takes no value"},
      {{"--batch", "0"}, "--batch must be 1..256"},
      {{"--batch", "257"}, "--batch must be 1..256"},
      {{"--batch", "+1"}, "--batch must be 1..256"},
      {{"-b", "1x"}, "--batch must be 1..256"},
      {{"--mac", "2:0:0:0:0:1"}, "invalid MAC '2:0:0:0:0:1'"},
      {{"--ratio", "nan"}, "--ratio must be 0..1"},
      {{"--ratio", "1.5"}, "--ratio must be 0..1"},
      {{"--rate", "1.5M"}, "--rate must be bits/s (100M)"},
      {{"--rate", ""}, "--rate must be bits/s (100M)"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--port", "a", "stray"}, "unexpected argument 'stray'"},
  };
  const Parser p = makeParser();
  for (const Case& c : cases) {
    const Parsed r = run(p, c.args);
    ASSERT_TRUE(r.outcome.exit) << c.message;
    EXPECT_EQ(*r.outcome.exit, kExitUsage) << c.message;
    EXPECT_EQ(r.err, "tool: " + c.message + "\nTry 'tool --help'.\n");
    EXPECT_TRUE(r.out.empty()) << c.message;
    EXPECT_TRUE(r.outcome.operands.empty()) << c.message;
  }
}

TEST_F(CliTest, TheFirstBadOptionIsReportedAndLaterOnesDoNotRun) {
  const Parser p = makeParser();
  const Parsed r = run(p, {"--port", "a", "--batch", "0", "--port", "b", "--help"});
  ASSERT_TRUE(r.outcome.exit);
  EXPECT_EQ(*r.outcome.exit, kExitUsage);
  EXPECT_EQ(ports, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(r.out.empty()) << "--help after the error is never reached";
}

TEST_F(CliTest, OperandsAnywhereOrOptionsEndingAtTheCommand) {
  // kAny: GNU order, options after operands too.
  const Parsed any = run(makeParser(Operands::kAny), {"send", "-p", "a", "x"});
  EXPECT_FALSE(any.outcome.exit) << any.err;
  EXPECT_EQ(any.outcome.operands, (std::vector<std::string>{"send", "x"}));
  EXPECT_EQ(ports, (std::vector<std::string>{"a"}));

  // kCommand: everything from the first operand on is the command's, even
  // what looks like one of the tool's options.
  ports.clear();
  const Parsed cmd = run(makeParser(Operands::kCommand), {"-p", "a", "port", "-p", "b", "--bogus"});
  EXPECT_FALSE(cmd.outcome.exit) << cmd.err;
  EXPECT_EQ(cmd.outcome.operands, (std::vector<std::string>{"port", "-p", "b", "--bogus"}));
  EXPECT_EQ(ports, (std::vector<std::string>{"a"}));

  // "--" ends the options in either mode.
  const Parsed dash = run(makeParser(Operands::kAny), {"--", "--port"});
  EXPECT_FALSE(dash.outcome.exit) << dash.err;
  EXPECT_EQ(dash.outcome.operands, (std::vector<std::string>{"--port"}));
}

TEST_F(CliTest, TheCheckSeesEveryOptionAndMayFail) {
  const Parser p = makeParser(Operands::kAny);
  std::vector<std::string> seen;
  const auto check = [&](const std::vector<std::string>& operands) {
    seen = operands;
    if (forced && ports.empty()) fail("--force needs a --port");
  };
  const Parsed ok = run(p, {"-f", "cmd", "-p", "a"}, check);
  EXPECT_FALSE(ok.outcome.exit) << ok.err;
  EXPECT_EQ(seen, (std::vector<std::string>{"cmd"}));

  ports.clear();
  forced = 0;
  const Parsed bad = run(p, {"-f", "cmd"}, check);
  ASSERT_TRUE(bad.outcome.exit);
  EXPECT_EQ(*bad.outcome.exit, kExitUsage);
  EXPECT_EQ(bad.err, "tool: --force needs a --port\nTry 'tool --help'.\n");
}

TEST_F(CliTest, AParserRunsAgainFromTheStart) {
  // getopt_long's state is global: a second parse must not continue the first.
  const Parser p = makeParser();
  EXPECT_FALSE(run(p, {"-p", "a", "-f"}).outcome.exit);
  EXPECT_FALSE(run(p, {"-p", "b"}).outcome.exit);
  EXPECT_EQ(ports, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(forced, 1);
}

TEST_F(CliTest, ReportPrintsTheSameForm) {
  const Parser p = makeParser();
  Capture err;
  EXPECT_EQ(p.report("no ports and no socket", err.get()), kExitUsage);
  EXPECT_EQ(err.text(), "tool: no ports and no socket\nTry 'tool --help'.\n");
}

TEST(CliTable, ATableThatCannotWorkAborts) {
  const auto noop = [](std::string_view) {};
  EXPECT_DEATH(Parser({"t", ""}, {{"help", 0, Arg::kNone, noop}}), "--help twice");
  EXPECT_DEATH(Parser({"t", ""}, {{"verbose", 'V', Arg::kNone, noop}}), "-V twice");
  EXPECT_DEATH(Parser({"t", ""}, {{"a", 'x', Arg::kNone, noop}, {"b", 'x', Arg::kNone, noop}}), "-x twice");
  EXPECT_DEATH(Parser({"t", ""}, {{"a", 0, Arg::kNone, nullptr}}), "--a has no handler");
}

TEST(ParseDouble, FiniteDecimalInsideTheRange) {
  EXPECT_EQ(parseDouble("0.5", 0, 1), 0.5);
  EXPECT_EQ(parseDouble("1e-3", 0, 1), 0.001);
  EXPECT_EQ(parseDouble(".25", 0, 1), 0.25);
  EXPECT_EQ(parseDouble("-1.5", -2, 0), -1.5);
  EXPECT_EQ(parseDouble("3600", 0.1, 3600), 3600.0);
  for (const char* s : {"", "+1", " 1", "1 ", "0x1p3", "inf", "-inf", "nan", "1s", "1,5", "."})
    EXPECT_FALSE(parseDouble(s, -1e9, 1e9)) << s;
  EXPECT_FALSE(parseDouble("3600.01", 0.1, 3600));
  EXPECT_FALSE(parseDouble("0.09", 0.1, 3600));
  EXPECT_FALSE(parseDouble("1e999", 0, 1e300));  // overflow
}

// Rates as vdevd's --police-rate and vdevctl's police-rate take them:
// decimal, k/M/G for 10^3/10^6/10^9, nothing else.
TEST(ParseRate, DecimalWithAnSiSuffix) {
  EXPECT_EQ(parseRate("0"), 0u);
  EXPECT_EQ(parseRate("0k"), 0u);
  EXPECT_EQ(parseRate("1500"), 1500u);
  EXPECT_EQ(parseRate("100k"), 100000u);
  EXPECT_EQ(parseRate("100M"), 100000000u);
  EXPECT_EQ(parseRate("10G"), 10000000000u);
  EXPECT_EQ(parseRate("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parseRate("18446744073G"), 18446744073000000000u);
  for (const char* s : {"", "-1", "+1", " 1", "1 ", "1.5M", "1.5", "10T", "100m", "100K", "1g", "M", "k",
                        "1MM", "1Mb", "0x10", "1e6"})
    EXPECT_FALSE(parseRate(s)) << s;
  // Overflow, with and without a suffix.
  EXPECT_FALSE(parseRate("18446744073709551616"));
  EXPECT_FALSE(parseRate("18446744074G"));
  EXPECT_FALSE(parseRate("18446744073709552k"));
  EXPECT_FALSE(parseRate("99999999999999999999999M"));
}

}  // namespace
}  // namespace vdev::cli
