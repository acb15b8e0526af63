// The daemon's state file: round trip, strict refusal of corrupt files,
// atomic replacement.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "daemon/state_file.h"

namespace vdev::daemon {
namespace {

DaemonState sample() {
  DaemonState st;
  st.ports.push_back({"vdc1", "veth", 0, "auto", true});
  st.ports.push_back({"tap-vm1", "tap", 4, "native", true});
  st.ports.push_back({"eth1", "netdev", 1, "generic", false});
  st.ports.push_back({"vt=q", "tap", 0, "auto", true});  // '=' is a valid interface name character
  return st;
}

TEST(StateFile, RoundTrip) {
  auto st = parseState(serializeState(sample()));
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(st.value(), sample());
  auto empty = parseState(serializeState(DaemonState{}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().ports.empty());
}

// fast-rx off is saved (and only off: an older vdevd refuses keys it does
// not know), and a line without the key -- every file an older vdevd wrote
// -- loads with the option on.
TEST(StateFile, FastRxOffRoundTripsAndAbsentMeansOn) {
  DaemonState st = sample();
  st.ports[1].fast_rx = false;
  const std::string text = serializeState(st);
  EXPECT_NE(text.find("port name=tap-vm1 type=tap queues=4 xdp-mode=native managed=1 fast-rx=0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("fast-rx=1"), std::string::npos) << "on is the default; not written:\n" << text;
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  EXPECT_FALSE(back.value().ports[1].fast_rx);
  EXPECT_TRUE(back.value().ports[0].fast_rx);

  auto old = parseState("# vdevd state v1\nport name=vm1 type=tap queues=0 xdp-mode=auto managed=1\n");
  ASSERT_TRUE(old.ok()) << old.error().message();
  ASSERT_EQ(old.value().ports.size(), 1u);
  EXPECT_TRUE(old.value().ports[0].fast_rx);
  auto on = parseState("# vdevd state v1\nport name=vm1 fast-rx=1\n");
  ASSERT_TRUE(on.ok()) << on.error().message();
  EXPECT_TRUE(on.value().ports[0].fast_rx);
}

// A port's hook is saved when it was asked for; a line without it (every
// file an older vdevd wrote, or a port that took --default-hook) loads with
// none, so vdevd's --default-hook decides.
TEST(StateFile, HookRoundTripsAndAbsentMeansTheDefault) {
  DaemonState st = sample();
  st.ports[0].hook = "xdp";
  st.ports[1].hook = "tc";
  const std::string text = serializeState(st);
  EXPECT_NE(text.find(" hook=xdp\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" hook=tc\n"), std::string::npos) << text;
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  auto old = parseState("# vdevd state v1\nport name=vm1 type=tap\n");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old.value().ports.at(0).hook, "");
  auto bad = parseState("# vdevd state v1\nport name=vm1 hook=ebpf\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("invalid hook 'ebpf'"), std::string::npos) << bad.error().what;
}

TEST(StateFile, CorruptFilesAreRefusedWithTheLine) {
  const std::string h = "# vdevd state v1\n";
  struct Case {
    std::string text, needle;
  } cases[] = {
      {"", "empty"},
      {"garbage\n", "not a vdevd state file"},
      {h + "port name=a type=veth\nbogus x=1\n", "line 3: unknown record"},
      {h + "port name=a type=blue\n", "line 2: invalid type"},
      {h + "port name=a queues=65\n", "invalid queues"},
      {h + "port name=a queues=-1\n", "invalid queues"},
      {h + "port name=a queues=\n", "invalid queues"},
      {h + "port name=a xdp-mode=turbo\n", "invalid xdp-mode"},
      {h + "port name=a managed=yes\n", "invalid managed"},
      {h + "port name=a fast-rx=off\n", "line 2: invalid fast-rx 'off' (0 or 1)"},
      {h + "port name=a fast-rx=2\n", "invalid fast-rx"},
      {h + "port name=a fast-rx=0 fast-rx=1\n", "given twice"},
      {h + "port name=abcdefghijklmnop\n", "invalid interface name"},
      {h + "port name=a/b\n", "invalid interface name"},
      {h + "port type=tap\n", "without name"},
      {h + "port name=a name=b\n", "given twice"},
      {h + "port name=a\nport name=a\n", "listed twice"},
      {h + "port name=a colour=red\n", "unknown key"},
      {h + "port name=a novalue\n", "key=value"},
  };
  for (const auto& c : cases) {
    auto st = parseState(c.text);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_NE(st.error().what.find(c.needle), std::string::npos) << st.error().what;
  }
}

TEST(StateFile, SaveIsAtomicAndLoadReadsItBack) {
  char dir[] = "/tmp/vdev-state-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/vdevd.state";
  auto missing = loadState(path);
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing.value().ports.empty());
  ASSERT_TRUE(saveState(path, sample()).ok());
  auto back = loadState(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), sample());
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "temporary file left behind";
  // A corrupt file is reported, naming the file.
  std::ofstream(path) << "# vdevd state v1\nport name=x type=zzz\n";
  auto bad = loadState(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find(path), std::string::npos);
  // A directory in the way of the rename: the old file stays intact.
  std::ofstream(path) << serializeState(sample());
  ASSERT_EQ(mkdir((path + ".tmp").c_str(), 0755), 0);
  EXPECT_FALSE(saveState(path, DaemonState{}).ok());
  auto still = loadState(path);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still.value(), sample());
  rmdir((path + ".tmp").c_str());
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace vdev::daemon
