#include "json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace vdev::e2e {

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  Json document() {
    Json v = value(0);
    ws();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& why) const {
    throw JsonError("JSON: " + why + " at offset " + std::to_string(pos_));
  }

  void ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }

  char peek() {
    ws();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }

  void expect(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) fail("expected '" + std::string(lit) + "'");
    pos_ += lit.size();
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    Json v;
    const char c = peek();
    if (c == '{') {
      v.type_ = Json::Type::kObject;
      ++pos_;
      if (peek() == '}') { ++pos_; return v; }
      for (;;) {
        if (peek() != '"') fail("expected a key");
        std::string key = string();
        if (peek() != ':') fail("expected ':'");
        ++pos_;
        v.object_.insert_or_assign(std::move(key), value(depth + 1));
        const char d = peek();
        ++pos_;
        if (d == '}') break;
        if (d != ',') fail("expected ',' or '}'");
      }
    } else if (c == '[') {
      v.type_ = Json::Type::kArray;
      ++pos_;
      if (peek() == ']') { ++pos_; return v; }
      for (;;) {
        v.array_.push_back(value(depth + 1));
        const char d = peek();
        ++pos_;
        if (d == ']') break;
        if (d != ',') fail("expected ',' or ']'");
      }
    } else if (c == '"') {
      v.type_ = Json::Type::kString;
      v.string_ = string();
    } else if (c == 't') {
      expect("true");
      v.type_ = Json::Type::kBool;
      v.bool_ = true;
    } else if (c == 'f') {
      expect("false");
      v.type_ = Json::Type::kBool;
    } else if (c == 'n') {
      expect("null");
    } else {
      number(v);
    }
    return v;
  }

  void number(Json& v) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    bool integer = true;
    size_t digits = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c >= '0' && c <= '9') ++digits;
      else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') integer = false;
      else break;
      ++pos_;
    }
    if (digits == 0) fail("expected a value");
    const std::string text(s_.substr(start, pos_ - start));
    v.type_ = Json::Type::kNumber;
    char* end = nullptr;
    v.number_ = std::strtod(text.c_str(), &end);
    if (*end) fail("bad number '" + text + "'");
    if (integer) {
      const bool neg = text[0] == '-';
      errno = 0;
      const unsigned long long m = std::strtoull(text.c_str() + (neg ? 1 : 0), &end, 10);
      if (errno == 0 && !*end) {
        v.isInteger_ = true;
        v.negative_ = neg && m != 0;
        v.u64_ = m;
      }
    }
  }

  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | cp >> 6);
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | cp >> 12);
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | cp >> 18);
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail("short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else fail("bad \\u escape");
    }
    return v;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            const uint32_t lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

Json Json::parse(std::string_view text) { return JsonParser(text).document(); }

namespace {
const char* typeName(Json::Type t) {
  switch (t) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "bool";
    case Json::Type::kNumber: return "number";
    case Json::Type::kString: return "string";
    case Json::Type::kArray: return "array";
    case Json::Type::kObject: return "object";
  }
  return "?";
}
[[noreturn]] void mismatch(const Json& j, const char* want) {
  throw JsonError(std::string("JSON: expected ") + want + ", got " + typeName(j.type()) + ": " +
                  j.dump().substr(0, 200));
}
}  // namespace

bool Json::asBool() const {
  if (type_ != Type::kBool) mismatch(*this, "bool");
  return bool_;
}

uint64_t Json::asU64() const {
  if (type_ != Type::kNumber || !isInteger_ || negative_) mismatch(*this, "unsigned integer");
  return u64_;
}

int64_t Json::asI64() const {
  if (type_ != Type::kNumber || !isInteger_ || u64_ > uint64_t(INT64_MAX))
    mismatch(*this, "integer");
  return negative_ ? -int64_t(u64_) : int64_t(u64_);
}

double Json::asDouble() const {
  if (type_ != Type::kNumber) mismatch(*this, "number");
  return number_;
}

const std::string& Json::asString() const {
  if (type_ != Type::kString) mismatch(*this, "string");
  return string_;
}

const std::vector<Json>& Json::asArray() const {
  if (type_ != Type::kArray) mismatch(*this, "array");
  return array_;
}

const std::map<std::string, Json, std::less<>>& Json::asObject() const {
  if (type_ != Type::kObject) mismatch(*this, "object");
  return object_;
}

bool Json::has(std::string_view key) const {
  return type_ == Type::kObject && object_.find(key) != object_.end();
}

const Json& Json::operator[](std::string_view key) const {
  const auto& o = asObject();
  const auto it = o.find(key);
  if (it == o.end()) throw JsonError("JSON: no key \"" + std::string(key) + "\" in " + dump().substr(0, 300));
  return it->second;
}

const Json& Json::operator[](size_t i) const {
  const auto& a = asArray();
  if (i >= a.size()) throw JsonError("JSON: index " + std::to_string(i) + " out of range");
  return a[i];
}

size_t Json::size() const {
  if (type_ == Type::kArray) return array_.size();
  if (type_ == Type::kObject) return object_.size();
  mismatch(*this, "array or object");
}

std::string Json::dump() const {
  switch (type_) {
    case Type::kNull: return "null";
    case Type::kBool: return bool_ ? "true" : "false";
    case Type::kNumber: {
      if (isInteger_) return (negative_ ? "-" : "") + std::to_string(u64_);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", number_);
      return buf;
    }
    case Type::kString: {
      std::string out = "\"";
      for (const char c : string_) {
        if (c == '"' || c == '\\') { out += '\\'; out += c; }
        else if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else out += c;
      }
      return out + "\"";
    }
    case Type::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < array_.size(); ++i) out += (i ? "," : "") + array_[i].dump();
      return out + "]";
    }
    case Type::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : object_) {
        out += (first ? "\"" : ",\"") + k + "\":" + v.dump();
        first = false;
      }
      return out + "}";
    }
  }
  return "";
}

}  // namespace vdev::e2e
