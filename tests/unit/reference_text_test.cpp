// The reference text against the counter table: every list of drop
// reasons, counters and pool places that `vdevctl stats --help`,
// man/vdevctl.8, docs/vdevctl.md and docs/vdevd.md write out by hand names
// exactly the table's entries, in the table's order (stats/counters.h). A
// reason, counter or place added to the table and not to one of them, or
// left in one after it went, fails here with the list that differs.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "stats/counters.h"

namespace {

using Names = std::vector<std::string>;

std::string readFile(const std::string& rel) {
  std::ifstream f(std::string(VDEV_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string runVdevctl(const std::string& args) {
  const std::string cmd = std::string(VDEVCTL_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// What lies between the first `from` and the next `to` after it ("" when
// either is missing).
std::string between(const std::string& text, std::string_view from, std::string_view to) {
  const size_t a = text.find(from);
  if (a == std::string::npos) return {};
  const size_t b = text.find(to, a + from.size());
  if (b == std::string::npos) return {};
  return text.substr(a + from.size(), b - a - from.size());
}

// `text` without what stands in parentheses (nested too).
std::string withoutParens(std::string_view text) {
  std::string out;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    else if (c == ')') depth = depth > 0 ? depth - 1 : 0;
    else if (depth == 0) out += c;
  }
  return out;
}

// Every match of `re`'s first group, in order.
Names matches(const std::string& text, const std::string& re) {
  Names out;
  const std::regex r(re);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), r); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

Names dropNames() {
  Names out;
  for (const auto& c : vdev::stats::kPortCounters)
    if (c.group() == "drops") out.emplace_back(c.name());
  return out;
}

// The names of one JSON group of the port counters ("" for the top level).
Names groupNames(std::string_view group) {
  Names out;
  for (const auto& c : vdev::stats::kPortCounters)
    if (c.group() == group) out.emplace_back(c.name());
  return out;
}

Names poolPlaces() {
  Names out;
  for (const auto& c : vdev::stats::kPoolCounters)
    if (std::string_view(c.path) != "total") out.emplace_back(c.name());
  return out;
}

TEST(ReferenceTextTest, TheTableHasDropReasons) {
  // Guards the tests below against an empty extraction on both sides.
  EXPECT_GE(dropNames().size(), 20u);
  EXPECT_EQ(poolPlaces().size(), 10u);
}

TEST(ReferenceTextTest, VdevctlStatsHelpListsEveryDropReason) {
  const std::string help = runVdevctl("stats --help");
  // "drops        frames dropped, by reason: ring_full, ... vlan_filtered (...)"
  const std::string list = between(help, "frames dropped, by reason:", "xdp_stats ");
  ASSERT_FALSE(list.empty()) << help;
  EXPECT_EQ(matches(withoutParens(list), R"(([a-z][a-z_]*[a-z]))"), dropNames()) << list;
}

TEST(ReferenceTextTest, VdevctlStatsHelpListsEveryPoolPlace) {
  const std::string help = runVdevctl("stats --help");
  const std::string list = between(help, "where every UMEM frame is (", "),");
  ASSERT_FALSE(list.empty()) << help;
  // "kernel_held: frames of closed zero-copy sockets ..." explains the last.
  EXPECT_EQ(matches(list.substr(0, list.find(':')), R"(([a-z][a-z_]*[a-z]))"), poolPlaces()) << list;
}

TEST(ReferenceTextTest, ManPageListsEveryDropReason) {
  const std::string man = readFile("man/vdevctl.8");
  const std::string list = between(man, ".B drops\n(by reason:\n", ".B xdp_stats");
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(matches(list, R"(\.BR ([a-z_]+) )"), dropNames()) << list;
}

TEST(ReferenceTextTest, PrometheusTableListsEveryDropReasonAndPoolPlace) {
  const std::string md = readFile("docs/vdevctl.md");
  const std::string drops = between(md, "| `vdev_port_drops_total` | counter | `port`, `reason` (", ") |");
  ASSERT_FALSE(drops.empty());
  EXPECT_EQ(matches(drops, "`([a-z_]+)`"), dropNames()) << drops;
  const std::string places = between(md, "| `vdev_pool_frames` | gauge | `place` (", ") |");
  ASSERT_FALSE(places.empty());
  EXPECT_EQ(matches(places, "`([a-z_]+)`"), poolPlaces()) << places;
}

TEST(ReferenceTextTest, PrometheusTableNamesEveryPortMetric) {
  const std::string md = readFile("docs/vdevctl.md");
  // The table writes a family's later names as "..._rx_invalid_descs_total":
  // the suffix of the first name's family prefix (vdev_port_xdp_, ...).
  for (const auto& c : vdev::stats::kPortCounters) {
    if (c.metric.label) continue;  // the drops family, above
    const std::string_view name = c.metric.name;
    bool found = md.find("`" + std::string(name) + "`") != std::string::npos;
    for (size_t us = name.find('_'); !found && us != std::string_view::npos; us = name.find('_', us + 1))
      found = md.find("`..." + std::string(name.substr(us)) + "`") != std::string::npos &&
              md.find("`" + std::string(name.substr(0, us + 1))) != std::string::npos;
    EXPECT_TRUE(found) << name << " is not in docs/vdevctl.md's metric table";
  }
}

TEST(ReferenceTextTest, StatisticsJsonExampleHasEveryCounterInOrder) {
  const std::string md = readFile("docs/vdevd.md");
  // The example object of --stats-json's "ports" entries: each group's keys.
  for (std::string_view group : {"drops", "xdp_stats", "xdp_prog", "dev", "link"}) {
    const std::string obj = between(md, "\"" + std::string(group) + "\": {", "}");
    ASSERT_FALSE(obj.empty()) << group;
    EXPECT_EQ(matches(obj, R"re("([a-z_]+)":)re"), groupNames(group)) << group;
  }
}

}  // namespace
