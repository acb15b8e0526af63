// The reference text against the tables it describes.
//
// Counters: every list of drop reasons, counters and pool places that
// `vdevctl stats --help`, docs/man/vdevctl.8, docs/vdevctl.md and docs/vdevd.md
// write out by hand names exactly the table's entries, in the table's order
// (stats/counters.h). A reason, counter or place added to the table and not
// to one of them, or left in one after it went, fails here with the list
// that differs.
//
// Port options: the synopses of "port add" and "port set" and the argument
// list of "port add" in `vdevctl port add --help`, docs/man/vdevctl.8 and
// docs/vdevctl.md name every keyword of the policy table
// (spec/port_policy.h, kPolicyFields), identity rows first, then rates, each
// in table order, and no keyword vdevctl does not take; a number's entry
// states the row's range and the default vdevd gives (queues and mtu: the
// protocol's range); and the names of
// spec/port_spec.h that vdevctl's keywords take (port types, XDP modes,
// hooks; the switch modes "info" prints) are all written where they belong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/vlan.h"
#include "datapath/datapath.h"
#include "proto/codec.h"
#include "proto/protocol.h"
#include "spec/port_policy.h"
#include "spec/port_spec.h"
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
  const std::string man = readFile("docs/man/vdevctl.8");
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

// ------------------------------------------------------------ port options

// The keywords of "port add" that are not rows of the policy table:
// isolation, the port's own settings and the device to create (vdevctl's
// cmd_port.cpp). "port set" takes isolated and the table's keywords only.
const Names kAddOwnWords = {"type", "queues", "xdp-mode", "fast-rx", "hook",  "isolated", "create",     "netns",
                            "peer", "peer-mac", "mac",   "mtu",     "owner", "group",    "multi-queue"};
const Names kSetOwnWords = {"isolated"};

// The table's keywords as the texts list them: identity rows first, then
// rates (FieldGroup), each in table order; the VLAN row's four keywords.
Names policyWords() {
  Names out;
  for (vdev::spec::FieldGroup g : {vdev::spec::FieldGroup::kIdentity, vdev::spec::FieldGroup::kRate})
    vdev::spec::forEachPolicyField([&](const auto& r) {
      if (r.group != g) return;
      if constexpr (std::is_same_v<typename std::decay_t<decltype(r)>::Type, vdev::VlanConfig>)
        for (std::string_view w : vdev::spec::kVlanKeywords) out.emplace_back(w);
      else
        out.emplace_back(r.cli);
    });
  return out;
}

bool isPolicyWord(const std::string& w) {
  const Names p = policyWords();
  return std::find(p.begin(), p.end(), w) != p.end();
}

Names sorted(Names n) {
  std::sort(n.begin(), n.end());
  return n;
}

// Roff as plain text, for the man page's synopses and arguments: the font macros' (.RB,
// .IR, ...) arguments joined, "\ " a space, "\-" a hyphen, \c joining the
// next line, font escapes gone. `.RB [ type\ tap | veth ]` reads
// "[type tap|veth]", as the help and the docs write it.
std::string roffPlain(const std::string& roff) {
  std::string out;
  std::istringstream in(roff);
  std::string line;
  bool join = true;
  while (std::getline(in, line)) {
    if (!join) out += ' ';
    join = false;
    bool alternating = false;
    size_t i = 0;
    if (!line.empty() && line[0] == '.') {
      const size_t sp = line.find(' ');
      const std::string macro = line.substr(1, sp == std::string::npos ? std::string::npos : sp - 1);
      alternating = macro.size() == 2 && macro != "SY" && macro != "YS" && macro != "TP" && macro != "PP";
      if (sp == std::string::npos) continue;
      i = sp + 1;
    }
    bool quoted = false;
    for (; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '\\' && i + 1 < line.size()) {
        const char e = line[++i];
        if (e == 'c') join = true;
        else if (e == 'f') ++i;  // \fI, \fR, ...
        else if (e == '-') out += '-';
        else if (e == ' ') out += ' ';
        else if (e == '&' || e == '|') {}
        else out += e;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ' ' && !quoted) {
        if (!alternating) out += ' ';
      } else {
        out += c;
      }
    }
  }
  return out;
}

