#!/bin/bash
# package_test.sh SRC BUILD [DEB_DIR]: the Debian package (debian/) on this
# machine.
#
# Takes VDEV_DEB=PATH.deb (e.g. from `make deb`, built from source), else
# the package in DEB_DIR (ctest: e2e_package_build's, made of the build
# tree's binaries), else packages the binaries of the build tree BUILD
# itself (`make deb-from-build`, in BUILD/deb-test: a minute or two, nothing
# compiled); checks it
# with lintian (no error); installs it with dpkg -i and checks what it put
# where (binaries, unit and its enablement, defaults file, man pages,
# completion, docs, the group vdev, /var/lib/vdev 0700); starts vdevd as the
# unit does -- this machine has no systemd as PID 1, so from the installed
# unit's ExecStart=, EnvironmentFile= and CapabilityBoundingSet= -- and runs
# vdevctl against it (info, as root and as a member of the group, a veth
# port in a test namespace, port show, the completion's port names);
# installs the package again over itself with vdevd running (an upgrade:
# vdevd is not stopped, the state file and the device stay) and restarts
# vdevd as systemd would after an upgrade (the port comes back); port del;
# then leaves two ports vdevd created (a veth, a tap) to `dpkg --purge`,
# which must stop vdevd and leave nothing behind: no file of the package, no
# group, no /var/lib/vdev, no vdev device, no XDP program.
#
# Skipped (77) when not root, without dpkg-buildpackage, in a sanitizer build
# (the package is tested in the normal one), or when this machine already has
# vdev installed (a package, /usr/sbin/vdevd, the group, the
# state directory, a vdevd on the default socket): the test would clobber
# it. Everything it made is removed on exit, pass or fail.
set -u

src=${1:?usage: package_test.sh SRC BUILD [DEB_DIR]}
build=${2:?usage: package_test.sh SRC BUILD [DEB_DIR]}
deb_dir=${3:-}

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i, network namespaces, XDP)"
if [ -z "${VDEV_DEB:-}" ] && ! command -v dpkg-buildpackage >/dev/null 2>&1; then
  skip "dpkg-buildpackage is not installed (scripts/install-deps.sh installs it)"
fi
command -v dpkg >/dev/null 2>&1 || skip "not a dpkg system"
if [ -z "${VDEV_DEB:-}" ]; then
  sanitize=$(sed -n 's/^VDEV_SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
  [ -z "$sanitize" ] || skip "a VDEV_SANITIZE=$sanitize build: the package is tested in the normal build"
  for b in daemon/vdevd tools/vdevctl/vdevctl tools/vdev-cni/vdev-cni; do
    [ -x "$build/$b" ] || { echo "FAIL: $build/$b is not built"; exit 1; }
  done
fi
if dpkg-query -W -f='${db:Status-Status}' vdev 2>/dev/null | grep -qv '^not-installed$'; then
  skip "package vdev is installed here already ($(dpkg-query -W -f='${db:Status-Status} ${Version}' vdev))"
fi
for f in /usr/sbin/vdevd /usr/sbin/vdevctl /etc/default/vdevd /var/lib/vdev /run/vdev/vdevd.sock; do
  [ -e "$f" ] && skip "$f exists: vdev is installed or running here already"
done
getent group vdev >/dev/null && skip "group vdev exists already"

# failures, fail, ok, check, die, quiet, wait_for
. "$(dirname "$0")/check_lib.sh"
# have TOOL PACKAGE WHAT: true when TOOL is installed; otherwise the checks
# WHAT are a reported skip (scripts/run-tests.sh lists it; CI fails on it),
# never dropped without a word. scripts/install-deps.sh installs PACKAGE.
have() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "SKIPPED: $3: $1 is not installed (package $2)"
  [ -n "${VDEV_SKIP_LOG:-}" ] &&
    echo "e2e_package_test: $3: $1 is not installed (package $2)" >>"$VDEV_SKIP_LOG"
  return 1
}

