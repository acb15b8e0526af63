// A real container runtime with a vdev-cni network: Debian's podman 4.3
// (CNI backend, libcni). libcni validates every network configuration by
// calling the plugin's VERSION with placeholders (CNI_NETNS=dummy, ...);
// vdev-cni used to refuse that, and podman then said "network not found".
//
// What runs: `podman network ls` and `network inspect` load the vdev-cni
// network (LoadsAVdevCniNetwork); where podman can run a container here at
// all (an OCI runtime that works on this host -- runc here -- and conmon,
// and an image imported from a busybox-static rootfs tarball built by the
// test: no registry is reached), two containers on that network get
// addresses from host-local and ping each other through vdevd
// (ContainersOnAVdevCniNetworkTalkThroughVdevd, skipped with the reason
// elsewhere). Everything podman keeps (storage, CNI config,
// containers.conf) lives in the test's temp dir.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "cni_plugin.h"
#include "harness.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

constexpr const char* kPodman = "/usr/bin/podman";
constexpr const char* kBusybox = "/bin/busybox";

class PodmanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPodman, X_OK) != 0) GTEST_SKIP() << "no podman (scripts/install-deps.sh installs it)";
    if (cni::pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built";
    requireRoot();
    if (IsSkipped()) return;
    VDEV_E2E_REQUIRE_VDEVD();
    run("mkdir -p " + dir_.file("cni") + " " + dir_.file("ipam") + " " + dir_.file("root") + " " +
        dir_.file("runroot") + " " + dir_.file("tmp"));
    // containers.conf: the CNI backend, vdev-cni's directory, our config dir.
    std::ofstream(dir_.file("containers.conf"))
        << "[network]\nnetwork_backend = \"cni\"\ncni_plugin_dirs = [\"" << cni::pluginDir() << "\", \""
        << cni::kDebianCniDir << "\"]\nnetwork_config_dir = \"" << dir_.file("cni") << "\"\n"
        << "[engine]\ntmp_dir = \"" << dir_.file("tmp") << "\"\n"
        // runc where installed: crun 1.8 refuses this VM's hybrid cgroup
        // layout. Limits within the test's own hard limits (podman's
        // defaults are above them, and raising a hard limit needs
        // CAP_SYS_RESOURCE, which this machine's root lacks).
        << (::access("/usr/sbin/runc", X_OK) == 0 ? "runtime = \"runc\"\n" : "")
        << "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n";
    cni::OJson conf = cni::netConf("1.0.0", net_, sock_, "198.18.210.0/24", dir_.file("ipam"));
    conf.erase("cniVersion");
    conf.erase("name");
    cni::OJson list = {{"cniVersion", "1.0.0"}, {"name", net_}, {"plugins", cni::OJson::array({conf})}};
    std::ofstream(dir_.file("cni/" + net_ + ".conflist")) << list.dump(2);
  }

 public:
  CmdResult podman(const std::vector<std::string>& args, Millis timeout = 60s) {
    ProcessSpec p;
    p.argv = {kPodman, "--root", dir_.file("root"), "--runroot", dir_.file("runroot"), "--storage-driver", "vfs",
              "--cgroup-manager", "cgroupfs", "--events-backend", "file"};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir_.path(),
                                     "CONTAINERS_CONF=" + dir_.file("containers.conf"),
                                     "TMPDIR=" + dir_.file("tmp")};
    p.timeout = timeout;
    return runProcess(p);
  }
  static std::string describe(const CmdResult& r) {
    return "exit " + std::to_string(r.status) + "\n  stdout: " + r.out + "\n  stderr: " + r.err;
  }

 protected:
  TempDir dir_;
  const std::string sock_ = dir_.file("vdevd.sock");
  const std::string net_ = "vdevpod" + std::to_string(::getpid() % 100000);
};

// libcni loads the network: podman lists and inspects it without an error
// about CNI_NETNS (vdev-cni answers VERSION without one).
TEST_F(PodmanTest, LoadsAVdevCniNetwork) {
  const CmdResult ls = podman({"network", "ls", "--format", "{{.Name}} {{.Driver}}"});
  ASSERT_EQ(ls.status, 0) << describe(ls);
  EXPECT_NE(ls.out.find(net_ + " "), std::string::npos) << describe(ls);
  EXPECT_EQ(ls.err.find("CNI_NETNS"), std::string::npos) << describe(ls);
  const CmdResult inspect = podman({"network", "inspect", net_});
  EXPECT_EQ(inspect.status, 0) << describe(inspect);
  EXPECT_EQ(inspect.err.find("not found"), std::string::npos) << describe(inspect);
}

