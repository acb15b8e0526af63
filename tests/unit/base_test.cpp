// base/: MAC text form and strict number parsing, the one copy every module uses.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <fcntl.h>

#include "base/fd.h"
#include "base/ip.h"
#include "base/mac.h"
#include "base/netns.h"
#include "base/parse.h"

namespace vdev {
namespace {

TEST(Mac, ParsesEitherCaseAndFormatsLowerCase) {
  const auto m = parseMac("02:aB:00:ff:10:01");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (Mac{0x02, 0xab, 0x00, 0xff, 0x10, 0x01}));
  EXPECT_EQ(formatMac(*m), "02:ab:00:ff:10:01");
  EXPECT_TRUE(macIsLocal(*m));
  EXPECT_FALSE(macIsMulticast(*m));
}

TEST(Mac, RefusesEverythingElse) {
  for (const char* s : {"", "02:ab:00:ff:10", "02:ab:00:ff:10:01:02", "02-ab-00-ff-10-01", "0g:ab:00:ff:10:01",
                        "2:ab:00:ff:10:01:", " 02:ab:00:ff:10:01", "02:ab:00:ff:10:1"})
    EXPECT_FALSE(parseMac(s)) << s;
  EXPECT_TRUE(macIsMulticast(Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_TRUE(macIsZero(Mac{}));
}

TEST(Ip, IPv4MappedAndIPv6BothWays) {
  const auto v4 = parseIp("198.18.0.2");
  ASSERT_TRUE(v4);
  EXPECT_EQ(*v4, (IpAddr{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2}));
  EXPECT_TRUE(ipIsV4(*v4));
  EXPECT_EQ(formatIp(*v4), "198.18.0.2");
  const auto v6 = parseIp("2001:DB8:0:0::2");
  ASSERT_TRUE(v6);
  EXPECT_FALSE(ipIsV4(*v6));
  EXPECT_EQ((*v6)[0], 0x20);
  EXPECT_EQ((*v6)[15], 2);
  EXPECT_EQ(formatIp(*v6), "2001:db8::2");
  EXPECT_EQ(parseIp("::ffff:198.18.0.2"), v4) << "the mapped form is the IPv4 address";
  for (const char* s : {"", "198.18.0", "198.18.0.2/24", "198.18.0.256", "2001:db8::2/64", "fe80::1%eth0",
                        " 198.18.0.2", "01.2.3.4x", "2001:db8:::2"})
    EXPECT_FALSE(parseIp(s)) << s;
}

TEST(Ip, ListsAreCommaSeparatedOrAny) {
  const auto two = parseIpList("198.18.0.2,2001:db8::2");
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, (std::vector<IpAddr>{*parseIp("198.18.0.2"), *parseIp("2001:db8::2")}));
  EXPECT_EQ(parseIpList("any"), std::vector<IpAddr>{});
  std::string bad;
  EXPECT_FALSE(parseIpList("198.18.0.2,198.18.0.0/24", &bad));
  EXPECT_EQ(bad, "198.18.0.0/24");
  for (const char* s : {"", ",", "198.18.0.2,", ",198.18.0.2", "any,198.18.0.2"}) EXPECT_FALSE(parseIpList(s)) << s;
}

TEST(Parse, WholeDecimalInsideTheRange) {
  EXPECT_EQ(parseU64("0"), 0u);
  EXPECT_EQ(parseU64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parseU32("4096", 64, 4096), 4096u);
  for (const char* s : {"", "-1", "+1", " 1", "1 ", "0x10", "1e3", "18446744073709551616", "12a"})
    EXPECT_FALSE(parseU64(s)) << s;
  EXPECT_FALSE(parseU32("63", 64, 4096));
  EXPECT_FALSE(parseU32("4097", 64, 4096));
  EXPECT_FALSE(parseU32("4294967296"));
}

TEST(Netns, ReportsAFileThatIsNoNamespace) {
  // /dev/null is not a network namespace: setns fails and names the subject;
  // the calling thread never moved (it runs nothing but the wait).
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  FileDesc own(fd);
  bool ran = false;
  Status st = runInNetns(fd, "netns /dev/null", [&]() -> Status {
    ran = true;
    return {};
  });
  ASSERT_FALSE(st);
  EXPECT_FALSE(ran);
  EXPECT_EQ(st.error().err, EINVAL);
  EXPECT_NE(st.error().what.find("netns /dev/null"), std::string::npos);
}

}  // namespace
}  // namespace vdev
