// vdevd's command line (vdev/daemon/src/daemon_options.h): the option table and
// --help's text name the same options, each enum option takes the names
// its value's name function gives, and what follows from the options once
// all are read.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_options.h"

namespace vdev::daemon {
namespace {

std::string readBack(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

struct Parsed {
  cli::Parser::Outcome outcome;
  DaemonOptions o;
  std::string out, err;
};

Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "vdevd");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Parsed p;
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  p.outcome = parseVdevdOptions(int(args.size()), argv.data(), p.o, out, err);
  p.out = readBack(out);
  p.err = readBack(err);
  return p;
}

// Every option --help describes (a line "  -x, --name" or "      --name"),
// with its letter or 0.
std::map<std::string, char> helpOptions() {
  std::map<std::string, char> found;
  const std::regex line(R"(^  (?:-(\w), |    )--([a-z][a-z-]*))");
  std::istringstream in(kVdevdHelp);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) found[m[2]] = m[1].matched ? m[1].str()[0] : 0;
  }
  return found;
}

TEST(VdevdOptions, HelpAndTableNameTheSameOptions) {
  DaemonOptions o;
  std::map<std::string, char> table;
  for (const cli::Option& opt : vdevdOptionTable(o)) table[opt.name] = opt.letter;
  table["help"] = 'h';  // the parser's own
  table["version"] = 'V';
  EXPECT_EQ(helpOptions(), table);
}

TEST(VdevdOptions, HelpPrintsTheText) {
  Parsed p = parse({"--help"});
  ASSERT_TRUE(p.outcome.exit);
  EXPECT_EQ(*p.outcome.exit, cli::kExitOk);
  EXPECT_EQ(p.out, kVdevdHelp);
  EXPECT_EQ(p.err, "");
}

TEST(VdevdOptions, EnumOptionsTakeTheirNames) {
  Parsed p = parse({"--mode", "xconnect", "-p", "a", "-p", "b", "--xdp-mode", "generic", "--hook", "a=tc",
                    "--hook", "b=auto", "--default-hook", "xdp", "--tc-attach", "clsact", "--xdp-features", "driver"});
  ASSERT_FALSE(p.outcome.exit) << p.err;
  EXPECT_EQ(p.o.cfg.mode, datapath::SwitchMode::kXconnect);
  EXPECT_EQ(p.o.cfg.port.xdp_mode, datapath::XdpMode::kGeneric);
  ASSERT_EQ(p.o.hooks.size(), 2u);
  EXPECT_EQ(p.o.hooks[0].second, datapath::PortHook::kTc);
  EXPECT_EQ(p.o.hooks[1].second, datapath::PortHook::kAuto);
  EXPECT_EQ(p.o.cfg.port.hook, datapath::PortHook::kXdp);
  EXPECT_EQ(p.o.cfg.tc_attach, datapath::TcAttach::kClsact);
  EXPECT_EQ(p.o.cfg.xdp_features, datapath::XdpFeatures::Source::kDriver);

  p = parse({"-m", "switch", "-x", "native", "--tc-attach", "tcx", "--xdp-features", "auto", "--default-hook", "tc"});
  ASSERT_FALSE(p.outcome.exit) << p.err;
  EXPECT_EQ(p.o.cfg.mode, datapath::SwitchMode::kSwitch);
  EXPECT_EQ(p.o.cfg.port.xdp_mode, datapath::XdpMode::kNative);
  EXPECT_EQ(p.o.cfg.tc_attach, datapath::TcAttach::kTcx);
  EXPECT_EQ(p.o.cfg.xdp_features, datapath::XdpFeatures::Source::kAuto);
  EXPECT_EQ(p.o.cfg.port.hook, datapath::PortHook::kTc);
}

TEST(VdevdOptions, BadValuesKeepTheirMessages) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--mode", "x"}, "unknown mode 'x' (switch or xconnect)"},
      {{"--xdp-mode", "q"}, "unknown XDP mode 'q' (native, generic or auto)"},
      {{"--hook", "a=b"}, "--hook takes IFNAME=xdp, IFNAME=tc or IFNAME=auto, not 'a=b'"},
      {{"--hook", "a"}, "--hook takes IFNAME=xdp, IFNAME=tc or IFNAME=auto, not 'a'"},
      {{"--default-hook", "q"}, "--default-hook takes xdp, tc or auto, not 'q'"},
      {{"--tc-attach", "q"}, "--tc-attach takes auto, tcx or clsact, not 'q'"},
      // netdev is a source auto finds, not one to force.
      {{"--xdp-features", "netdev"}, "--xdp-features takes auto or driver, not 'netdev'"},
      {{"--no-socket"}, "no ports and no control socket: give --port IFNAME, or leave the socket on"},
  };
  for (const auto& [args, message] : cases) {
    Parsed p = parse(args);
    ASSERT_TRUE(p.outcome.exit) << args[0];
    EXPECT_EQ(*p.outcome.exit, cli::kExitUsage);
    EXPECT_EQ(p.err, "vdevd: " + message + "\nTry 'vdevd --help'.\n");
  }
}

TEST(VdevdOptions, DefaultsThatFollowOtherOptions) {
  Parsed p = parse({"--ring-size", "256", "--fdb-size", "1000", "--batch", "32"});
  ASSERT_FALSE(p.outcome.exit) << p.err;
  EXPECT_EQ(p.o.cfg.port.xsk.tx_budget, 256u);
  EXPECT_EQ(p.o.caps.fdb, 250u);
  EXPECT_EQ(p.o.cfg.fdb_max_per_group, 250u);
  EXPECT_EQ(p.o.cfg.port.xsk.busy_poll_budget, 32u);
  EXPECT_EQ(p.o.cfg.punt_name.substr(0, 3), "vdp");

  p = parse({"--tx-budget", "0", "--uid-max-fdb", "7"});
  ASSERT_FALSE(p.outcome.exit) << p.err;
  EXPECT_EQ(p.o.cfg.port.xsk.tx_budget, 0u);
  EXPECT_EQ(p.o.caps.fdb, 7u);
}

// What the options and a state-file record's xdp_mode and hook are read
// with: each value's name, and nothing else.
TEST(VdevdOptions, NamesReadBackAreTheNamesPrinted) {
  for (auto m : {datapath::XdpMode::kNative, datapath::XdpMode::kGeneric, datapath::XdpMode::kAuto})
    EXPECT_EQ(xdpModeByName(datapath::xdpModeName(m)), m);
  for (auto h : {datapath::PortHook::kXdp, datapath::PortHook::kTc, datapath::PortHook::kAuto})
    EXPECT_EQ(portHookByName(datapath::portHookName(h)), h);
  EXPECT_EQ(xdpModeByName(""), std::nullopt);
  EXPECT_EQ(xdpModeByName("Native"), std::nullopt);
  EXPECT_EQ(portHookByName(""), std::nullopt);  // a record without a hook: --default-hook
  EXPECT_EQ(portHookByName("tcx"), std::nullopt);
}

}  // namespace
}  // namespace vdev::daemon
