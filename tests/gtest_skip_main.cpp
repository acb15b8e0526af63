// main() for every GoogleTest binary of vdev.
//
// ctest learns that a binary was skipped from its exit status 77
// (SKIP_RETURN_CODE), never from matching "[  SKIPPED ]" in the output,
// which would also hide a failure in a binary where some tests skipped.
// 77 is returned only when no test failed, none passed, and some skipped
// (e.g. a privileged suite run without root: each test says why).
//
// A single skip inside a binary whose other tests passed would otherwise be
// invisible in ctest's summary, so:
//  - every skipped test is appended, with its reason, to $VDEV_SKIP_LOG when
//    that is set (`make test` prints the file at the end);
//  - with VDEV_FAIL_ON_SKIP=1 (CI) any skipped test fails the binary: CI
//    installs everything the tests need, so a skip there is a missing
//    dependency, not a feature of the machine;
//  - with --vdev-privileged (the ctest entry of a binary's privileged tests,
//    see vdev_add_gtest) a test that passes without root fails the binary: it
//    belongs to the unprivileged entry, where its pass cannot hide the
//    privileged tests' skips.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Outcome {
  std::string name;
  std::string reason;
};

// Every test that skipped (with the first skip message) or passed.
void collect(std::vector<Outcome>& skipped, std::vector<Outcome>& passed) {
  const auto* ut = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < ut->total_test_suite_count(); ++i) {
    const auto* suite = ut->GetTestSuite(i);
    for (int j = 0; j < suite->total_test_count(); ++j) {
      const auto* info = suite->GetTestInfo(j);
      if (!info->should_run()) continue;
      const auto* result = info->result();
      const std::string name = std::string(suite->name()) + "." + info->name();
      if (result->Skipped()) {
        std::string reason;
        for (int k = 0; k < result->total_part_count(); ++k) {
          const auto& part = result->GetTestPartResult(k);
          if (part.skipped()) {
            reason = part.message();
            break;
          }
        }
        while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
        skipped.push_back({name, reason.empty() ? "(no reason given)" : reason});
      } else if (result->Passed()) {
        passed.push_back({name, {}});
      }
    }
  }
}

std::string programName(const char* argv0) {
  const char* slash = std::strrchr(argv0, '/');
  return slash ? slash + 1 : argv0;
}

void appendSkipLog(const std::string& program, const std::vector<Outcome>& skipped) {
  const char* path = std::getenv("VDEV_SKIP_LOG");
  if (!path || !*path || skipped.empty()) return;
  std::string text;
  for (const Outcome& s : skipped) {
    std::string reason = s.reason;
    for (char& c : reason)
      if (c == '\n') c = ' ';
    text += program + ": " + s.name + ": " + reason + "\n";
  }
  // O_APPEND: binaries never run concurrently here, but a line must not be
  // torn if they ever do.
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  bool privileged = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--vdev-privileged") == 0) privileged = true;
    else args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  ::testing::InitGoogleTest(&n, args.data());
  int rc = RUN_ALL_TESTS();
  const auto* ut = ::testing::UnitTest::GetInstance();

  std::vector<Outcome> skipped, passed;
  collect(skipped, passed);
  const std::string program = programName(argv[0]);
  appendSkipLog(program, skipped);

  const char* failOnSkip = std::getenv("VDEV_FAIL_ON_SKIP");
  if (failOnSkip && std::strcmp(failOnSkip, "1") == 0 && !skipped.empty()) {
    std::cerr << program << ": VDEV_FAIL_ON_SKIP=1 and " << skipped.size() << " test(s) skipped:\n";
    for (const Outcome& s : skipped) std::cerr << "  " << s.name << ": " << s.reason << "\n";
    return 1;
  }
  if (privileged && ::geteuid() != 0 && !passed.empty()) {
    std::cerr << program << ": " << passed.size()
              << " test(s) of the privileged entry passed without root; list them in the binary's"
                 " UNPRIVILEGED filter (tests/CMakeLists.txt, vdev_add_gtest):\n";
    for (const Outcome& p : passed) std::cerr << "  " << p.name << "\n";
    return 1;
  }
  if (rc == 0 && ut->successful_test_count() == 0 && ut->skipped_test_count() > 0) return 77;
  return rc;
}
