// json_writer.h - a minimal streaming JSON writer (objects, arrays, scalars).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace vdev::bench {

class JsonWriter {
 public:
  JsonWriter& beginObject() { open('{'); return *this; }
  JsonWriter& endObject() { close('}'); return *this; }
  JsonWriter& beginArray() { open('['); return *this; }
  JsonWriter& endArray() { close(']'); return *this; }
  JsonWriter& key(const std::string& k) {
    sep();
    str(k);
    out_ += ": ";
    afterKey_ = true;
    return *this;
  }
  JsonWriter& value(const std::string& v) { sep(); str(v); return *this; }
  JsonWriter& value(const char* v) { return value(std::string(v)); }
  JsonWriter& value(bool v) { sep(); out_ += v ? "true" : "false"; return *this; }
  JsonWriter& value(uint64_t v) { sep(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(int v) { sep(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(double v, int decimals = 6) {
    sep();
    if (!std::isfinite(v)) {
      out_ += "null";
    } else {
      char b[64];
      snprintf(b, sizeof b, "%.*f", decimals, v);
      out_ += b;
    }
    return *this;
  }
  JsonWriter& null() { sep(); out_ += "null"; return *this; }
  // A value that is already JSON text (e.g. vdevd's statistics file).
  JsonWriter& raw(const std::string& json) { sep(); out_ += json; return *this; }
  template <class T>
  JsonWriter& field(const std::string& k, const T& v) { key(k); return value(v); }

  const std::string& str() const { return out_; }

 private:
  void sep() {
    if (afterKey_) {
      afterKey_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ",";
      first_.back() = false;
      newline();
    }
  }
  void open(char c) {
    sep();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += c;
  }
  void newline() {
    out_ += '\n';
    out_.append(first_.size() * 2, ' ');
  }
  void str(const std::string& s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        case '\r': out_ += "\\r"; break;
        default:
          if (c < 0x20) {
            char b[8];
            snprintf(b, sizeof b, "\\u%04x", c);
            out_ += b;
          } else {
            out_ += static_cast<char>(c);
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool afterKey_ = false;
};

}  // namespace vdev::bench
