#!/usr/bin/env bash
# The data behind the golden files: built by the golden test (and by make_golden.py) in DIR with
# the built dcm, then given fixed times so that the output is the same on every run.
#   fixture.sh DIR
set -euo pipefail
dir=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
dcm() { node "$root/bin/dcm.js" "$@" >/dev/null; }

export DCM_DB=$dir/fleet.db
dcm subcloud-group add --name canary --description 'Zürich rack "A": first' --max_parallel_subclouds 5
dcm subcloud-group add --name 'edge\sites' --description 'C:\sites\edge # not a comment' --update_apply_type serial
dcm subcloud add subcloud1 subcloud2 --group canary --location 'Zürich' --description 'rack 1'
dcm subcloud add 'sc-日本' --group 'edge\sites' --description 'a very long description that goes on and on, well past the eighty columns where PyYAML folds a line' --software-version 24.09
dcm subcloud add subcloud4 --availability offline --deploy-status secondary --backup-status complete-central --management-subnet 192.168.101.0/24 --oam-floating-ip 10.10.10.2 --deploy-config-sync-status deployed
dcm subcloud update subcloud2 --sync patching=in-sync --prestage-status complete
dcm strategy create --type patch --max-parallel-subclouds 2
node --input-type=module -e "
import Database from '$root/node_modules/better-sqlite3/lib/index.js';
const d = new Database(process.argv[1]);
d.exec(\`
  UPDATE subcloud_group SET created_at = '2025-01-01 09:00:00.000000', updated_at = NULL;
  UPDATE subcloud SET created_at = '2025-01-01 09:30:00.' || printf('%06d', id), updated_at = NULL;
  UPDATE subcloud SET updated_at = '2025-01-01 09:45:00.000000' WHERE name = 'subcloud2';
  UPDATE strategy SET created_at = '2025-01-01 10:00:00.000000', updated_at = NULL;
  UPDATE strategy_step SET created_at = '2025-01-01 10:00:00.000000', started_at = '2025-01-01 10:01:00.000000',
    finished_at = '2025-01-01 10:05:00.000000', updated_at = '2025-01-01 10:05:00.000000';
  UPDATE strategy_step SET state = 'complete' WHERE subcloud_id = 1;
  UPDATE strategy_step SET state = 'failed', details = 'applying VIM patch strategy: apply phase failed' || char(10) ||
    'host controller-0: \"sw-patch\" exited 1 (C:\\\\temp)' WHERE subcloud_id = 3;
  INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome, details)
    SELECT id, 'pre check', 1, '2025-01-01 10:01:00.000000', '2025-01-01 10:02:00.000000', 'ok', '' FROM strategy_step WHERE subcloud_id = 1;
  INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome, details)
    SELECT id, 'applying VIM patch strategy', 2, '2025-01-01 10:03:00.000000', NULL, 'failed', 'apply phase failed' FROM strategy_step WHERE subcloud_id = 3;
\`);
d.close();
" "$DCM_DB"

export DCM_DB=$dir/sw-deploy.db
dcm subcloud add subcloud1
dcm strategy create --type sw-deploy --release-id stx-10.0.1 --delete --with-prestage --sysadmin-password 'S3cr3t!pw' --kube-upgrade v1.29.2
export DCM_DB=$dir/prestage.db
dcm subcloud add subcloud1
dcm strategy create --type prestage --sysadmin-password 'S3cr3t!pw'
for db in "$dir/sw-deploy.db" "$dir/prestage.db"; do
  node --input-type=module -e "
import Database from '$root/node_modules/better-sqlite3/lib/index.js';
const d = new Database(process.argv[1]);
d.exec(\"UPDATE strategy SET created_at = '2025-01-01 10:00:00.000000', updated_at = NULL\");
d.close();
" "$db"
done

# No strategy: the cases that create one or change a subcloud start from a fresh copy of it.
export DCM_DB=$dir/plain.db
dcm subcloud add subcloud1 --location 'Zürich' --software-version 24.09
dcm subcloud add subcloud2 --management unmanaged
dcm subcloud add 'sc-日本' --availability offline
dcm subcloud add subcloud4 --deploy-status secondary
node --input-type=module -e "
import Database from '$root/node_modules/better-sqlite3/lib/index.js';
const d = new Database(process.argv[1]);
d.exec(\"UPDATE subcloud SET created_at = '2025-01-01 09:30:00.' || printf('%06d', id), updated_at = NULL\");
d.close();
" "$DCM_DB"

# Steps in each of the server's stages (issue 52): subcloud4 initial (Create), subcloud2 in a state
# (Apply), subcloud1 complete and subcloud3 aborted (Complete); Default and canary make dcm's
# stages 1 and 2.
export DCM_DB=$dir/steps.db
dcm subcloud-group add --name canary
dcm subcloud add subcloud1 subcloud2 --group canary
dcm subcloud add subcloud3 subcloud4
dcm strategy create --type patch --patch-id P1
node --input-type=module -e "
import Database from '$root/node_modules/better-sqlite3/lib/index.js';
const d = new Database(process.argv[1]);
d.exec(\`
  UPDATE strategy SET created_at = '2025-01-01 10:00:00.000000', updated_at = NULL;
  UPDATE strategy_step SET created_at = '2025-01-01 10:00:00.000000';
  UPDATE strategy_step SET state = 'complete', started_at = '2025-01-01 10:01:00.000000', finished_at = '2025-01-01 10:05:00.000000',
    updated_at = '2025-01-01 10:05:00.000000' WHERE subcloud_id = 1;
  UPDATE strategy_step SET state = 'applying VIM patch strategy', started_at = '2025-01-01 10:06:00.000000',
    updated_at = '2025-01-01 10:07:00.000000' WHERE subcloud_id = 2;
  UPDATE strategy_step SET state = 'aborted', finished_at = '2025-01-01 10:08:00.000000',
    updated_at = '2025-01-01 10:08:00.000000' WHERE subcloud_id = 3;
\`);
d.close();
" "$DCM_DB"

# A subcloud marked for migration (unmanage --migrate), to be managed again (issue 52).
export DCM_DB=$dir/rehome.db
dcm subcloud add subcloud1 --management unmanaged --deploy-status rehome-pending --software-version 24.09
node --input-type=module -e "
import Database from '$root/node_modules/better-sqlite3/lib/index.js';
const d = new Database(process.argv[1]);
d.exec(\"UPDATE subcloud SET created_at = '2025-01-01 09:30:00.' || printf('%06d', id), updated_at = NULL\");
d.close();
" "$DCM_DB"
