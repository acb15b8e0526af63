// stats/: the counter table and its writers. Every writer (JSON, text,
// Prometheus) names every counter of the table exactly once, with its value,
// and no two counters share a name in any of them.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stats/counters.h"
#include "stats/format.h"

namespace vdev::stats {
namespace {

// Every counter a value of its own.
PortValues distinctPort(uint64_t base) {
  PortValues v;
  for (const CounterDef& c : kPortCounters) v[c] = base + 7 * c.id + 1;
  return v;
}

PoolValues distinctPool() {
  PoolValues v;
  for (const CounterDef& c : kPoolCounters) v[c] = 100 + c.id;
  return v;
}

// The leaves of a JSON object as "group.name" (or "name") -> value, each
// path with the number of times it was seen, in document order.
struct Leaves {
  std::vector<std::string> order;
  std::map<std::string, std::vector<uint64_t>> values;
};
void collect(const Json& o, const std::string& prefix, Leaves& out) {
  for (const auto& [k, v] : o.items()) {
    const std::string path = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      collect(v, path, out);
    } else {
      ASSERT_TRUE(v.is_number_unsigned()) << path << " = " << v.dump();
      out.order.push_back(path);
      out.values[path].push_back(v.get<uint64_t>());
    }
  }
}

// ------------------------------------------------------------------ table

TEST(StatsTable, NamesAreUniqueInEveryOutput) {
  std::set<std::string> paths, texts, samples, attrs;
  std::map<std::string, MetricType> metrics;
  for (const CounterDef& c : kPortCounters) {
    EXPECT_TRUE(paths.insert(c.path).second) << "JSON path twice: " << c.path;
    EXPECT_TRUE(texts.insert(c.text).second) << "text label twice: " << c.text;
    const std::string sample =
        std::string(c.metric.name) + (c.metric.label ? "{" + std::string(c.name()) + "}" : "");
    EXPECT_TRUE(samples.insert(sample).second) << "Prometheus sample twice: " << sample;
    EXPECT_TRUE(attrs.insert(std::to_string(c.attr)).second) << "attribute twice: " << c.attr;
    // A metric shared by several rows is a labelled family of one type.
    const auto [it, fresh] = metrics.emplace(c.metric.name, c.metric.type);
    if (!fresh) {
      EXPECT_NE(c.metric.label, nullptr) << c.metric.name << " shared without a label";
      EXPECT_EQ(it->second, c.metric.type) << c.metric.name;
    }
    EXPECT_FALSE(c.textLine().empty()) << c.path;
    EXPECT_FALSE(c.textLabel().empty()) << c.path;
    EXPECT_NE(std::string_view(c.metric.help), "") << c.path;
  }
  for (const auto& [name, type] : metrics) {
    // Prometheus naming: counters end in _total, gauges do not.
    EXPECT_EQ(name.size() > 6 && name.ends_with("_total"), type == MetricType::kCounter) << name;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"), std::string::npos) << name;
  }
  std::set<std::string> pool;
  for (const CounterDef& c : kPoolCounters) EXPECT_TRUE(pool.insert(c.path).second) << c.path;
}

TEST(StatsTable, IdsLookupsAndDropReasons) {
  for (uint32_t id = 0; id < kNumPortCounters; ++id) {
    EXPECT_EQ(portCounter(id).id, id);
    EXPECT_EQ(findPortCounter(jsonPath(id)), id);
    EXPECT_EQ(portCounterByAttr(portCounter(id).attr), &portCounter(id));
  }
  for (uint32_t id = 0; id < kNumPoolCounters; ++id) {
    EXPECT_EQ(poolCounter(id).id, id);
    EXPECT_EQ(poolCounterByAttr(poolCounter(id).attr), &poolCounter(id));
  }
  EXPECT_EQ(portCounterByAttr(0), nullptr);
  EXPECT_EQ(portCounterByAttr(kPortAttrMax + 1), nullptr);
  EXPECT_FALSE(findPortCounter("drops.nope"));
  // A drop reason is its own id; its row is in the drops group and counted
  // by vdevd.
  for (uint32_t r = 0; r < kNumDropReasons; ++r) {
    const CounterDef& c = portCounter(r);
    EXPECT_EQ(c.group(), "drops") << c.path;
    EXPECT_EQ(c.origin, Origin::kCounted) << c.path;
    EXPECT_TRUE(c.lost) << c.path;
  }
  EXPECT_EQ(dropName(kDropRingFull), "ring_full");
  EXPECT_EQ(dropName(kDropInflight), "inflight_limit");
  EXPECT_STREQ(jsonPath(kDropRunt), "drops.runt");
  EXPECT_STREQ(jsonPath(kRxPackets), "rx_packets");
  EXPECT_STREQ(jsonPath(kXdpRxRingFull), "xdp_stats.rx_ring_full");
}

TEST(StatsTable, ValuesSumAndCompare) {
  PortValues a = distinctPort(0), b = distinctPort(1000);
  PortValues s = a;
  s += b;
  for (const CounterDef& c : kPortCounters) EXPECT_EQ(s[c], a[c] + b[c]) << c.path;
  uint64_t drops = 0, lost = 0;
  for (const CounterDef& c : kPortCounters) {
    drops += c.id < kNumDropReasons ? a[c] : 0;
    lost += c.lost ? a[c] : 0;
  }
  EXPECT_EQ(a.totalDrops(), drops);
  EXPECT_EQ(a.lost(), lost);
  EXPECT_GT(a.lost(), a.totalDrops());  // the kernel's and the device's losses too
  EXPECT_NE(a, b);
  EXPECT_EQ(a, distinctPort(0));
  PoolValues p = distinctPool();
  uint64_t places = 0;
  for (const CounterDef& c : kPoolCounters) places += c.id == kPoolTotal ? 0 : p[c];
  EXPECT_EQ(p.sum(), places);
}

// ------------------------------------------------------------------ JSON

TEST(StatsJson, EveryCounterOnceAtItsPathInRowOrder) {
  const PortValues v = distinctPort(5);
  Json o = Json::object();
  o["name"] = "vd0";
  putPortCounters(o, v);
  EXPECT_EQ(o.begin().key(), "name");  // counters come after what the object had
  o.erase("name");
  Leaves l;
  collect(o, "", l);
  ASSERT_EQ(l.order.size(), std::size(kPortCounters)) << o.dump();
  for (size_t i = 0; i < l.order.size(); ++i) {
    const CounterDef& c = kPortCounters[i];
    EXPECT_EQ(l.order[i], c.path);
    ASSERT_EQ(l.values[c.path].size(), 1u) << c.path;
    EXPECT_EQ(l.values[c.path][0], v[c]) << c.path;
  }
  // The groups vdevd has always written.
  for (const char* g : {"drops", "xdp_stats", "xdp_prog", "dev"}) EXPECT_TRUE(o[g].is_object()) << g;
}

// What a removed port leaves in vdevd's totals: the counters vdevd counts
// itself, among them rx/tx packets and bytes and every drop reason.
TEST(StatsJson, CountedOnlyIsWhatARemovedPortLeaves) {
  Json o = Json::object();
  putPortCounters(o, distinctPort(0), Origin::kCounted);
  Leaves l;
  collect(o, "", l);
  std::vector<std::string> want;
  for (const CounterDef& c : kPortCounters)
    if (c.origin == Origin::kCounted) want.push_back(c.path);
  EXPECT_EQ(l.order, want) << o.dump();
  std::set<std::string> got(l.order.begin(), l.order.end());
  for (const char* p : {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes"}) EXPECT_TRUE(got.count(p)) << p;
  for (uint32_t r = 0; r < kNumDropReasons; ++r) EXPECT_TRUE(got.count(jsonPath(r))) << jsonPath(r);
  EXPECT_FALSE(got.count("tx_outstanding"));
  EXPECT_FALSE(got.count("xdp_stats.rx_dropped"));
}

TEST(StatsJson, ReadsBackWhatItWrote) {
  const PortValues v = distinctPort(11);
  Json o = Json::object();
  o["name"] = "vd0";
  putPortCounters(o, v);
  auto back = readPortCounters(Json::parse(jsonText(o)));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, v);
  auto unordered = readPortCounters(nlohmann::json::parse(jsonText(o, true)));
  ASSERT_TRUE(unordered.ok()) << unordered.error().message();
  EXPECT_EQ(*unordered, v);

  // An older writer: what it lacks is 0.
  o["drops"].erase("fast_xmit");
  o.erase("xdp_prog");
  auto old = readPortCounters(o);
  ASSERT_TRUE(old.ok());
  for (const CounterDef& c : kPortCounters)
    EXPECT_EQ((*old)[c], c.group() == "xdp_prog" || c.id == kDropFastXmit ? 0 : v[c]) << c.path;

  o["drops"]["runt"] = "three";
  auto bad = readPortCounters(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("drops.runt"), std::string::npos) << bad.error().what;
  EXPECT_FALSE(readPortCounters(Json::array()).ok());

  const PoolValues p = distinctPool();
  auto pool = readPool(poolJson(p));
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(*pool, p);
}

TEST(StatsJson, PoolHasTotalEveryPlaceAndSum) {
  PoolValues p = distinctPool();
  const Json o = poolJson(p);
  std::vector<std::string> keys;
  for (const auto& [k, v] : o.items()) keys.push_back(k);
  std::vector<std::string> want;
  for (const CounterDef& c : kPoolCounters) want.push_back(c.path);
  want.push_back("sum");
  EXPECT_EQ(keys, want);
  for (const CounterDef& c : kPoolCounters) EXPECT_EQ(o[c.path].get<uint64_t>(), p[c]) << c.path;
  EXPECT_EQ(o["sum"].get<uint64_t>(), p.sum());
}

TEST(StatsJson, TextNeverThrows) {
  Json o = Json::object();
  o["name"] = std::string("a\xff\"b\n");
  const std::string t = jsonText(o);
  EXPECT_EQ(t.back(), '\n');
  EXPECT_EQ(Json::parse(t)["name"].get<std::string>(), "a\xef\xbf\xbd\"b\n");
  EXPECT_NE(jsonText(o, true).find("\n  \"name\": "), std::string::npos);
}

// ------------------------------------------------------------------ text

// "line label" -> values, from portText()'s layout.
std::map<std::string, std::vector<uint64_t>> parseText(const std::string& text, size_t* totals) {
  std::map<std::string, std::vector<uint64_t>> out;
  std::istringstream in(text);
  std::string line, name;
  *totals = 0;
  while (std::getline(in, line)) {
    EXPECT_LE(line.size(), 80u) << line;
    EXPECT_EQ(line.rfind("    ", 0), 0u) << line;
    if (const size_t t = line.find("  (total "); t != std::string::npos) {
      ++*totals;
      line.resize(t);
    }
    std::istringstream words(line);
    if (line[4] != ' ') words >> name;  // a new line; else a continuation
    std::string label;
    uint64_t value = 0;
    while (words >> label >> value) out[name + " " + label].push_back(value);
    EXPECT_TRUE(words.eof()) << "not label-value pairs: " << line;
  }
  return out;
}

// Every counter of the table once in portText(v), with its value.
void expectEveryCounterOnce(const PortValues& v) {
  const std::string text = portText(v);
  size_t totals = 0;
  const auto got = parseText(text, &totals);
  EXPECT_EQ(got.size(), std::size(kPortCounters)) << text;
  for (const CounterDef& c : kPortCounters) {
    const auto it = got.find(c.text);
    ASSERT_NE(it, got.end()) << c.text << " missing in\n" << text;
    ASSERT_EQ(it->second.size(), 1u) << c.text << "\n" << text;
    EXPECT_EQ(it->second[0], v[c]) << c.text;
  }
  EXPECT_EQ(totals, 1u) << text;
  EXPECT_NE(text.find("  (total " + std::to_string(v.totalDrops()) + ")\n"), std::string::npos) << text;
}

TEST(StatsText, EveryCounterOnceWithItsLabel) {
  // Short and long values: lines wrap at other places.
  for (uint64_t base : {uint64_t{0}, uint64_t{1000}, uint64_t{123456789}, uint64_t{1} << 62})
    for (uint64_t step : {uint64_t{1}, uint64_t{77777}}) {
      PortValues v = distinctPort(base);
      for (const CounterDef& c : kPortCounters) v[c] += step * c.id;
      SCOPED_TRACE(std::to_string(base) + "+" + std::to_string(step));
      expectEveryCounterOnce(v);
    }
}

TEST(StatsText, CountedOnly) {
  const PortValues v = distinctPort(3);
  size_t totals = 0;
  const std::string counted = portText(v, Origin::kCounted);
  const auto few = parseText(counted, &totals);
  EXPECT_EQ(totals, 1u);
  for (const CounterDef& c : kPortCounters)
    EXPECT_EQ(few.count(c.text), c.origin == Origin::kCounted ? 1u : 0u) << c.text << "\n" << counted;
}

TEST(StatsText, PoolAddsUpOrSaysMismatch) {
  PoolValues p = distinctPool();
  p[kPoolTotal] = p.sum();
  const std::string t = poolText(p);
  for (const CounterDef& c : kPoolCounters) {
    const std::string item = std::string(c.text) + " " + std::to_string(p[c]);
    EXPECT_NE(t.find(item), std::string::npos) << item << " in " << t;
    EXPECT_EQ(t.find(item), t.rfind(item)) << item << " twice in " << t;
  }
  EXPECT_NE(t.find(", adds up)"), std::string::npos) << t;
  p[kPoolFree] += 1;
  EXPECT_NE(poolText(p).find("MISMATCH"), std::string::npos);
}

// ------------------------------------------------------------------ Prometheus

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  uint64_t value;
};
struct Exposition {
  std::map<std::string, std::string> type;  // by family
  std::map<std::string, int> help;
  std::vector<Sample> samples;
};
Exposition parseProm(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      e.help[line.substr(7, line.find(' ', 7) - 7)]++;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t sp = line.find(' ', 7);
      const std::string name = line.substr(7, sp - 7);
      EXPECT_FALSE(e.type.count(name)) << "TYPE twice: " << name;
      e.type[name] = line.substr(sp + 1);
      continue;
    }
    Sample s;
    const size_t brace = line.find('{'), sp = line.rfind(' ');
    s.name = line.substr(0, std::min(brace, sp));
    if (brace != std::string::npos) {
      const std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
      for (size_t at = 0; at < body.size();) {
        const size_t eq = body.find("=\"", at), end = body.find('"', eq + 2);
        s.labels[body.substr(at, eq - at)] = body.substr(eq + 2, end - eq - 2);
        at = end + 2;  // past '",'
      }
    }
    s.value = std::stoull(line.substr(sp + 1));
    EXPECT_TRUE(e.type.count(s.name)) << "sample before its family: " << line;
    e.samples.push_back(s);
  }
  return e;
}

