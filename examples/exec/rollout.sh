#!/usr/bin/env bash
# `npm run demo:exec`: a patch rollout where every state is a real command (examples/exec/site.sh)
# against a fake site whose state lives in a temporary folder. 40 subclouds in two groups, a
# canary first; a few runs fail now and then and are retried. Leaves nothing behind unless
# KEEP=1 (then it prints where the database, the logs and the sites are).
set -uo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/dcm-exec-demo.XXXXXX")
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
export DCM_DB="$work/fleet.db" FAKE_SITES="$work/sites" SITE_FAIL_PCT="${SITE_FAIL_PCT:-5}"
dcm() { node bin/dcm.js "$@"; }

dcm subcloud-group add --name canary --max_parallel_subclouds 2 >/dev/null
dcm subcloud-group add --name fleet --max_parallel_subclouds 10 >/dev/null
dcm subcloud add site01 site02 --group canary >/dev/null
dcm subcloud add $(printf 'site%02d ' $(seq 3 40)) --group fleet >/dev/null
dcm strategy create --type patch --patch-id PATCH_0001 --driver exec --exec-config examples/exec/patch.yaml >/dev/null
echo "== applying: 40 sites, canary (window 2) then fleet (window 10)"
dcm strategy apply >/dev/null 2> >(tail -n 2 >&2)
status=$?
sleep 0.2
echo "== strategy apply exited $status (0 complete, 1 failed)"
echo "== runs that were retried:"
dcm strategy-step history -f value -c cloud -c state -c attempt -c outcome | awk '$NF != "ok"' | head
echo "== site03 as its fake site sees it:"
cat "$FAKE_SITES/site03"
echo "== the output of site03's runs (one log per run, under the database path + .logs):"
dcm strategy-step logs site03
[ "${KEEP:-}" = 1 ] && echo "== kept: $work"
exit 0
