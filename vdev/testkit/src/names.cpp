#include "testkit/names.h"

#include <unistd.h>

#include <atomic>

namespace vdev::testkit {

namespace {
std::string base36(uint64_t v) {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v % 36]);
    v /= 36;
  } while (v);
  return s;
}
}  // namespace

std::string uniqueName(std::string_view tag, char role) {
  static std::atomic<uint32_t> counter{0};
  return std::string(tag) + base36(uint64_t(::getpid())) + role + base36(counter.fetch_add(1));
}

Mac uniqueMac(uint8_t tag) {
  static std::atomic<uint32_t> counter{1};
  const uint32_t n = counter.fetch_add(1);
  const uint32_t pid = uint32_t(::getpid());
  return {0x02, tag, uint8_t(pid >> 8), uint8_t(pid), uint8_t(n >> 8), uint8_t(n)};
}

}  // namespace vdev::testkit
