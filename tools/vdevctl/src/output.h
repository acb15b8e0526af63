// vdevctl's output writers: JSON (-j), aligned text tables, and the
// Prometheus text exposition format. Pure string building; the commands
// decide what goes in and write the result to stdout.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vdev::ctl {

// A streaming JSON writer: keys and values in order, commas and (with
// `pretty`) newlines and indentation added where they belong. Strings are
// escaped per RFC 8259 (quote, backslash, control characters); other bytes
// pass through (interface names are ASCII). Integers are written exactly
// (uint64 counters never go through a double). Misuse (a value where a key is
// due) is a programming error and is not diagnosed.
class JsonWriter {
 public:
  explicit JsonWriter(bool pretty = false) : pretty_(pretty) {}

  JsonWriter& beginObject() { return open('{'); }
  JsonWriter& endObject() { return close('}'); }
  JsonWriter& beginArray() { return open('['); }
  JsonWriter& endArray() { return close(']'); }
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) JsonWriter& value(T v) { return u64(v); }
  template <std::signed_integral T>
  JsonWriter& value(T v) {
    return i64(v);
  }
  // A double with `decimals` digits after the point (rates); non-finite -> null.
  JsonWriter& number(double v, int decimals = 3);
  JsonWriter& null();

  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // The document so far, plus a final newline once everything is closed.
  std::string str() const { return out_ + "\n"; }

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  JsonWriter& u64(uint64_t v);
  JsonWriter& i64(int64_t v);
  void beforeValue();
  void newline();

  std::string out_;
  std::vector<bool> empty_;  // per open container: nothing written in it yet
  bool afterKey_ = false;
  bool pretty_;
};

// Appends s as a JSON string literal (with quotes) to out.
void appendJsonString(std::string& out, std::string_view s);

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

// Prometheus text exposition format 0.0.4.
class PromWriter {
 public:
  // Starts a metric family: "# HELP name help" and "# TYPE name type"
  // (type: counter or gauge). Each family once, before its samples.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample: name{k1="v1",...} value. Label values are escaped (\\, \", \n).
  void sample(std::string_view name,
              std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
              uint64_t value);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// Escapes a label value for the exposition format: backslash, double quote
// and line feed become \\, \" and \n.
std::string promEscapeLabel(std::string_view v);

// "1", "2.5", "1234.57": fixed decimals with trailing zeros trimmed.
std::string fixed(double v, int decimals);
// Seconds as "3d 4h 5m 6s" (largest units first, zero units left out; "0s").
std::string duration(uint64_t seconds);

}  // namespace vdev::ctl