tmp=$(mktemp -d /tmp/vdev-package-test.XXXXXX) || exit 1
ns=vdpkg$$
p1=vdpk$$a   # veth, added, kept over the upgrade, deleted with port del
p2=vdpk$$b   # veth, left to dpkg --purge
p3=vdpk$$t   # tap, left to dpkg --purge
vdevd_pid=
starts=0
log=
run_vdev_existed=
[ -d /run/vdev ] && run_vdev_existed=1

# What is attached or vdev-made before the test, to compare at the end.
xdp_links() { ip -o link show | grep -E ' (xdp|xdpgeneric|xdpdrv|xdpoffload)[ /]' | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }
managed_links() { ip -o link show | grep ' alias vdev:managed' | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }
xdp_links >"$tmp/xdp.before"
managed_links >"$tmp/managed.before"

stop_vdevd() {  # SIGTERM, as systemd's stop; sets vdevd_rc
  vdevd_rc=
  [ -n "$vdevd_pid" ] || return 0
  kill -TERM "$vdevd_pid" 2>/dev/null
  local i
  for i in $(seq 100); do
    kill -0 "$vdevd_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$vdevd_pid" 2>/dev/null && kill -KILL "$vdevd_pid"
  wait "$vdevd_pid"
  vdevd_rc=$?
  vdevd_pid=
}