// Two containers on the network ping each other through vdevd. Skipped
// where podman cannot run a container here (no busybox for an image made
// without a registry, or no OCI runtime that works in this machine).
TEST_F(PodmanTest, ContainersOnAVdevCniNetworkTalkThroughVdevd) {
  if (::access(kBusybox, X_OK) != 0) GTEST_SKIP() << "no " << kBusybox << " (busybox-static): no image to run";
  const std::string rootfs = dir_.file("rootfs");
  run("mkdir -p " + rootfs + "/bin " + rootfs + "/etc && cp " + kBusybox + " " + rootfs + "/bin/busybox");
  for (const char* tool : {"sh", "ip", "ping", "sleep", "true"})
    run("ln -s busybox " + rootfs + "/bin/" + tool);
  run("tar -C " + rootfs + " -cf " + dir_.file("rootfs.tar") + " .");
  const CmdResult imp = podman({"import", dir_.file("rootfs.tar"), "localhost/vdev-busybox:test"});
  ASSERT_EQ(imp.status, 0) << describe(imp);
  const CmdResult probe = podman({"run", "--rm", "--network", "none", "localhost/vdev-busybox:test", "/bin/true"});
  // No OCI runtime or conmon that works in this VM: LoadsAVdevCniNetwork
  // still shows what libcni does with the configuration.
  if (probe.status != 0) GTEST_SKIP() << "podman cannot run a container here: " << describe(probe);

  Vdevd d({"--socket", sock_, "--state", dir_.file("vdevd.state")});
  // Whatever happens below, no container outlives the test (its CNI DEL
  // removes the port while vdevd still runs).
  struct Cleanup {
    PodmanTest* t;
    ~Cleanup() { (void)t->podman({"rm", "-a", "-f", "-t", "0"}); }
  } cleanup{this};
  const CmdResult a = podman({"run", "-d", "--name", net_ + "a", "--network", net_, "localhost/vdev-busybox:test",
                              "/bin/sleep", "60"});
  ASSERT_EQ(a.status, 0) << describe(a) << d.logs();
  const CmdResult b = podman({"run", "-d", "--name", net_ + "b", "--network", net_, "localhost/vdev-busybox:test",
                              "/bin/sleep", "60"});
  ASSERT_EQ(b.status, 0) << describe(b) << d.logs();
  const CmdResult ipb = podman({"exec", net_ + "b", "/bin/ip", "-4", "-o", "addr", "show", "eth0"});
  ASSERT_EQ(ipb.status, 0) << describe(ipb);
  const size_t at = ipb.out.find("inet 198.18.210.");
  ASSERT_NE(at, std::string::npos) << "container b has no address from host-local: " << ipb.out;
  const std::string addrB = ipb.out.substr(at + 5, ipb.out.find('/', at) - at - 5);
  // Pings until 3 echo replies came back, one request at a time with 2 s
  // for its reply, at most 15 of them (busybox's ping stops sending after
  // -c, so it cannot wait for N replies itself): a first ARP exchange that
  // is lost does not fail the test, a datapath that never forwards does.
  const CmdResult ping =
      podman({"exec", net_ + "a", "/bin/sh", "-c",
              "n=0; i=0; while [ $n -lt 3 ] && [ $i -lt 15 ]; do i=$((i+1)); "
              "if ping -c 1 -W 2 " + addrB + " >/dev/null 2>&1; then n=$((n+1)); fi; done; "
              "echo \"$n replies to $i requests\""},
             90s);
  EXPECT_EQ(ping.status, 0) << describe(ping) << d.logs();
  EXPECT_EQ(ping.out.rfind("3 replies to ", 0), 0u) << describe(ping) << d.logs();
  (void)podman({"rm", "-f", "-t", "0", net_ + "a", net_ + "b"});
  const CmdResult left = podman({"ps", "-a", "-q"});
  EXPECT_TRUE(left.out.empty()) << left.out;
  expectCleanStop(d);
}

}  // namespace
}  // namespace vdev::e2e
