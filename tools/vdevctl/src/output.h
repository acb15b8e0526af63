// vdevctl's output writers: JSON (-j), aligned text tables, and the
// Prometheus text exposition format. Pure string building; the commands
// decide what goes in and write the result to stdout. Counters are written
// by the counter table's writers (stats/format.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stats/format.h"

namespace vdev::ctl {

// JSON (-j): nlohmann's ordered_json, which keeps fields in the order they
// are set; counters are exact uint64. jsonText() prints a document (-p:
// indented).
using Json = vdev::stats::Json;
using vdev::stats::jsonText;
// A rate or a time with `decimals` digits after the point, as fixed()
// writes it ("2.5", "812345"); non-finite -> null.
Json jsonNumber(double v, int decimals);

// A text table: a header row and data rows, columns padded to their widest
// cell and separated by two spaces; numeric columns right-aligned. No
// trailing blanks.
class Table {
 public:
  struct Column {
    std::string header;
    bool right = false;  // right-align (numbers)
  };
  explicit Table(std::vector<Column> cols) : cols_(std::move(cols)) {}
  void row(std::vector<std::string> cells);
  std::string render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<Column> cols_;
  std::vector<std::vector<std::string>> rows_;
};

// Prometheus text exposition format 0.0.4: the writer of the counter
// table's metrics (stats/format.h), also for vdevctl's own.
using vdev::stats::PromWriter;

// "1", "2.5", "1234.57": fixed decimals with trailing zeros trimmed.
std::string fixed(double v, int decimals);
// Seconds as "3d 4h 5m 6s" (largest units first, zero units left out; "0s").
std::string duration(uint64_t seconds);

}  // namespace vdev::ctl