cleanup() {
  stop_vdevd
  if dpkg-query -W -f='${db:Status-Status}' vdev 2>/dev/null | grep -qv '^not-installed$'; then
    echo "cleanup: dpkg --purge vdev"
    dpkg --purge vdev >/dev/null 2>&1 || echo "cleanup: dpkg --purge vdev failed"
  fi
  local l
  for l in "$p1" "$p2" "$p3"; do
    ip link show dev "$l" >/dev/null 2>&1 && ip link delete dev "$l"
  done
  ip netns list 2>/dev/null | grep -qw "$ns" && ip netns delete "$ns"
  getent group vdev >/dev/null && groupdel vdev
  rm -rf /var/lib/vdev
  # /run/vdev as it was: vdevd makes it, the package's purge removes it.
  if [ -n "$run_vdev_existed" ]; then
    mkdir -p -m 0755 /run/vdev
  else
    rm -rf /run/vdev
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---------------------------------------------------------------- the package
arch=$(dpkg --print-architecture)
if [ -n "${VDEV_DEB:-}" ]; then
  deb=$VDEV_DEB
  echo "package: $deb (VDEV_DEB)"
elif [ -n "$deb_dir" ] && ls "$deb_dir"/vdev_*_"$arch".deb >/dev/null 2>&1; then
  deb=$(ls "$deb_dir"/vdev_*_"$arch".deb | head -1)
  echo "package: $deb (e2e_package_build)"
else
  start=$(date +%s)
  echo "package: make deb-from-build BUILD=$build DEB_DIR=$build/deb-test"
  if ! make -C "$src" deb-from-build BUILD="$build" DEB_DIR="$build/deb-test" >"$tmp/build.log" 2>&1; then
    tail -40 "$tmp/build.log"
    die "make deb-from-build failed"
  fi
  deb=$(ls "$build"/deb-test/vdev_*_"$arch".deb 2>/dev/null | head -1)
  echo "package built in $(($(date +%s) - start)) s: $deb"
fi
[ -f "$deb" ] || die "no package file: $deb"

# ---------------------------------------------------------------- lintian
# No lintian error in what was built: the .changes (the .deb, the dbgsym
# package and the .buildinfo) when there is one beside the .deb, else the
# .deb. The package of `make deb-from-build` differs from `make deb`'s only
# by info tags (hardening-no-bindnow, hardening-no-fortify-functions: the
# build tree's binaries lack dpkg-buildflags' hardening), which do not fail
# the check; `make deb` takes minutes more, VDEV_DEB checks its package.
lint=${deb%_*.deb}_$arch.changes
[ -f "$lint" ] || lint=$deb
if ! command -v lintian >/dev/null 2>&1; then
  fail "lintian is not installed (scripts/install-deps.sh installs it)"
elif lintian --fail-on error "$lint" >"$tmp/lintian.log" 2>&1; then
  ok "lintian $(basename "$lint"): no error ($(grep -c '^W: ' "$tmp/lintian.log") warning(s))"
else
  cat "$tmp/lintian.log"
  fail "lintian $(basename "$lint") reports error(s) (above)"
fi

# ---------------------------------------------------------------- install
dpkg -i "$deb" >"$tmp/dpkg-i.log" 2>&1 || { cat "$tmp/dpkg-i.log"; die "dpkg -i $deb"; }
ok "dpkg -i $(basename "$deb")"
dpkg -L vdev >"$tmp/files"
while read -r f; do [ -d "$f" ] || echo "$f"; done <"$tmp/files" >"$tmp/package-files"

for b in /usr/sbin/vdevd /usr/sbin/vdevctl /usr/lib/cni/vdev-cni; do
  check "$b installed, executable" test -x "$b"
done
check "vdevd --version is the package's version" \
  test "$(/usr/sbin/vdevd --version)" = "vdevd $(dpkg-query -W -f='${Version}' vdev | sed 's/-[^-]*$//')"
if grep -E '/(vdev-vm|vdev-bench)$|_test$' "$tmp/package-files"; then
  fail "the package ships test or bench binaries (above)"
else
  ok "no vdev-vm, vdev-bench or test binary in the package"
fi

unit=$(grep -E '/systemd/system/vdevd\.service$' "$tmp/package-files" | head -1)
[ -n "$unit" ] && [ -f "$unit" ] || die "no vdevd.service in the package"
ok "unit $unit"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
check "ExecStart runs /usr/sbin/vdevd: $exec_start" test "${exec_start%% *}" = /usr/sbin/vdevd
check "unit enabled (multi-user.target.wants)" \
  test "$(readlink -f /etc/systemd/system/multi-user.target.wants/vdevd.service)" = "$(readlink -f "$unit")"
if have systemd-analyze systemd "systemd-analyze verify of the unit"; then
  out=$(systemd-analyze verify --man=no "$unit" 2>&1)
  check "systemd-analyze verify $unit: ${out:-clean}" test $? -eq 0 -a -z "$out"
fi
envfile=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
check "EnvironmentFile=$envfile installed" test -f "$envfile"
check "$envfile is a conffile" grep -q "^ $envfile " <(dpkg-query -W -f='${Conffiles}\n' vdev)
args=$(sed -n 's/^VDEVD_ARGS=//p' "$envfile" | tail -1 | sed 's/^"\(.*\)"$/\1/')
check "VDEVD_ARGS gives the socket to group vdev: '$args'" grep -qw -- '--group vdev' <<<"$args"

for m in vdevd vdevctl vdev-cni; do
  page=/usr/share/man/man8/$m.8.gz
  if [ ! -f "$page" ]; then fail "no $page"; continue; fi
  if have man man-db "$page: man --warnings and its sections"; then
    warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
    if [ -n "$warn" ]; then fail "man --warnings $page: $warn"; else ok "$page: no warnings"; fi
    missing=
    for s in NAME SYNOPSIS DESCRIPTION OPTIONS FILES "EXIT STATUS" EXAMPLES "SEE ALSO"; do
      MANWIDTH=80 man -l "$page" 2>/dev/null | grep -qx "$s" || missing="$missing $s"
    done
    if [ -n "$missing" ]; then fail "$page has no section(s)$missing"; else ok "$page has every section"; fi
  fi
  have lexgrog man-db "$page: lexgrog" && check "lexgrog $page: $(lexgrog "$page" 2>&1 | sed 's/^[^:]*: //')" quiet lexgrog "$page"
done

# The man pages and the tools' --help name the same options: every long
# option of the help texts is in the page, and every one the page describes
# (before FILES) is in the help.
long_opts() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
for m in vdevd vdevctl; do
  page=/usr/share/man/man8/$m.8.gz
  [ -f "$page" ] || continue
  {
    "/usr/sbin/$m" --help
    if [ "$m" = vdevctl ]; then
      for c in "port add" "port del" "port set" "port show" stats monitor capture "fdb show" "fdb add" "fdb del" info; do
        # shellcheck disable=SC2086
        /usr/sbin/vdevctl $c --help
      done
    fi
  } 2>&1 | long_opts >"$tmp/$m.help"
  zcat "$page" | sed 's/\\-/-/g' | sed '/^\.SH FILES/,$d' | long_opts >"$tmp/$m.man"
  diff=$(comm -3 "$tmp/$m.help" "$tmp/$m.man" | xargs)
  check "$m --help and $m(8) name the same options${diff:+ (differ: $diff)}" test -z "$diff"
done

comp=/usr/share/bash-completion/completions/vdevctl
check "bash completion $comp" bash -n "$comp"
check "README and systemd.md (the unit's Documentation=) uncompressed" \
  test -f /usr/share/doc/vdev/README.md -a -f /usr/share/doc/vdev/systemd.md
doc=$(grep -o 'file:[^ ]*' "$unit" | sed 's/^file://')
check "Documentation=file:$doc exists" test -f "$doc"
check "copyright" test -f /usr/share/doc/vdev/copyright
conflist=/usr/share/doc/vdev/examples/10-vdev.conflist
if have python3 python3 "$conflist parsed as JSON"; then
  check "$conflist is JSON" quiet python3 -m json.tool "$conflist"
else
  check "$conflist" test -f "$conflist"
fi

gid=$(getent group vdev | cut -d: -f3)
if [ -z "$gid" ]; then
  die "no group vdev after install"
fi
check "group vdev is a system group (gid $gid)" test "$gid" -lt 1000
check "/var/lib/vdev is root's, 0700" test "$(stat -c '%U %a' /var/lib/vdev)" = "root 700"

# ------------------------------------------- vdevd, started as the unit does
# The unit's settings that a shell can apply: EnvironmentFile= and
# $VDEVD_ARGS in ExecStart= (split on whitespace), RuntimeDirectory= and
# StateDirectory= with their modes, LimitMEMLOCK=, CapabilityBoundingSet=,
# NoNewPrivileges=.
unit_value() { sed -n "s/^$1=//p" "$unit" | tail -1; }
start_vdevd() {
  local cmd=() w a
  for w in $exec_start; do
    case $w in
      '$VDEVD_ARGS' | '${VDEVD_ARGS}') for a in $args; do cmd+=("$a"); done ;;
      *) cmd+=("$w") ;;
    esac
  done
  local rmode smode
  rmode=$(unit_value RuntimeDirectoryMode)
  smode=$(unit_value StateDirectoryMode)
  mkdir -p "/run/$(unit_value RuntimeDirectory)" && chmod "${rmode:-0755}" "/run/$(unit_value RuntimeDirectory)"
  mkdir -p "/var/lib/$(unit_value StateDirectory)" && chmod "${smode:-0755}" "/var/lib/$(unit_value StateDirectory)"
  local priv=() caps
  caps=$(unit_value CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
  if have setpriv util-linux "vdevd under the unit's capability bounding set and NoNewPrivileges"; then
    [ -n "$caps" ] && priv+=(--bounding-set "-all,$caps")
    [ "$(unit_value NoNewPrivileges)" = yes ] && priv+=(--no-new-privs)
    priv=(setpriv "${priv[@]}")
  fi
  echo "start: ${priv[*]} ${cmd[*]}"
  starts=$((starts + 1))
  log=$tmp/vdevd.$starts.log
  (
    [ "$(unit_value LimitMEMLOCK)" = infinity ] && ulimit -l unlimited
    exec "${priv[@]}" "${cmd[@]}"
  ) >"$log" 2>&1 </dev/null &
  vdevd_pid=$!
  local i
  for i in $(seq 300); do
    grep -q '^vdevd: ready' "$log" && break
    kill -0 "$vdevd_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q '^vdevd: ready' "$log"; then
    cat "$log"
    die "vdevd did not get ready"
  fi
  ok "vdevd ready (pid $vdevd_pid): $(grep '^vdevd: ready' "$log")"
}
# vdevctl's JSON port list, one name per line.
port_names() { /usr/sbin/vdevctl -j port show | grep -o '"name": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/'; }
has_xdp() { ip -o link show dev "$1" 2>/dev/null | grep -qE ' (xdp|xdpgeneric|xdpdrv)[ /]'; }
# A veth port takes vdevd's skb path (a tcx program, no XDP program): vdevctl
# says so, and the program is loaded (this bpftool cannot list tcx per device).
has_tc_hook() {
  /usr/sbin/vdevctl -j port show "$1" 2>/dev/null | grep -q '"hook":"tc"' &&
    bpftool prog show name vdev_tc_port >/dev/null 2>&1
}
# The BPF programs process $1 holds open (their ids, from its fds' fdinfo):
# this vdevd's own, whatever other vdevds on the machine load meanwhile.
held_prog_ids() { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u; }
# Those of the ids $@ the kernel still has loaded.
still_loaded() {
  local id
  for id in "$@"; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "$id"; done
}

