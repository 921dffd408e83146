#!/bin/sh
# A stand-in for a site's own check script, copied to the site and run by Ansible's `script` task.
# Ansible says only "non-zero return code" when it fails; why is in what it printed, which
# firmware.yaml's `reason` takes from the task's stderr, else its stdout.
echo "checking /var"
if [ "$1" = "$2" ]; then
  echo "disk full on /var: 2% free"
  exit 3
fi
echo "disk ok"
