/**
 * Issue 34, item 2 (the labels): the report's event labels that share a moment (an operator's
 * pause, update and resume typed together, a takeover and its adoption) are laid out in rows of
 * their own, never drawn on top of each other. Read in Chromium, by the labels' boxes as drawn.
 */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { dcm} from '../helpers/cli.js';
import { withSql } from '../helpers/fleet.js';
import { tempPerTest } from '../helpers/history.js';
import { openFile, withChromium } from '../helpers/browser.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

describe('strategy report: event labels', () => {
  test('six events at one moment, and five more a moment later: every label drawn, none over another', async () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3', 's4']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '50ms', '--max-parallel-subclouds', '1']);
    expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(0);
    // Events at the middle of the stage, as the record holds them after a burst of commands:
    // written here by hand, so that they share their moment exactly.
    const names = ['paused', 'updated', 'resumed', 'updated', 'abort requested', 'retried'];
    await withSql(t.db, async (d) => {
      const at = await d
        .prepare(`SELECT strftime('%Y-%m-%d %H:%M:%f', (julianday(min(started_at)) + julianday(max(finished_at))) / 2) || '000' FROM step_history`)
        .pluck()
        .get() as string;
      const later = await d.prepare(`SELECT strftime('%Y-%m-%d %H:%M:%f', julianday(?) + 0.02 / 86400) || '000'`).pluck().get(at) as string;
      const insert = d.prepare(`INSERT INTO strategy_event (strategy_id, at, event, "user", host, pid, details) VALUES (1, ?, ?, 'alice', 'ops', 1, '')`);
      for (const n of names) await insert.run(at, n);
      for (const n of names.slice(0, 5)) await insert.run(later, n);
    });
    const html = path.join(t.dir, 'r.html');
    dcmQuickOk(['--db', t.db, 'strategy', 'report', '--html', html]);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      const seen = await o.page.evaluate(() => {
        const marks = [...document.querySelectorAll<SVGGElement>('.stage g.event-mark')];
        const boxes = marks.map((g) => g.querySelector('text.event-label')).filter((x): x is SVGTextElement => x !== null).map((t) => {
          const r = t.getBoundingClientRect();
          return { text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
        });
        return { marks: marks.length, boxes };
      });
      expect(seen.marks).toBe(2 + names.length + 5);
      // Every event keeps its label.
      expect(seen.boxes).toHaveLength(seen.marks);
      const overlaps: string[] = [];
      for (let i = 0; i < seen.boxes.length; i++) {
        for (let j = i + 1; j < seen.boxes.length; j++) {
          const a = seen.boxes[i];
          const b = seen.boxes[j];
          if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push(`${a.text} / ${b.text}`);
        }
      }
      expect(overlaps).toEqual([]);
    });
  }, 90_000);
});
