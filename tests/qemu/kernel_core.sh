#!/bin/bash
# kernel_core.sh BUILD [STEP...]: the core e2e set, on whatever kernel runs
# it -- e2e_kernel_6_1 and e2e_kernel_6_12 run it inside a QEMU guest
# booting Debian 12's kernels (scripts/kernel-guest.sh), with this build
# tree. Chosen for what differs between kernels, not for coverage (the
# host's run has that): the hook a port takes (tcx, classic tc, XDP), the
# kernel fast path (its decision needs the netdev genetlink family, 6.3),
# AF_XDP multi-buffer (6.6), programs left behind by a killed vdevd.
#
# Steps (all by default, in this order; name some to run only those):
#   datapath  e2e_datapath_test: unicast between every pair (two veths and
#             a tap) with exact counters -- at the XDP hook without and with
#             the fast path, and at vdevd's default hook (tc for veth and
#             tap) with it; a VXLAN and an ifb take the tc hook by default
#   vdevctl   e2e_vdevctl_test: container (veth vdevd creates) and VM (tap)
#             ports with traffic and counters, the fast path between created
#             containers
#   cni       e2e_cni_test with vdevd's own default hook (auto): two
#             containers by ADD reach each other, CHECK, DEL twice
#   sigkill   e2e_faults_test: vdevd killed with SIGKILL under traffic and
#             started again (its programs replaced, ports restored), at XDP
#             and, for the punt device, at tc
#   vlan      e2e_faults_test: a neighbour on an XDP uplink resolves and
#             pings the host's VLAN device on it (802.1Q: Debian's kernels
#             have the 8021q module; a host kernel without it cannot run
#             this, so the host's e2e_faults_test leaves it out)
#   skb       skb_traffic_test.sh, quick (VDEV_SKB_QUICK=1: its fast-path
#             run, IPv4, 1 MiB streams): containers and a VM at the default
#             hook keep TSO and checksum offload (ethtool -k in their
#             namespaces), kernel TCP both ways between every kind of pair,
#             also at MTU 9000; the ports' hook and fast-path counters
#   netkit    e2e_vdevctl_test: two containers on netkit pairs (Linux 6.7+,
#             CONFIG_NETKIT: 6.12 has it, the host and 6.1 do not) and one on
#             a veth, unicast between every pair on the kernel fast path with
#             exact counters, ping and TCP, no program left after SIGKILL,
#             port del deletes the pair (skipped on a kernel without netkit);
#             then e2e_cni_test's "portType": "netkit" (ADD, ping, CHECK,
#             DEL), reported as netkit_cni
#
# Prints the kernel (uname -r) first, each step's output, and at the end a
# summary: every step's result and time, and each failed test with the
# first lines of its first failure and vdevd's own complaints from its log
# (gtest's JSON report; skb_traffic_test.sh's FAIL lines). Exit 0 when
# every step passed, 77 when every step skipped, else 1.
#
# One step, or one test, by hand (from the source tree; build/ the build
# tree), in a guest or on this host:
#   scripts/kernel-guest.sh 6.1 -- bash tests/qemu/kernel_core.sh build cni
#   scripts/kernel-guest.sh -C build 6.1 -- tests/e2e/e2e_cni_test --gtest_filter='CniTest.*'
#   bash tests/qemu/kernel_core.sh build sigkill
set -u

build=$(cd "${1:?usage: kernel_core.sh BUILD [STEP...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
e2e=$(cd "$here/../e2e" && pwd)

all_steps="datapath vdevctl cni sigkill vlan skb netkit"
steps=${*:-$all_steps}
for s in $steps; do
  case " $all_steps " in *" $s "*) ;; *) echo "kernel_core: unknown step $s (steps: $all_steps)" >&2; exit 2 ;; esac
done

gtest_datapath='Configs/SwitchConfigTest.UnicastBetweenEveryPairArrivesByteForByte/no_fast_path'
gtest_datapath+=':Configs/SwitchConfigTest.UnicastBetweenEveryPairArrivesByteForByte/fast_path'
gtest_datapath+=':Configs/SwitchConfigTest.UnicastBetweenEveryPairArrivesByteForByte/skb_path'
gtest_datapath+=':DatapathTest.DevicesWithoutNativeXdpTakeTheTcHookByDefault'
gtest_vdevctl='VdevctlTest.ContainerAndVmPortsPassTrafficAndReportIt'
gtest_vdevctl+=':VdevctlTest.FastPathCarriesUnicastBetweenCreatedContainers'
gtest_cni='Versions/CniVersionTest.TwoContainersReachEachOtherThroughVdevAndLeaveNothing/v1_1_0'
gtest_sigkill='FaultsTest.VfSigkillThenRestartReplacesOrphanedProgramsAndRestoresPorts'
gtest_vlan='*VfUplinkNeighbourResolvesTheHostsVlanDeviceWhileVdevdRuns*'
gtest_sigkill+=':FaultsTest.VfSigkilledVdevdsPuntDeviceIsRemovedByTheNextVdevdAndALiveOnesIsKept'
gtest_netkit='VdevctlTest.NetkitContainersReachEachOtherAndAVethContainerOnTheKernelFastPath'
gtest_netkit_cni='CniTest.NetkitPortTypeContainersReachEachOtherAndDelLeavesNothing'

