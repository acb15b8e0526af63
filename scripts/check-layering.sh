#!/bin/bash
# Checks the module map of docs/architecture.md ("Modules"): a module
# includes headers of itself and of the modules it uses, never of one above
# it. Prints every include that breaks the map; exits 1 if there is one.
# Usage: scripts/check-layering.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# module -> the modules it may include (besides itself)
declare -A uses=(
  [base]=""
  [ringbuf]=""
  [rtnl]="base"
  [stats]="base"
  [spec]="base"
  [proto]="base stats spec"
  [datapath]="base ringbuf stats spec rtnl"
  [daemon]="base ringbuf stats spec rtnl proto datapath"
  [testkit]="base stats"
  [tools]="base stats spec rtnl proto testkit"
)

# module -> its folder (the product's modules under vdev/, the netlink code
# under netlink/)
declare -A dir=(
  [base]=vdev/base [stats]=vdev/stats [spec]=vdev/spec [datapath]=vdev/datapath
  [daemon]=vdev/daemon [testkit]=vdev/testkit
  [rtnl]=netlink/rtnl [proto]=netlink/proto
  [ringbuf]=ringbuf [tools]=tools
)

bad=0
for mod in "${!uses[@]}"; do
  folder=${dir[$mod]}
  [ -d "$folder" ] || { echo "check-layering: no folder $folder/" >&2; exit 2; }
  allowed=" $mod ${uses[$mod]} "
  while IFS=: read -r file line inc; do
    dep=${inc#*\"}
    dep=${dep%%/*}
    # Only module headers count ("base/result.h"); system and local headers
    # ("guest.h", "linux/bpf.h" through <>) are not modules.
    [ -n "${uses[$dep]+set}" ] || continue
    case "$allowed" in
      *" $dep "*) ;;
      *) echo "$file:$line: $mod includes $dep ($inc): not in its uses (${uses[$mod]:-none})"; bad=1 ;;
    esac
  done < <(grep -rnE '^#include "[a-z_]+/' "$folder" --include='*.h' --include='*.cpp' --include='*.c' || true)
done
[ "$bad" = 0 ] && echo "check-layering: every include follows the module map"
exit "$bad"
