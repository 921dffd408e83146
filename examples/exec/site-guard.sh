#!/bin/sh
# site-guard.sh COMMAND [ARG...]: run COMMAND on a site only if this run of dcm is not stale.
#
# dcm never starts a second run of a state beside a live one. A site can hold it to that on its own
# side with the variables every run carries: DCM_RUN_ID (strategy/cloud/state/attempt, the same
# after a kill -9 of dcm and adoption) and DCM_ATTEMPT. The guard keeps, per state, the attempt
# and run id it last accepted, and refuses (exit 75) an attempt lower than that one, or a run id
# that has already run here: a stale or duplicated attempt never touches the site twice.
#
# Install it on the site and call it through ssh, passing the two variables on:
#   ssh "$DCM_CLOUD" "DCM_RUN_ID='$DCM_RUN_ID' DCM_ATTEMPT=$DCM_ATTEMPT site-guard.sh sw-patch apply ID"
set -u
: "${DCM_RUN_ID:?DCM_RUN_ID must be set}" "${DCM_ATTEMPT:?DCM_ATTEMPT must be set}"
book=${SITE_GUARD_DIR:-/var/lib/dcm-guard}
mkdir -p "$book"
# One record per strategy and state: the run id without its attempt.
key=$(printf '%s' "${DCM_RUN_ID%/*}" | tr -c 'A-Za-z0-9._-' '_')
exec 9>"$book/$key.lock"
flock 9
last_attempt=0 last_id=
[ -f "$book/$key" ] && . "$book/$key"
if [ "$DCM_ATTEMPT" -lt "$last_attempt" ] || [ "$DCM_RUN_ID" = "$last_id" ]; then
  echo "refused: attempt $DCM_ATTEMPT of $DCM_RUN_ID is stale (last accepted: $last_id)" >&2
  exit 75
fi
printf 'last_attempt=%s\nlast_id=%s\n' "$DCM_ATTEMPT" "'$DCM_RUN_ID'" >"$book/$key.tmp" && mv "$book/$key.tmp" "$book/$key"
# The lock stays held while the command runs: a duplicate waits, then finds its id recorded.
"$@"