echo "kernel_core: kernel $(uname -r), build $build, steps: $steps"
declare -A result secs
out=$(mktemp -d /tmp/kernel-core.XXXXXX)
trap 'rm -rf "$out"' EXIT

# run_step NAME CMD...: runs it; its output is shown and kept for the summary.
ran=''  # the steps run, in order (one STEP may run several: netkit)
run_step() {
  local name=$1 start rc
  shift
  ran+=" $name"
  echo
  echo "===== kernel_core: $name: $*"
  start=$(date +%s)
  "$@" 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  secs[$name]=$(($(date +%s) - start))
  case $rc in
    0) result[$name]=passed ;;
    77) result[$name]=skipped ;;
    *) result[$name]="FAILED (exit $rc)" ;;
  esac
}

# gtest STEP BINARY FILTER [VAR=VALUE...]: one e2e binary, its report in
# $out/STEP.json.
gtest() {
  local step=$1 bin=$build/tests/e2e/$2 filter=$3
  shift 3
  [ -x "$bin" ] || { echo "FAIL: $bin is not built"; return 1; }
  env "$@" "$bin" --gtest_filter="$filter" --gtest_color=no --gtest_output="json:$out/$step.json"
}

# The failed tests of a step: from gtest's report, the first lines of the
# first failure, and what vdevd complained of in the test's output (the
# harness prints vdevd's log when a test fails); from a shell test, its
# FAIL lines.
failures() {  # STEP
  if [ -f "$out/$1.json" ]; then
    python3 - "$out/$1.json" "$out/$1.log" <<'PY'
import json, re, sys
report = json.load(open(sys.argv[1]))
log = open(sys.argv[2], errors="replace").read().splitlines()
vdevd_re = re.compile(r"(?:^|\s)vdevd: ")  # a line of vdevd's log
said_re = re.compile(r"(?:^|\s)vdevd: (?!ready|stopped)(.*)")

def output_of(name):  # the lines between its RUN and its end
    out, inside = [], False
    for l in log:
        if l.startswith("[ RUN      ] "):
            inside = l[13:].strip() == name
        elif inside and (l.startswith("[  FAILED  ] ") or l.startswith("[       OK ] ")):
            break
        elif inside:
            out.append(l)
    return out

for suite in report.get("testsuites", []):
    for test in suite.get("testsuite", []):
        if not test.get("failures"):
            continue
        name = "%s.%s" % (suite["name"], test["name"])
        print("    " + name)
        first = [l for l in test["failures"][0]["failure"].splitlines()
                 if l.strip() and not l.startswith("----") and not vdevd_re.search(l)
                 and not l.lstrip().startswith(("{", '"'))]
        said, seen = [], set()
        for l in output_of(name):
            m = said_re.search(l)
            if m and m.group(1).rstrip('",') not in seen:
                seen.add(m.group(1).rstrip('",'))
                said.append("vdevd: " + m.group(1).rstrip('",'))
        for l in first[:4] + said[:4]:
            print("        " + (l if len(l) <= 200 else l[:197] + "..."))
PY
  fi
  sed -n 's/^\(FAIL: .*\)/    \1/p' "$out/$1.log"
}

for s in $steps; do
  case $s in
    datapath) run_step datapath gtest datapath e2e_datapath_test "$gtest_datapath" ;;
    vdevctl) run_step vdevctl gtest vdevctl e2e_vdevctl_test "$gtest_vdevctl" ;;
    cni) run_step cni gtest cni e2e_cni_test "$gtest_cni" VDEV_E2E_DEFAULT_HOOK=auto ;;
    sigkill) run_step sigkill gtest sigkill e2e_faults_test "$gtest_sigkill" ;;
    vlan) run_step vlan gtest vlan e2e_faults_test "$gtest_vlan" ;;
    skb) run_step skb env VDEV_SKB_QUICK=1 bash "$e2e/skb_traffic_test.sh" "$build" ;;
    netkit)
      run_step netkit gtest netkit e2e_vdevctl_test "$gtest_netkit"
      run_step netkit_cni gtest netkit_cni e2e_cni_test "$gtest_netkit_cni"
      ;;
  esac
done

echo
echo "===== kernel_core: summary on $(uname -r)"
any_run=0 any_failed=0
for s in $ran; do
  printf '  %-10s %-18s %4s s\n' "$s" "${result[$s]}" "${secs[$s]}"
  case ${result[$s]} in
    passed) any_run=1 ;;
    skipped) ;;
    *) any_run=1 any_failed=1; failures "$s" ;;
  esac
done
[ $any_failed -eq 0 ] || exit 1
[ $any_run -eq 1 ] || exit 77
exit 0
