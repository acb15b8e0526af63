#include "output.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace vdev::ctl {

// ---------------------------------------------------------------- JSON

void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void JsonWriter::newline() {
  if (!pretty_) return;
  out_ += '\n';
  out_.append(2 * empty_.size(), ' ');
}

// Before a key, or a value that is not a key's: the separator from the
// previous element of the enclosing container.
void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (empty_.empty()) return;
  if (!empty_.back()) out_ += pretty_ ? "," : ", ";
  empty_.back() = false;
  newline();  // pretty: every element on its own line
}

JsonWriter& JsonWriter::open(char c) {
  beforeValue();
  out_ += c;
  empty_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(char c) {
  const bool wasEmpty = empty_.back();
  empty_.pop_back();
  if (!wasEmpty) newline();
  out_ += c;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  beforeValue();
  appendJsonString(out_, k);
  out_ += ": ";
  afterKey_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  beforeValue();
  appendJsonString(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  beforeValue();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::u64(uint64_t v) {
  beforeValue();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::i64(int64_t v) {
  beforeValue();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::number(double v, int decimals) {
  if (!std::isfinite(v)) return null();
  beforeValue();
  out_ += fixed(v, decimals);
  return *this;
}

JsonWriter& JsonWriter::null() {
  beforeValue();
  out_ += "null";
  return *this;
}

// ---------------------------------------------------------------- tables

void Table::row(std::vector<std::string> cells) {
  cells.resize(cols_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<size_t> width(cols_.size());
  for (size_t i = 0; i < cols_.size(); ++i) width[i] = cols_[i].header.size();
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  auto line = [&](const auto& cell) {
    std::string out;
    for (size_t i = 0; i < cols_.size(); ++i) {
      const std::string& s = cell(i);
      const size_t pad = width[i] - s.size();
      if (i) out += "  ";
      if (cols_[i].right) out.append(pad, ' ');
      out += s;
      if (!cols_[i].right && i + 1 < cols_.size()) out.append(pad, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line([&](size_t i) -> const std::string& { return cols_[i].header; });
  for (const auto& r : rows_) out += line([&](size_t i) -> const std::string& { return r[i]; });
  return out;
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

void PromWriter::sample(std::string_view name,
                        std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
                        uint64_t value) {
  out_ += name;
  if (labels.size()) {
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

// ---------------------------------------------------------------- numbers

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string duration(uint64_t s) {
  const uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
  std::string out;
  auto part = [&](uint64_t v, const char* unit) {
    if (!v) return;
    if (!out.empty()) out += ' ';
    out += std::to_string(v) + unit;
  };
  part(d, "d");
  part(h, "h");
  part(m, "m");
  part(sec, "s");
  return out.empty() ? "0s" : out;
}

}  // namespace vdev::ctl