// The option keywords of a synopsis: the word after each "[".
Names synopsisWords(const std::string& syn) { return matches(syn, R"(\[([a-z][a-z-]*))"); }

struct PortText {
  std::string name;
  std::string add_synopsis, set_synopsis;  // plain text
  std::map<std::string, std::string> entries;  // "port add"'s arguments: keyword -> its text
  Names entry_order;
};

// Splits `list` at the lines `re` matches (group 1: the keyword); each
// entry runs to the next.
void splitEntries(PortText& t, const std::string& list, const std::string& re) {
  const std::regex r(re);
  std::vector<std::pair<std::string, size_t>> at;
  for (auto it = std::sregex_iterator(list.begin(), list.end(), r); it != std::sregex_iterator(); ++it)
    at.emplace_back((*it)[1].str(), size_t(it->position()));
  for (size_t i = 0; i < at.size(); ++i) {
    std::string w = at[i].first;
    for (size_t p; (p = w.find("\\-")) != std::string::npos;) w.replace(p, 2, "-");
    const size_t end = i + 1 < at.size() ? at[i + 1].second : list.size();
    t.entries[w] += list.substr(at[i].second, end - at[i].second);
    t.entry_order.push_back(w);
  }
}

PortText helpText() {
  PortText t{"vdevctl port add/set --help"};
  const std::string add = runVdevctl("port add --help");
  t.add_synopsis = between(add, "SYNOPSIS\n", "\nDESCRIPTION");
  t.set_synopsis = between(runVdevctl("port set --help"), "SYNOPSIS\n", "\nDESCRIPTION");
  splitEntries(t, between(add, "\nARGUMENTS\n", "\nEXAMPLES"), R"(\n    ([a-z][a-z-]*))");
  return t;
}

PortText manText() {
  PortText t{"docs/man/vdevctl.8"};
  const std::string man = readFile("docs/man/vdevctl.8");
  t.add_synopsis = roffPlain(between(man, ".SS \"port add\"\n", ".YS"));
  t.set_synopsis = roffPlain(between(man, ".SS \"port set\"\n", ".YS"));
  splitEntries(t, between(man, "The arguments:\n", ".SS \"port del\""), R"(\.TP\n\.B[IR]? ((?:[a-z]|\\-)+))");
  for (auto& [w, e] : t.entries) e = roffPlain(e);
  return t;
}

PortText docsText() {
  PortText t{"docs/vdevctl.md"};
  const std::string md = readFile("docs/vdevctl.md");
  t.add_synopsis = between(md, "## port add\n\n```\n", "```");
  t.set_synopsis = between(md, "## port set\n\n```\n", "```");
  splitEntries(t, between(md, "| argument | values | for |\n|---|---|---|\n", "\n\n"), R"((?:^|\n)\| `([a-z][a-z-]*))");
  return t;
}

std::vector<PortText> portTexts() { return {helpText(), manText(), docsText()}; }

// `words` in the order given, those of the table only.
Names policyOnly(const Names& words) {
  Names out;
  for (const auto& w : words)
    if (isPolicyWord(w)) out.push_back(w);
  return out;
}

// Every keyword of the table once, in order, and each other one vdevctl takes.
void expectSynopsis(const std::string& where, const std::string& syn, const Names& own) {
  ASSERT_FALSE(syn.empty()) << where;
  const Names words = synopsisWords(syn);
  EXPECT_EQ(policyOnly(words), policyWords()) << where << ":\n" << syn;
  Names all = policyWords();
  all.insert(all.end(), own.begin(), own.end());
  EXPECT_EQ(sorted(words), sorted(all)) << where << ": keywords other than vdevctl's:\n" << syn;
}

TEST(ReferenceTextTest, PortAddSynopsisNamesEveryKeyword) {
  for (const PortText& t : portTexts()) expectSynopsis(t.name + ", port add", t.add_synopsis, kAddOwnWords);
}

TEST(ReferenceTextTest, PortSetSynopsisNamesEveryKeyword) {
  for (const PortText& t : portTexts()) expectSynopsis(t.name + ", port set", t.set_synopsis, kSetOwnWords);
}

