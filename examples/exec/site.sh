#!/bin/sh
# site.sh ACTION CLOUD [ARG]: a fake subcloud's side of a patch update, for the exec driver's demo.
#
# Each site keeps its own state in $FAKE_SITES/<cloud> (a folder the demo creates): the patches it
# has applied and its VIM strategy (none, building, ready-to-apply, applying, applied). An action
# takes a random time (up to $SITE_DELAY_MS, default 300), fails now and then ($SITE_FAIL_PCT
# percent, default 0), and refuses to run beside another action on the same site, or out of
# order, the way a real site does ("unexpected state ready-to-apply").
#
# Every action is idempotent: run again after a crash ($DCM_RESUMED=1) it finds its own work
# done, or half done, and carries on.
set -u
action=$1 cloud=$2 arg=${3:-}
: "${FAKE_SITES:?FAKE_SITES must name a folder for the fake sites}"
mkdir -p "$FAKE_SITES"
site="$FAKE_SITES/$cloud"
[ -f "$site" ] || printf 'patches=\nvim=none\n' >"$site"

# One action at a time per site: a second one fails at once, as a busy site would.
exec 9>"$site.lock"
if ! flock -n 9; then
  echo "site $cloud is busy with another operation" >&2
  exit 75
fi

get() { sed -n "s/^$1=//p" "$site"; }
put() {
  tmp="$site.tmp.$$"
  { grep -v "^$1=" "$site"; echo "$1=$2"; } >"$tmp" && mv "$tmp" "$site"
}

delay_ms=${SITE_DELAY_MS:-300}
ms=$(awk -v seed="$$" -v max="$delay_ms" 'BEGIN { srand(seed); printf "%d", rand() * max }')
sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"

fail_pct=${SITE_FAIL_PCT:-0}
roll=$(awk -v seed="$$$ms" 'BEGIN { srand(seed); printf "%d", rand() * 100 }')
[ "${DCM_RESUMED:-}" = 1 ] && echo "resumed after an interruption (attempt $DCM_ATTEMPT): checking what is done"

vim=$(get vim)
case $action in
  precheck)
    echo "$cloud: alarms clear, disk ok, running $(get patches | tr ',' ' ' | wc -w) patches"
    ;;
  apply-patch)
    case ",$(get patches)," in
      *",$arg,"*) echo "$cloud: patch $arg already applied" ;;
      *)
        if [ "$roll" -lt "$fail_pct" ]; then
          echo "$cloud: sw-patch apply $arg: connection reset by peer" >&2
          exit 1
        fi
        have=$(get patches)
        put patches "${have:+$have,}$arg"
        echo "$cloud: patch $arg applied"
        ;;
    esac
    ;;
  vim-create)
    case $vim in
      none|applied|building) put vim ready-to-apply; echo "$cloud: VIM strategy built" ;;
      ready-to-apply) echo "$cloud: VIM strategy already built" ;;
      *) echo "$cloud: unexpected state $vim" >&2; exit 1 ;;
    esac
    ;;
  vim-apply)
    case $vim in
      ready-to-apply|applying)
        put vim applying
        if [ "$roll" -lt "$fail_pct" ]; then
          echo "$cloud: VIM strategy apply failed: host controller-1 did not reboot in time" >&2
          exit 1
        fi
        put vim applied
        echo "$cloud: VIM strategy applied"
        ;;
      applied) echo "$cloud: VIM strategy already applied" ;;
      *) echo "$cloud: unexpected state $vim" >&2; exit 1 ;;
    esac
    ;;
  finish)
    put vim none
    echo "$cloud: cleaned up; patches: $(get patches)"
    ;;
  *)
    echo "unknown action $action" >&2
    exit 64
    ;;
esac
