// Writers of the counter table (stats/format.h).
#include "stats/format.h"

#include <algorithm>
#include <vector>

namespace vdev::stats {

namespace {

bool wanted(const CounterDef& c, std::optional<Origin> only) { return !only || c.origin == *only; }

const char* typeName(MetricType t) { return t == MetricType::kCounter ? "counter" : "gauge"; }

}  // namespace

// ---------------------------------------------------------------- JSON

void putPortCounters(Json& obj, const PortValues& v, std::optional<Origin> only) {
  for (const CounterDef& c : kPortCounters) {
    if (!wanted(c, only)) continue;
    const std::string name(c.name());
    if (c.group().empty())
      obj[name] = v[c];
    else
      obj[std::string(c.group())][name] = v[c];
  }
}

Json poolJson(const PoolValues& v) {
  Json o = Json::object();
  for (const CounterDef& c : kPoolCounters) o[std::string(c.name())] = v[c];
  o["sum"] = v.sum();
  return o;
}

std::string jsonText(const Json& j, bool pretty) {
  return j.dump(pretty ? 2 : -1, ' ', false, Json::error_handler_t::replace) + "\n";
}

// ---------------------------------------------------------------- text

std::string portText(const PortValues& v, std::optional<Origin> only) {
  constexpr size_t kIndent = 4, kNameWidth = 10, kWidth = 80;
  std::string out, line;
  std::string_view cur;  // the text line being written
  bool drops = true;     // every counter of the line is a drop reason
  bool any = false;      // the line has a counter after its name
  // Width of the last physical line of `line`.
  const auto lastWidth = [&] {
    const size_t nl = line.rfind('\n');
    return nl == std::string::npos ? line.size() : line.size() - nl - 1;
  };
  const auto finish = [&] {
    if (line.empty()) return;
    if (drops) {
      const std::string total = "(total " + std::to_string(v.totalDrops()) + ")";
      if (lastWidth() + 2 + total.size() > kWidth) {
        line += "\n";
        line.append(kIndent + kNameWidth - 2, ' ');
      }
      line += "  " + total;
    }
    out += line + "\n";
    line.clear();
  };
  for (const CounterDef& c : kPortCounters) {
    if (!wanted(c, only)) continue;
    if (line.empty() || c.textLine() != cur) {
      finish();
      cur = c.textLine();
      line.assign(kIndent, ' ');
      line += cur;
      line.resize(std::max(line.size() + 1, kIndent + kNameWidth), ' ');
      drops = true;
      any = false;
    }
    const std::string item = std::string(c.textLabel()) + " " + std::to_string(v[c]);
    if (any && lastWidth() + 1 + item.size() > kWidth) {
      line += "\n";
      line.append(kIndent + kNameWidth, ' ');
    } else if (any) {
      line += " ";
    }
    line += item;
    any = true;
    drops = drops && c.id < kNumDropReasons;
  }
  finish();
  return out;
}

std::string poolText(const PoolValues& v) {
  std::string o = "total " + std::to_string(v[kPoolTotal]) + " =";
  bool first = true;
  for (const CounterDef& c : kPoolCounters) {
    if (c.id == kPoolTotal) continue;
    o += first ? " " : " + ";
    o += std::string(c.textLabel()) + " " + std::to_string(v[c]);
    first = false;
  }
  const uint64_t sum = v.sum();
  o += " (sum " + std::to_string(sum) + (sum == v[kPoolTotal] ? ", adds up)" : ", MISMATCH)");
  return o;
}

// ---------------------------------------------------------------- Prometheus

std::string promEscapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void PromWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  // HELP text escapes backslash and line feed (not the quote).
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  for (char c : help) {
    if (c == '\\')
      out_ += "\\\\";
    else if (c == '\n')
      out_ += "\\n";
    else
      out_ += c;
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PromWriter::family(const Metric& m) { family(m.name, typeName(m.type), m.help); }

void PromWriter::sample(std::string_view name, Labels labels, uint64_t value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += k;
      out_ += "=\"";
      out_ += promEscapeLabel(v);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

namespace {

// Each metric of `rows` once, in row order, with the samples of every row
// that belongs to it: per object (a port, or the pool: no name) in order.
template <typename V>
void putMetrics(PromWriter& w, std::span<const CounterDef> rows,
                std::span<const std::pair<std::string_view, const V*>> objects, bool named) {
  std::vector<std::string_view> done;
  for (const CounterDef& m : rows) {
    const std::string_view metric = m.metric.name;
    if (std::find(done.begin(), done.end(), metric) != done.end()) continue;
    done.push_back(metric);
    w.family(m.metric);
    for (const auto& [name, values] : objects)
      for (const CounterDef& c : rows) {
        if (std::string_view(c.metric.name) != metric) continue;
        std::pair<std::string_view, std::string_view> labels[2];
        size_t n = 0;
        if (named) labels[n++] = {"port", name};
        if (c.metric.label) labels[n++] = {c.metric.label, c.name()};
        w.sample(metric, PromWriter::Labels(labels, n), (*values)[c]);
      }
  }
}

}  // namespace

void putPortMetrics(PromWriter& w, std::span<const NamedPort> ports) {
  std::vector<std::pair<std::string_view, const PortValues*>> objs;
  for (const NamedPort& p : ports) objs.emplace_back(p.name, p.values);
  putMetrics<PortValues>(w, kPortCounters, objs, true);
}

void putPoolMetrics(PromWriter& w, const PoolValues& pool) {
  const std::pair<std::string_view, const PoolValues*> one[] = {{"", &pool}};
  putMetrics<PoolValues>(w, kPoolCounters, one, false);
}

}  // namespace vdev::stats