TEST(ReferenceTextTest, PortAddArgumentsDescribeEveryKeyword) {
  Names all = policyWords();
  all.insert(all.end(), kAddOwnWords.begin(), kAddOwnWords.end());
  for (const PortText& t : portTexts()) {
    ASSERT_FALSE(t.entries.empty()) << t.name;
    EXPECT_EQ(policyOnly(t.entry_order), policyWords()) << t.name;
    for (const auto& w : all) EXPECT_TRUE(t.entries.count(w)) << t.name << " does not describe " << w;
    for (const auto& [w, text] : t.entries)
      EXPECT_NE(std::find(all.begin(), all.end(), w), all.end()) << t.name << " describes " << w
                                                                 << ", which vdevctl does not take";
  }
}

// "A..B" ranges in `text`, as "A..B".
Names ranges(const std::string& text) { return matches(text, R"((\b[0-9]+\.\.[0-9]+\b))"); }

TEST(ReferenceTextTest, PortAddArgumentsGiveTheRowsRangeAndDefault) {
  const vdev::spec::PortPolicy defaults{};
  const vdev::spec::PortPolicy daemonDefaults = vdev::datapath::DatapathConfig{}.limits;
  for (const PortText& t : portTexts()) {
    vdev::spec::forEachPolicyField([&](const auto& r) {
      using T = typename std::decay_t<decltype(r)>::Type;
      const std::string w(r.cli);
      const auto it = t.entries.find(w);
      if (it == t.entries.end()) return;  // reported above
      const std::string& e = it->second;
      if constexpr (vdev::spec::kIsNumber<T>) {
        if (r.min == 0)
          EXPECT_FALSE(matches(e, R"(\b(off)\b)").empty()) << t.name << ", " << w << ": 0 (off) is no limit:\n" << e;
        else
          EXPECT_NE(e.find(std::to_string(r.min) + " or more"), std::string::npos)
              << t.name << ", " << w << ": the least is " << r.min << ":\n" << e;
        for (const auto& rg : ranges(e))
          EXPECT_EQ(rg, std::to_string(r.min) + ".." + std::to_string(r.max)) << t.name << ", " << w << ":\n" << e;
        // The port's default follows vdevd's option of the same name, and
        // the text gives that option's default after its name ("vdevd's
        // --storm-bcast (10000)", "--police-pps, off"): the datapath's
        // (DatapathConfig::limits; the table has no default of its own).
        const std::string flag = "--" + w;
        const size_t at = e.find(flag);
        ASSERT_NE(at, std::string::npos) << t.name << ", " << w << " does not name vdevd's " << flag << ":\n" << e;
        const auto d = daemonDefaults.*r.value;
        std::smatch m;
        const std::string after = e.substr(at + flag.size());
        ASSERT_TRUE(std::regex_search(after, m, std::regex(R"(^[^a-z0-9]*(off|[0-9]+))")))
            << t.name << ", " << w << ": no default after " << flag << ":\n" << e;
        EXPECT_EQ(m[1].str(), d ? std::to_string(d) : "off") << t.name << ", " << w << ":\n" << e;
      } else if constexpr (std::is_same_v<T, bool>) {
        // What on does ("on: ...", "`on`: ..."), and the spec's default:
        // "(default off)", "`off` (default)".
        EXPECT_FALSE(matches(e, R"((\bon`?:))").empty()) << t.name << ", " << w << ": what on does:\n" << e;
        const std::string d = defaults.*r.value ? "on" : "off";
        EXPECT_FALSE(matches(e, "(default\\)? " + d + "\\b|\\b" + d + "`? \\(default\\))").empty())
            << t.name << ", " << w << ": the default is " << d << ":\n" << e;
      } else if constexpr (std::is_same_v<T, vdev::VlanConfig>) {
        for (const auto& rg : ranges(e))
          EXPECT_EQ(rg, "1.." + std::to_string(vdev::kVidMax)) << t.name << ", " << w << ":\n" << e;
        EXPECT_FALSE(ranges(e).empty()) << t.name << ", " << w << ": no VLAN ID range:\n" << e;
      } else {
        // A MAC, addresses: "any" (all zeros, none) is the default.
        EXPECT_FALSE(matches(e, R"((\bany`?\s+\(default\)))").empty())
            << t.name << ", " << w << ": any is the default:\n" << e;
      }
    });
  }
}

