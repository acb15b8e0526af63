// libFuzzer target: vdevd's state file parser (vdev/daemon/src/state_file.cpp),
// strict and lenient, on arbitrary bytes.
//
// Besides "no crash, no UB" (ASan + UBSan), these properties:
//  - what the lenient parser keeps serialises into a text the strict parser
//    accepts and reads back as the same state;
//  - the strict parser accepts a text exactly when the lenient one finds no
//    problem, and then both read the same state;
//  - every port kept has a name the protocol accepts (vdevd restores it as
//    a port by that name).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "daemon/state_file.h"
#include "proto/codec.h"

namespace {

using namespace vdev::daemon;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "state_file_fuzz: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kStateFileMax) return 0;  // loadState reads no more
  const std::string text(reinterpret_cast<const char*>(data), size);
  const LenientState l = parseStateLenient(text);
  for (const auto& p : l.state.ports)
    if (!vdev::proto::validateIfname(p.name, "name")) fail("kept a port whose name the protocol refuses");
  auto again = parseState(serializeState(l.state));
  if (!again) fail("serialised lenient state does not parse strictly");
  if (!(again.value() == l.state)) fail("serialised lenient state reads back differently");
  auto strict = parseState(text);
  if (strict.ok() != l.problems.empty()) fail("strict and lenient disagree on whether the text is good");
  if (strict && !(strict.value() == l.state)) fail("strict and lenient read different states");
  return 0;
}
