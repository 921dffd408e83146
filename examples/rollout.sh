#!/usr/bin/env bash
# A whole simulated rollout: 300 subclouds in four groups (groups go in id order, so the canary
# group, created first, is stage 1), one injected failure, then the step list.
# Uses ./demo.db (or $DCM_DB) and starts it afresh.
set -uo pipefail
cd "$(dirname "$0")/.."
export DCM_DB="${DCM_DB:-demo.db}"
dcm() { node bin/dcm.js "$@"; }

rm -f "$DCM_DB" "$DCM_DB-wal" "$DCM_DB-shm"
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
echo "== fleet: $(dcm subcloud list -f value -c name | wc -l) subclouds in $(dcm subcloud-group list -f value -c id | wc -l) groups"

dcm strategy create --type patch --sim-latency 5ms..30ms --sim-seed 7 --sim-fail east042='applying VIM patch strategy'
echo "== applying: one progress line per transition goes to stderr; the last lines are kept here"
dcm strategy apply 2> >(tail -n 3 >&2)
status=$?
sleep 0.2
echo "== strategy apply exited $status (0 complete, 1 failed, 3 aborted)"
echo "== steps that did not complete:"
dcm strategy-step list --state failed --state aborted --state initial
echo "== every step:"
dcm strategy-step list
exit 0
