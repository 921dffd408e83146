#!/usr/bin/env bash
# A rollout report written against dcmanager's documented output (cliff's formats), not against
# dcm: `read` of -f value columns (in table order), `eval` of -f shell, counting <none> rows,
# --yes on apply and delete as sites with CLI_CONFIRMATIONS=enabled pass it. The test runs it
# unchanged, with `dcmanager` on PATH starting dcm.
set -u

count_none() { grep -c '^<none>' || true; }

# The fleet, one line per subcloud: -c picks columns, -f value keeps the table's order.
dcmanager subcloud list -c availability -c name -c management -f value |
  while read -r name management availability; do
    echo "subcloud $name: $management/$availability"
  done

eval "$(dcmanager subcloud show subcloud1 -f shell --prefix sc_)"
echo "subcloud1 patching: $sc_patching_sync_status (group $sc_group_id)"

dcmanager patch-strategy apply --yes >/dev/null
# dcmanager applies in the background: wait until the strategy ends.
while :; do
  eval "$(dcmanager patch-strategy show -f shell)"
  case "$state" in complete | failed | aborted) break ;; esac
  sleep 5
done
echo "strategy: $strategy_type $state"

failed=0
while read -r cloud state; do
  [ "$state" = failed ] && failed=$((failed + 1)) && echo "failed: $cloud"
done < <(dcmanager strategy-step list -c state -c cloud -f value)
echo "failed steps: $failed"

dcmanager patch-strategy delete --yes >/dev/null
echo "steps left: $(dcmanager strategy-step list -f value | grep -vc '^<none>' || true)"
echo "<none> rows: $(dcmanager strategy-step list -f value | count_none)"
