#include "output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vdev::ctl {

// ---------------------------------------------------------------- JSON

Json jsonNumber(double v, int decimals) {
  if (!std::isfinite(v)) return nullptr;
  // Through the text fixed() makes, so that the number printed is exactly
  // that (shortest round trip of the parsed double), and an integer without
  // a point.
  const std::string s = fixed(v, decimals);
  const double d = std::strtod(s.c_str(), nullptr);
  if (s.find('.') == std::string::npos && std::fabs(d) < 9e15) return int64_t(d);  // exact
  return d;
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
