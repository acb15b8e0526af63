// A minimal JSON reader for the e2e harness: vdevd's --stats-json file and
// `ip -j` output. Not a general-purpose library: no writer, no streaming; it
// keeps unsigned integers exact (counters are uint64) and reports malformed
// input with the offset. Throws JsonError (test code; never the data plane).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vdev::e2e {

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  // Parses a whole document; trailing non-space is an error.
  static Json parse(std::string_view text);

  Type type() const { return type_; }
  bool isNull() const { return type_ == Type::kNull; }
  bool isObject() const { return type_ == Type::kObject; }
  bool isArray() const { return type_ == Type::kArray; }

  // Typed access; throws JsonError naming the expected type on mismatch.
  bool asBool() const;
  uint64_t asU64() const;  // a non-negative integer that fits
  int64_t asI64() const;
  double asDouble() const;
  const std::string& asString() const;
  const std::vector<Json>& asArray() const;
  const std::map<std::string, Json, std::less<>>& asObject() const;

  bool has(std::string_view key) const;       // false if not an object
  const Json& operator[](std::string_view key) const;  // throws if missing
  const Json& operator[](size_t i) const;     // throws if out of range
  size_t size() const;                        // array or object size

  // Compact re-serialisation, for failure messages.
  std::string dump() const;

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  bool isInteger_ = false;
  bool negative_ = false;
  uint64_t u64_ = 0;  // magnitude when isInteger_
  double number_ = 0;
  std::string string_;
  std::vector<Json> array_;
  std::map<std::string, Json, std::less<>> object_;
};

}  // namespace vdev::e2e
