// The writers of the counters in stats/counters.h -- JSON, text and the
// Prometheus exposition format -- and the JSON reader. Every output of a
// counter comes from here, named by its row: vdevd's --stats-json file and
// SIGUSR1 table, `vdevctl stats` (text, -j, --prometheus), `vdevctl port
// show -s`. Pure string building, thread safe.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "stats/counters.h"

namespace vdev::stats {

// Objects keep their fields in the order they were written.
using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------- JSON

// Adds every counter of `v` to the object `obj` at its path, in row order:
// a field of `obj` itself ("rx_packets") or of a nested object ("drops":
// {"runt": ...}), created at the first of its counters. `only`: just the
// counters of that origin (a removed port's totals: kCounted).
void putPortCounters(Json& obj, const PortValues& v, std::optional<Origin> only = std::nullopt);
// {"total": N, <every place>: N, "sum": <the places added up>}.
Json poolJson(const PoolValues& v);

// The counters an object written by putPortCounters() (or poolJson()) has,
// found at their paths; a counter it does not have (a writer older than this
// table) is 0. EINVAL, naming the path, for one that is not an unsigned
// integer. For nlohmann::json and nlohmann::ordered_json alike.
template <typename J>
Result<PortValues> readPortCounters(const J& obj);
template <typename J>
Result<PoolValues> readPool(const J& obj);

// A document as one line (pretty: two-space indentation), with a final
// newline. Never throws: bytes that are not UTF-8 become U+FFFD.
std::string jsonText(const Json& j, bool pretty = false);

// ---------------------------------------------------------------- text

// A port's counters for people: one line per text line of the rows (rx, tx,
// drops, xdp_stats, xdp_prog, dev), each "    <line>  <label> <value> ...",
// continued on aligned lines past 80 columns; the drops line ends with
// "(total N)". `only`: as for putPortCounters().
//
//     rx        packets 40 bytes 30960
//     drops     ring_full 0 tx_ring_full 0 ...  (total 0)
std::string portText(const PortValues& v, std::optional<Origin> only = std::nullopt);
// "total 32768 = free 28672 + fill_ring 4096 + ... (sum 32768, adds up)":
// "MISMATCH" instead of "adds up" when the places do not add up to the total.
std::string poolText(const PoolValues& v);

// ---------------------------------------------------------------- Prometheus

// The text exposition format 0.0.4.
class PromWriter {
 public:
  using Labels = std::span<const std::pair<std::string_view, std::string_view>>;
  // Starts a metric family: "# HELP name help" and "# TYPE name type"
  // (counter or gauge). Each family once, before its samples.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void family(const Metric& m);
  // One sample: name{k1="v1",...} value. Label values are escaped (\\, \", \n).
  void sample(std::string_view name, Labels labels, uint64_t value);
  void sample(std::string_view name,
              std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
              uint64_t value) {
    sample(name, Labels(labels.begin(), labels.size()), value);
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// Escapes a label value: backslash, double quote and line feed become \\,
// \" and \n.
std::string promEscapeLabel(std::string_view v);

struct NamedPort {
  std::string_view name;
  const PortValues* values;
};
// Every port counter's metric, in row order: its family once (a labelled one,
// such as the drops by reason, at its first row), then per port one sample
// per counter, labelled port="<name>" (and reason="<name>" ...).
void putPortMetrics(PromWriter& w, std::span<const NamedPort> ports);
// The pool's metrics: the capacity, and the frames by place.
void putPoolMetrics(PromWriter& w, const PoolValues& pool);

// ---------------------------------------------------------------- details

namespace detail {
template <typename J, typename V>
Status readRows(const J& obj, std::span<const CounterDef> rows, V& out) {
  if (!obj.is_object()) return Error{EINVAL, "counters: not a JSON object"};
  for (const CounterDef& c : rows) {
    const J* o = &obj;
    const std::string group(c.group()), name(c.name());
    if (!group.empty()) {
      auto g = obj.find(group);
      if (g == obj.end()) continue;
      if (!g->is_object()) return Error{EINVAL, std::string("counters: ") + group + " is not an object"};
      o = &*g;
    }
    auto it = o->find(name);
    if (it == o->end()) continue;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->template get<int64_t>() >= 0))
      return Error{EINVAL, std::string("counters: ") + c.path + " is not an unsigned integer"};
    out[c] = it->template get<uint64_t>();
  }
  return {};
}
}  // namespace detail

template <typename J>
Result<PortValues> readPortCounters(const J& obj) {
  PortValues v;
  if (Status s = detail::readRows(obj, kPortCounters, v); !s) return s.error();
  return v;
}

template <typename J>
Result<PoolValues> readPool(const J& obj) {
  PoolValues v;
  if (Status s = detail::readRows(obj, kPoolCounters, v); !s) return s.error();
  return v;
}

}  // namespace vdev::stats