start_vdevd
check "vdevd runs the package's binary" test "$(readlink "/proc/$vdevd_pid/exe")" = /usr/sbin/vdevd
if have capsh libcap2-bin "vdevd's capability bounding set against the unit's"; then
  bounding=$(capsh --decode="$(awk '/^CapBnd/ {print $2}' "/proc/$vdevd_pid/status")" | sed 's/.*=//' | tr ',' '\n' | sort | xargs)
  want=$(unit_value CapabilityBoundingSet | tr 'A-Z' 'a-z' | tr ' ' '\n' | sort | xargs)
  check "vdevd's capability bounding set is the unit's: $bounding" test "$bounding" = "$want"
fi

info=$(/usr/sbin/vdevctl info 2>&1)
check "vdevctl info: $(tr '\n' ' ' <<<"$info")" grep -q "$(dpkg-query -W -f='${Version}' vdev)" <<<"$info"
check "control socket: group vdev, 0660" test "$(stat -c '%G %a' /run/vdev/vdevd.sock)" = "vdev 660"
check "a member of vdev (uid nobody) may use vdevctl" \
  quiet setpriv --reuid=65534 --regid=65534 --groups="$gid" /usr/sbin/vdevctl info
if setpriv --reuid=65534 --regid=65534 --clear-groups /usr/sbin/vdevctl info >/dev/null 2>&1; then
  fail "uid nobody outside group vdev could use vdevctl"
