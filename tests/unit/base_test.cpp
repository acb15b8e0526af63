// base/: MAC text form and strict number parsing, the one copy every module uses.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <fcntl.h>

#include <cstring>

#include "base/fd.h"
#include "base/ip.h"
#include "base/mac.h"
#include "base/netns.h"
#include "base/parse.h"
#include "base/pcapng.h"

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

// pcapng blocks (base/pcapng.h): type, both length fields, 4-byte
// alignment, the fields readers look at.
TEST(Pcapng, BlocksHaveTheLayoutReadersExpect) {
  const auto u32 = [](const std::vector<uint8_t>& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  const auto check = [&](const std::vector<uint8_t>& b, uint32_t type) {
    ASSERT_GE(b.size(), 12u);
    EXPECT_EQ(b.size() % 4, 0u);
    EXPECT_EQ(u32(b, 0), type);
    EXPECT_EQ(u32(b, 4), b.size());
    EXPECT_EQ(u32(b, b.size() - 4), b.size()) << "the length again at the end";
  };
  const auto shb = pcapng::sectionHeader("vdev test");
  check(shb, pcapng::kSectionHeader);
  EXPECT_EQ(u32(shb, 8), pcapng::kByteOrderMagic);
  EXPECT_EQ(shb[12], 1);  // major 1 (host order here)
  const auto idb = pcapng::interfaceDescription("vdc1", 2048);
  check(idb, pcapng::kInterfaceDescription);
  EXPECT_EQ(idb[8], pcapng::kLinktypeEthernet);
  EXPECT_EQ(u32(idb, 12), 2048u);
  // if_name "vdc1" then if_tsresol 9 (nanoseconds).
  EXPECT_EQ(std::string(idb.begin() + 20, idb.begin() + 24), "vdc1");
  EXPECT_EQ(idb[24], 9);
  EXPECT_EQ(idb[28], 9);
  const std::vector<uint8_t> frame(61, 0x5a);
  const uint64_t t = 1'700'000'000'123'456'789ull;
  const auto epb = pcapng::enhancedPacket(0, t, frame, 1514, pcapng::kOutbound);
  check(epb, pcapng::kEnhancedPacket);
  EXPECT_EQ((uint64_t(u32(epb, 12)) << 32) | u32(epb, 16), t);
  EXPECT_EQ(u32(epb, 20), 61u);
  EXPECT_EQ(u32(epb, 24), 1514u);
  EXPECT_EQ(epb[28], 0x5a);
  EXPECT_EQ(epb[28 + 61], 0) << "padded with zeros";
  EXPECT_EQ(u32(epb, 28 + 64 + 4), pcapng::kOutbound) << "epb_flags";
  EXPECT_EQ(epb.size(), 28u + 64 + 8 + 4 + 4);
  const auto isb = pcapng::interfaceStatistics(0, t, 100, 7);
  check(isb, pcapng::kInterfaceStatistics);
  uint64_t dropped;
  std::memcpy(&dropped, isb.data() + 20 + 12 + 4, 8);
  EXPECT_EQ(dropped, 7u) << "isb_ifdrop";
}

}  // namespace
}  // namespace vdev
