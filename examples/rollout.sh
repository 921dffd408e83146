#!/usr/bin/env bash
# A whole simulated rollout: 300 subclouds in four groups (groups go in id order, so the canary
# group, created first, is stage 1), one injected failure, then the status and the failed steps.
# Uses ./demo.db (or $DCM_DB) and starts it afresh.
set -uo pipefail
cd "$(dirname "$0")/.."
export DCM_DB="${DCM_DB:-demo.db}"
dcm() { node bin/dcm.js "$@"; }

rm -f "$DCM_DB" "$DCM_DB-wal" "$DCM_DB-shm" "$DCM_DB.sites" "$DCM_DB.sites-wal" "$DCM_DB.sites-shm"
dcm subcloud-group add --name canary --max_parallel_subclouds 5 --description "goes first" >/dev/null
dcm subcloud-group add --name east --max_parallel_subclouds 40 >/dev/null
dcm subcloud-group add --name west --update_apply_type serial >/dev/null
dcm subcloud-group add --name edge --max_parallel_subclouds 10 >/dev/null
dcm subcloud add $(printf 'canary%d ' $(seq 1 10)) --group canary >/dev/null
dcm subcloud add $(printf 'east%03d ' $(seq 1 200)) --group east >/dev/null
dcm subcloud add $(printf 'west%d ' $(seq 1 20)) --group west >/dev/null
dcm subcloud add $(printf 'edge%02d ' $(seq 1 70)) --group edge >/dev/null
dcm subcloud update edge01 edge02 --availability offline >/dev/null
dcm subcloud update edge03 --management unmanaged >/dev/null
dcm subcloud update edge04 edge05 --sync patching=in-sync >/dev/null
# Groups that hold subclouds: the Default group is always there, and empty here.
echo "== fleet: $(dcm subcloud list -f value -c name | wc -l) subclouds in $(dcm subcloud list -d -f value -c group_id | sort -u | wc -l) groups"

dcm strategy create --type patch --sim-latency 5ms..30ms --sim-seed 7 --sim-fail east042='applying VIM patch strategy'
echo "== applying: a live view on a terminal (off one, a line per subcloud that ends); the summary names the failures"
dcm strategy apply -c state -c updated_at
status=$?
# The exit code says how the strategy ended (0 complete, 1 failed, 3 aborted): say it in words.
case $status in
  0) ended="the strategy is complete" ;;
  1) ended="the strategy failed" ;;
  3) ended="the strategy was aborted" ;;
  *) ended="apply did not finish" ;;
esac
echo "== strategy apply exited $status: $ended"
echo "== where it stands (any time, from any shell: dcm strategy status --watch):"
dcm strategy status -c state -c steps -c complete -c failed -c aborted -c elapsed
echo "== the failed steps (dcm's stage number beside dcmanager's columns, as -c names it):"
dcm strategy-step list --state failed -c cloud -c 'stage number' -c state -c details -c finished_at
exit 0