else
  ok "uid nobody outside group vdev is refused"
fi

ip netns add "$ns" || die "ip netns add $ns"
/usr/sbin/vdevctl port add "$p1" type veth create netns "$ns" || die "vdevctl port add $p1 type veth create netns $ns"
check "port show lists $p1" grep -qx "$p1" <(port_names)
check "$p1 has vdev's skb-path program" has_tc_hook "$p1"
check "$p1's peer eth0 is in $ns" quiet ip netns exec "$ns" ip link show dev eth0
check "the state file saves $p1 (managed)" grep -q "^port name=$p1 .*managed=1" /var/lib/vdev/vdevd.state
check "$p1 is up" wait_for 10 grep -q "\"name\": *\"$p1\".*\"live\": *true" <(/usr/sbin/vdevctl -j port show)
/usr/sbin/vdevctl port show

# The completion asks the running vdevd for port names.
complete_words() {  # complete_words WORD... (the last one is being completed)
  bash -c '
    . /usr/share/bash-completion/bash_completion 2>/dev/null
    . '"$comp"'
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _vdevctl vdevctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' completion "$@"
}
check "completion: vdevctl po<TAB> -> port" grep -qx port <(complete_words vdevctl po)
check "completion: vdevctl port d<TAB> -> del" grep -qx del <(complete_words vdevctl port d)
check "completion: vdevctl port del <TAB> -> $p1 (from vdevd)" grep -qx "$p1" <(complete_words vdevctl port del "")
check "completion: vdevctl capture <TAB> -> $p1 (from vdevd)" grep -qx "$p1" <(complete_words vdevctl capture "")
check "completion: vdevctl capture $p1 --direction <TAB> -> rx" grep -qx rx <(complete_words vdevctl capture "$p1" --direction "")
check "completion: vdevctl -S /run/vdev/vdevd.sock stats <TAB> -> $p1" \
  grep -qx "$p1" <(complete_words vdevctl -S /run/vdev/vdevd.sock stats "")
