#!/bin/bash
# ssh-site.sh SSH-ARGS...: `ssh SSH-ARGS...` for one state of a dcm strategy, with the timeouts that
# keep a site from holding its run until the state's timeout, and an exit status that tells dcm why
# it ended (with the ssh.yaml beside this file):
#
#   75    the site cannot be reached, or stopped answering: ssh exited 255 for the connection (refused,
#         timed out, no route, no banner within ConnectTimeout, no answer to ServerAliveCountMax
#         keep-alives). dcm defers the step and tries the site again later (defer_exit_codes: [75]).
#   77    the site refused us: a wrong key or user (Permission denied), a host key that changed or is
#         unknown (Host key verification failed). No retry mends that: the step fails at once
#         (fail_exit_codes: [77]), its reason ssh's own words.
#   else  the remote command's own status. A remote command that exits 255 is read as ssh's: make it
#         exit another code for a failure.
#
# The last line on stderr is ssh's, which dcm takes as the failure's reason:
#   pre check: exit 77: sysadmin@10.20.0.1: Permission denied (publickey).
#
# Tune with SSH_CONNECT_TIMEOUT (default 10 s, the TCP connect and the banner), SSH_ALIVE_INTERVAL
# (15 s) and SSH_ALIVE_COUNT (4): a site that stops answering mid-run is given up after 60 s.
set -u
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
# stderr goes to the run's log as it comes (through tee, to the original stderr, fd 3), and to
# $err, read once ssh and tee have ended; stdout goes straight through (fd 4).
exec 3>&2
{
  ssh -o BatchMode=yes \
    -o ConnectTimeout="${SSH_CONNECT_TIMEOUT:-10}" \
    -o ServerAliveInterval="${SSH_ALIVE_INTERVAL:-15}" \
    -o ServerAliveCountMax="${SSH_ALIVE_COUNT:-4}" \
    "$@" </dev/null 2>&1 1>&4 4>&- | tee "$err" >&3
  rc=${PIPESTATUS[0]}
} 4>&1
[ "$rc" -eq 255 ] || exit "$rc"
last=$(grep -v '^[[:space:]]*$' "$err" | tail -n 1)
if grep -qE 'Permission denied|Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|Too many authentication failures|no matching host key type|Unable to negotiate' "$err"; then
  echo "ssh-site: refused: ${last:-ssh exited 255}" >&2
  exit 77
fi
echo "ssh-site: cannot reach the site: ${last:-ssh exited 255}" >&2
exit 75