// The numbers of "port add" that are not rows of the table: their ranges
// are the protocol's (proto/protocol.h), which vdevctl and vdevd check.
TEST(ReferenceTextTest, PortAddArgumentsGiveTheProtocolsRanges) {
  const std::pair<std::string, std::string> words[] = {
      {"queues", std::to_string(vdev::proto::kMinQueues) + ".." + std::to_string(vdev::proto::kMaxQueues)},
      {"mtu", std::to_string(vdev::proto::kMinMtu) + ".." + std::to_string(vdev::proto::kMaxMtu)},
  };
  for (const PortText& t : portTexts())
    for (const auto& [w, range] : words) {
      const auto e = t.entries.find(w);
      ASSERT_NE(e, t.entries.end()) << t.name << ": " << w;
      EXPECT_EQ(ranges(e->second), Names{range}) << t.name << ", " << w << ":\n" << e->second;
    }
}

// The names of `table` that `accepts` takes, in table order.
template <class E, size_t N, class P>
Names accepted(const vdev::spec::Named<E> (&table)[N], P accepts) {
  Names out;
  for (const auto& n : table)
    if (accepts(n.name)) out.emplace_back(n.name);
  return out;
}

TEST(ReferenceTextTest, PortAddNamesEveryModeVdevctlTakes) {
  namespace proto = vdev::proto;
  const std::vector<std::pair<std::string, Names>> words = {
      {"type", accepted(vdev::spec::kPortTypeNames, [](auto s) { return proto::parsePortType(s).has_value(); })},
      {"xdp-mode", accepted(vdev::spec::kXdpModeNames, [](auto s) { return proto::parseXdpMode(s).has_value(); })},
      {"hook", accepted(vdev::spec::kPortHookNames, [](auto s) { return proto::parsePortHook(s).has_value(); })},
  };
  for (const PortText& t : portTexts()) {
    for (const auto& [kw, names] : words) {
      ASSERT_GE(names.size(), 2u) << kw;
      // The synopsis's alternatives: "[type tap|veth|netkit|netdev]".
      const Names alts = matches(t.add_synopsis, R"(\[)" + kw + R"( ([a-z|]+)\])");
      ASSERT_EQ(alts.size(), 1u) << t.name << ": no [" << kw << " ...] in\n" << t.add_synopsis;
      Names listed;
      std::istringstream in(alts[0]);
      for (std::string n; std::getline(in, n, '|');) listed.push_back(n);
      EXPECT_EQ(sorted(listed), sorted(names)) << t.name << ": " << kw;
      // ... and the argument's description names each.
      const auto e = t.entries.find(kw);
      ASSERT_NE(e, t.entries.end()) << t.name << ": " << kw;
      for (const auto& n : names)
        EXPECT_FALSE(matches(e->second, R"(\b()" + n + R"()\b)").empty())
            << t.name << ": " << kw << "'s description does not name " << n << ":\n" << e->second;
    }
  }
}

TEST(ReferenceTextTest, InfoNamesEverySwitchMode) {
  const std::string help = runVdevctl("info --help");
  const std::string man = between(readFile("docs/man/vdevctl.8"), ".SS info\n", ".SH");
  const std::string md = between(readFile("docs/vdevctl.md"), "## info\n", "\n## ");
  for (const auto& [where, text] : {std::pair{"vdevctl info --help", help}, {"docs/man/vdevctl.8", man},
                                    {"docs/vdevctl.md", md}}) {
    ASSERT_FALSE(text.empty()) << where;
    for (const auto& n : vdev::spec::kSwitchModeNames)
      EXPECT_FALSE(matches(text, std::string(R"(\b()") + n.name + R"()\b)").empty())
          << where << "'s info does not name the switch mode " << n.name;
  }
}

}  // namespace
