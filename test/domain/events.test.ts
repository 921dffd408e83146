/** The event record's words (pure): an update's changes written, and read back. */
import { describe, expect, test } from '@jest/globals';
import { changeText, parseChanges, stageWindowName } from '../../src/domain/events.js';

describe('changeText and parseChanges', () => {
  test('what changeText writes, parseChanges reads back (values as text, None for unset)', () => {
    const changes = [
      { name: 'max parallel subclouds', from: null, to: 4 },
      { name: stageWindowName(2), from: 2, to: 4 },
      { name: 'max failures', from: '3', to: '5%' },
    ];
    const text = changeText(changes);
    expect(text).toBe('max parallel subclouds: None -> 4; stage 2 window: 2 -> 4; max failures: 3 -> 5%');
    expect(parseChanges(text)).toEqual(changes.map((c) => ({ name: c.name, from: String(c.from ?? 'None'), to: String(c.to) })));
  });

  test('details that are not changes give none', () => {
    expect(parseChanges('applying -> paused')).toEqual([]);
    expect(parseChanges('')).toEqual([]);
  });
});