check "completion: vdevctl port set <TAB> -> $p1 (from vdevd)" grep -qx "$p1" <(complete_words vdevctl port set "")
check "completion: vdevctl port set $p1 police-r<TAB> -> police-rate" \
  grep -qx police-rate <(complete_words vdevctl port set "$p1" police-r)
check "completion: vdevctl port add x type veth allowed-i<TAB> -> allowed-ip" \
  grep -qx allowed-ip <(complete_words vdevctl port add x type veth allowed-i)
check "completion: vdevctl port set $p1 ra<TAB> -> ra-guard" grep -qx ra-guard <(complete_words vdevctl port set "$p1" ra)
check "completion: vdevctl port add x type veth tru<TAB> -> trunk" \
  grep -qx trunk <(complete_words vdevctl port add x type veth tru)
check "completion: vdevctl port set $p1 vlan <TAB> -> none" grep -qx none <(complete_words vdevctl port set "$p1" vlan "")
check "completion: vdevctl port add x type veth create ne<TAB> -> netns" \
  grep -qx netns <(complete_words vdevctl port add x type veth create ne)

# ---------------------------------------------- upgrade: install over itself
# As on a host: the package is installed again while vdevd runs; prerm
# (upgrade) must not stop it or touch its devices. systemd would then restart
# the service (postinst); here the same restart, by hand.
cp /var/lib/vdev/vdevd.state "$tmp/state.before"
dpkg -i "$deb" >"$tmp/dpkg-up.log" 2>&1 || { cat "$tmp/dpkg-up.log"; die "dpkg -i (upgrade)"; }
ok "dpkg -i again (upgrade)"
check "vdevd still runs after the upgrade" kill -0 "$vdevd_pid"
check "the state file is unchanged" cmp -s "$tmp/state.before" /var/lib/vdev/vdevd.state
check "$p1 survives the upgrade" quiet ip link show dev "$p1"
progs=$(held_prog_ids "$vdevd_pid")
check "vdevd holds its BPF programs (ids: $(echo $progs))" test -n "$progs"
stop_vdevd
check "vdevd stops cleanly on SIGTERM (exit $vdevd_rc)" test "$vdevd_rc" = 0
check "vdevd returned every frame: $(grep 'vdevd: stopped' "$log")" grep -q 'all .* frames back in the pool' "$log"
if has_xdp "$p1"; then fail "$p1 keeps an XDP program after vdevd stopped"; else ok "no XDP program on $p1 after the stop"; fi
# The kernel frees a program once its last holder is gone, after an RCU
# grace period (deferred work): give it a moment.
none_loaded() { [ -z "$(still_loaded "$@")" ]; }
wait_for 5 none_loaded $progs || true
left=$(still_loaded $progs)
if [ -n "$left" ]; then fail "vdevd's BPF programs $(echo $left) are still loaded after it stopped"
else ok "none of vdevd's BPF programs is left after the stop"; fi
check "$p1 kept over the restart" quiet ip link show dev "$p1"
check "the state file survives the stop" grep -q "^port name=$p1 " /var/lib/vdev/vdevd.state
start_vdevd
check "$p1 restored from the state file" grep -qx "$p1" <(port_names)
check "$p1 has vdev's skb-path program again" wait_for 10 has_tc_hook "$p1"