TEST(StatsPrometheus, EveryCounterOncePerPort) {
  const PortValues a = distinctPort(0), b = distinctPort(500);
  const NamedPort ports[] = {{"vd0", &a}, {"vm1", &b}};
  PromWriter w;
  putPortMetrics(w, ports);
  const Exposition e = parseProm(w.str());
  EXPECT_EQ(e.samples.size(), 2 * std::size(kPortCounters)) << w.str();
  for (const auto& [name, n] : e.help) EXPECT_EQ(n, 1) << name;
  EXPECT_EQ(e.help.size(), e.type.size());
  for (const NamedPort& p : ports)
    for (const CounterDef& c : kPortCounters) {
      std::map<std::string, std::string> want = {{"port", std::string(p.name)}};
      if (c.metric.label) want[c.metric.label] = std::string(c.name());
      int found = 0;
      for (const Sample& s : e.samples)
        if (s.name == c.metric.name && s.labels == want) {
          ++found;
          EXPECT_EQ(s.value, (*p.values)[c]) << c.path;
        }
      EXPECT_EQ(found, 1) << c.path << " for " << p.name << "\n" << w.str();
      EXPECT_EQ(e.type.at(c.metric.name), c.metric.type == MetricType::kCounter ? "counter" : "gauge");
    }
}

