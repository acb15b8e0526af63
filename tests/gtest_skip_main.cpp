// main() for every GoogleTest binary of vdev.
//
// ctest learns that a binary was skipped from its exit status 77
// (SKIP_RETURN_CODE), never from matching "[  SKIPPED ]" in the output,
// which would also hide a failure in a binary where some tests skipped.
// 77 is returned only when no test failed, none passed, and some skipped
// (e.g. a privileged suite run without root: each test says why).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  const auto* ut = ::testing::UnitTest::GetInstance();
  if (rc == 0 && ut->successful_test_count() == 0 && ut->skipped_test_count() > 0) return 77;
  return rc;
}
