// libFuzzer target: vdev-cni's parsers of untrusted input
// (tools/vdev-cni/src/cni.cpp): the network configuration on stdin for
// every command, a result (prevResult, an IPAM plugin's output), and the
// CNI_* environment.
//
// Besides "no crash, no UB" (ASan + UBSan), these properties:
//  - every failure is a CniError (what the plugin turns into its error
//    JSON), never another exception that would end it without an answer;
//  - that error JSON, and a result that decodes, print as text whatever
//    bytes they hold (dumpJson): the runtime always gets an answer;
//  - a result that decodes, encoded in its version and decoded again, is
//    the same result.
//
// Input: byte 0 picks the command; the rest is the configuration text. The
// environment is built from the same bytes (split at the first NULs), so
// non-UTF-8 and odd values reach CNI_CONTAINERID, CNI_IFNAME and CNI_ARGS.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "cni.h"

namespace {

using namespace vdev::cni;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "cni_conf_fuzz: property violated: %s\n", what);
  std::abort();
}

constexpr Command kCommands[] = {Command::kAdd, Command::kDel, Command::kCheck,
                                 Command::kVersion, Command::kGc, Command::kStatus};

void answerable(const CniError& e) {
  const std::string s = dumpJson(encodeError(e, kLatestVersion), 4);
  if (s.empty()) fail("empty error JSON");
}

bool sameResult(const Result& a, const Result& b) {
  return dumpJson(encodeResult(a, kLatestVersion)) == dumpJson(encodeResult(b, kLatestVersion));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Command cmd = kCommands[data[0] % std::size(kCommands)];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    NetConf c = parseNetConf(text, cmd);
    if (c.prevResult) {
      const Result r = decodeResult(encodeResult(*c.prevResult, c.cniVersion), "again");
      (void)dumpJson(encodeResult(r, c.cniVersion));
    }
    (void)dumpJson(c.raw);
  } catch (const CniError& e) {
    answerable(e);
  } catch (...) {
    fail("parseNetConf threw something other than CniError");
  }
  (void)peekVersion(text);

  // The same bytes as a result (an IPAM plugin's output).
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_discarded()) {
    try {
      const Result r = decodeResult(j, "the IPAM plugin's result");
      const Result back = decodeResult(encodeResult(r, kLatestVersion), "again");
      if (!sameResult(r, back)) fail("a result does not survive encode + decode");
    } catch (const CniError& e) {
      answerable(e);
    } catch (...) {
      fail("decodeResult threw something other than CniError");
    }
  }

  // The environment: values cut from the input at NULs.
  std::map<std::string, std::string> env;
  const char* keys[] = {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS"};
  size_t pos = 0;
  for (const char* k : keys) {
    const size_t end = text.find('\0', pos);
    env[k] = std::string(text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  env["CNI_COMMAND"] = commandName(cmd);
  env["CNI_PATH"] = "/usr/lib/cni";
  try {
    (void)parseEnv(env);
  } catch (const CniError& e) {
    answerable(e);
  } catch (...) {
    fail("parseEnv threw something other than CniError");
  }
  return 0;
}