TEST(StatsPrometheus, PoolCapacityAndEveryPlace) {
  const PoolValues p = distinctPool();
  PromWriter w;
  putPoolMetrics(w, p);
  const Exposition e = parseProm(w.str());
  ASSERT_EQ(e.samples.size(), std::size(kPoolCounters)) << w.str();
  for (const CounterDef& c : kPoolCounters) {
    int found = 0;
    for (const Sample& s : e.samples) {
      const bool match = c.metric.label ? s.labels == std::map<std::string, std::string>{{c.metric.label, c.path}}
                                        : s.labels.empty();
      if (s.name == c.metric.name && match) {
        ++found;
        EXPECT_EQ(s.value, p[c]) << c.path;
      }
    }
    EXPECT_EQ(found, 1) << c.path << "\n" << w.str();
  }
  EXPECT_EQ(e.type.at("vdev_pool_frames"), "gauge");
  EXPECT_EQ(e.type.at("vdev_pool_capacity_frames"), "gauge");
}

TEST(StatsPrometheus, EscapesLabelsAndHelp) {
  EXPECT_EQ(promEscapeLabel("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  PromWriter w;
  w.family("m", "gauge", "x\\y\nz \"q\"");
  w.sample("m", {{"k", "v\n"}}, 3);
  w.sample("m", {}, 4);
  EXPECT_EQ(w.str(), "# HELP m x\\\\y\\nz \"q\"\n# TYPE m gauge\nm{k=\"v\\n\"} 3\nm 4\n");
}

}  // namespace
}  // namespace vdev::stats