/usr/sbin/vdevctl port del "$p1" || fail "vdevctl port del $p1"
if grep -qx "$p1" <(port_names); then fail "$p1 still listed after port del"; else ok "port del $p1"; fi
if ip link show dev "$p1" >/dev/null 2>&1; then fail "$p1 still exists after port del"; else ok "$p1 deleted"; fi
if grep -q "^port name=$p1 " /var/lib/vdev/vdevd.state; then fail "$p1 still in the state file"; else ok "$p1 gone from the state file"; fi

# ---------------------------------------------------------------- purge
/usr/sbin/vdevctl port add "$p2" type veth create netns "$ns" || fail "vdevctl port add $p2"
/usr/sbin/vdevctl port add "$p3" type tap create owner nobody || fail "vdevctl port add $p3"
check "$p2 and $p3 attached" test "$(port_names | grep -cxE "$p2|$p3")" = 2
dpkg --purge vdev >"$tmp/dpkg-purge.log" 2>&1 || { cat "$tmp/dpkg-purge.log"; fail "dpkg --purge vdev"; }
ok "dpkg --purge vdev"
if kill -0 "$vdevd_pid" 2>/dev/null; then
  fail "vdevd still runs after the purge"
else
  wait "$vdevd_pid"
  rc=$?
  vdevd_pid=
  check "purge stopped vdevd with SIGTERM, clean exit ($rc)" test "$rc" = 0
fi
status=$(dpkg-query -W -f='${db:Status-Status}' vdev 2>/dev/null)
check "dpkg: vdev not installed ('$status')" test -z "$status" -o "$status" = not-installed
left=$(while read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done <"$tmp/package-files")
if [ -n "$left" ]; then fail "files of the package left: $left"; else ok "no file of the package left"; fi
for f in /etc/default/vdevd /var/lib/vdev /run/vdev/vdevd.sock \
         /etc/systemd/system/multi-user.target.wants/vdevd.service; do
  if [ -e "$f" ] || [ -L "$f" ]; then fail "$f left"; else ok "no $f"; fi
done
if getent group vdev >/dev/null; then fail "group vdev left"; else ok "no group vdev"; fi
for l in "$p2" "$p3"; do
  if ip link show dev "$l" >/dev/null 2>&1; then fail "device $l left"; else ok "device $l deleted"; fi
done
if ip netns exec "$ns" ip link show dev eth0 >/dev/null 2>&1; then fail "$p2's peer left in $ns"; fi
xdp_links >"$tmp/xdp.after"
managed_links >"$tmp/managed.after"
if ! cmp -s "$tmp/xdp.before" "$tmp/xdp.after"; then
  fail "XDP programs differ from before the test: $(diff "$tmp/xdp.before" "$tmp/xdp.after" | grep '^[<>]' | tr '\n' ' ')"
else
  ok "no XDP program left"
fi
if ! cmp -s "$tmp/managed.before" "$tmp/managed.after"; then
  fail "vdev:managed devices differ: $(diff "$tmp/managed.before" "$tmp/managed.after" | grep '^[<>]' | tr '\n' ' ')"
else
  ok "no vdev device left"
fi

if [ "$failures" -ne 0 ]; then
  for f in "$tmp"/vdevd.*.log; do
    [ -f "$f" ] || continue
    echo "--- vdevd's output ($(basename "$f"))"
    cat "$f"
  done
  echo "FAIL: $failures check(s) failed"
  exit 1
fi
echo "PASS: the package installs, runs, upgrades and purges cleanly"
