#!/usr/bin/env bash
# An operator's maintenance script written against dcmanager's client, as sites write them: ids
# from -f value -c id, eval of -f shell, argparse abbreviations (--det, --form, --max-parallel,
# --stop, --col, --noind), --yes on everything that confirms (CLI_CONFIRMATIONS=enabled). The test
# runs it unchanged, with `dcmanager` on PATH starting dcm.
set -eu

# Take every offline subcloud out of management, by id.
for id in $(dcmanager subcloud list --col id --col availability --form value | awk '$2 == "offline" {print $1}'); do
  dcmanager subcloud unmanage "$id" --yes >/dev/null
  eval "$(dcmanager subcloud show "$id" --det --form shell --prefix sc_)"
  echo "unmanaged $sc_name ($sc_availability, $sc_management)"
done

# One patch strategy, two at a time, stop on the first failure.
dcmanager patch-strategy create --max-parallel 2 --stop --form value --col "max parallel subclouds" --col "stop on failure"
dcmanager patch-strategy apply --yes >/dev/null || true
while :; do
  eval "$(dcmanager patch-strategy show --form shell)"
  case "$state" in complete | failed | aborted) break ;; esac
  sleep 5
done
echo "patch strategy: $state"

# What failed, and why.
for cloud in $(dcmanager strategy-step list --col cloud --col state --form value | awk '$2 == "failed" {print $1}'); do
  echo "failed $cloud: $(dcmanager subcloud errors "$cloud")"
done
dcmanager patch-strategy delete --yes >/dev/null

# Retire the last subcloud and an empty group, by id.
last=$(dcmanager subcloud list --col id --form value | tail -1)
dcmanager subcloud delete "$last" --yes
group=$(dcmanager subcloud-group list --col id --col name --form value | awk '$2 == "retired" {print $1}')
dcmanager subcloud-group delete "$group" --yes
echo "subclouds left: $(dcmanager subcloud list --form json --noind --col name)"
echo "groups left: $(dcmanager subcloud-group list --form value --col name | tr '\n' ' ')"
