#!/usr/bin/env python3
"""Build the golden files of test/golden with cliff itself (Debian: apt-get install python3-cliff).

For each case of cases.json, the data comes from the built dcm as JSON (columns and typed values);
it is then printed by a real cliff Lister or ShowOne, with cliff's own formatter plugins and
option parsing, exactly as dcmanager's client prints it. The golden test compares dcm's own output
with these files. Run from the repository root after `npm run build`:  python3 test/golden/make_golden.py
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

from cliff.lister import Lister
from cliff.show import ShowOne

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GLOBAL = {'-f', '--format', '-c', '--column', '--sort-column', '--quote', '--prefix', '--max-width'}
FLAGS = {'--noindent', '--fit-width', '--print-empty', '--sort-ascending', '--sort-descending'}


def split(args):
    """dcm's command arguments, and the output options for cliff."""
    cmd, out, i = [], [], 0
    while i < len(args):
        if args[i] in GLOBAL:
            out += args[i:i + 2]
            i += 2
        elif args[i] in FLAGS:
            out.append(args[i])
            i += 1
        else:
            cmd.append(args[i])
            i += 1
    return cmd, out


# A case that writes (`"fresh": true`) runs on its own copy of the fixture's file, and the times it
# stamps read as this one, the same length, so that its files are the same on every run: the
# fixture's own times are all on 2025-01-01 before noon.
STAMP = re.compile(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}')
NOW = '2025-01-01 12:00:00.000000'


def mask(text):
    return STAMP.sub(lambda m: m.group(0) if m.group(0) < NOW else NOW, text)


def fresh_copy(db):
    fd, copy = tempfile.mkstemp(suffix='.db')
    os.close(fd)
    shutil.copyfile(db, copy)
    return copy


def data(db, args, fresh):
    """The record as JSON, and what dcm prints before it (a deprecation notice), as it is."""
    if fresh:
        db = fresh_copy(db)
    r = subprocess.run(['node', os.path.join(ROOT, 'bin', 'dcm.js'), '--db', db, *args, '-f', 'json'],
                       capture_output=True, text=True, check=True)
    out = mask(r.stdout) if fresh else r.stdout
    start = re.search(r'^[\[{]', out, re.M).start()
    return out[:start], json.loads(out[start:])


def cliff_print(kind, columns, values, out_args):
    stdout = io.StringIO()
    app = types.SimpleNamespace(stdout=stdout, options=types.SimpleNamespace(debug=False))
    base = Lister if kind == 'list' else ShowOne

    class Cmd(base):
        def take_action(self, parsed_args):
            return columns, values

    cmd = Cmd(app, None)
    parsed = cmd.get_parser('dcmanager').parse_args(out_args)
    cmd.run(parsed)
    return stdout.getvalue()


def main():
    spec = json.load(open(os.path.join(HERE, 'cases.json')))
    tmp = tempfile.mkdtemp()
    subprocess.run(['bash', os.path.join(HERE, 'fixture.sh'), tmp], check=True)
    jobs = []
    for case in spec['cases']:
        for v in spec['variants']:
            jobs.append((f"{case['name']}.{v['name']}", case, case['args'] + v['args'], v))
    for e in spec['extra']:
        jobs.append((e['name'], e, e['args'], e))
    for name, case, args, v in jobs:
        cmd, out = split(args)
        before, d = data(os.path.join(tmp, case['db']), cmd + v.get('data', []), case.get('fresh', False))
        kind = 'list' if isinstance(d, list) else 'show'
        if v.get('list') and kind != 'list' or v.get('show') and kind != 'show':
            continue
        columns = list(d[0].keys()) if kind == 'list' else list(d.keys())
        values = [tuple(r.values()) for r in d] if kind == 'list' else tuple(d.values())
        with open(os.path.join(HERE, f'{name}.txt'), 'w', encoding='utf-8', newline='') as f:
            f.write(before + cliff_print(kind, columns, values, out))
    print(f'{len(jobs)} golden cases written to {HERE}', file=sys.stderr)


if __name__ == '__main__':
    main()
