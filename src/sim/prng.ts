/**
 * The simulator's one source of chance: a seeded PRNG (mulberry32), so that a seed replays a
 * schedule exactly. Nothing in src/sim calls Math.random.
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
}

/** The seed of schedule `i` of a run started with `seed`: each schedule replays alone by its own seed. */
export function scheduleSeed(seed: number, i: number): number {
  let h = (Math.imul(seed ^ 0x85ebca6b, 0xc2b2ae35) + Math.imul(i + 1, 0x27d4eb2f)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  return (h ^ (h >>> 13)) >>> 0;
}

/** FNV-1a over a string, into `h`. */
function mix(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return Math.imul(h ^ 0xff, 0x01000193) >>> 0;
}

/**
 * A PRNG for one key of a schedule (a site's run: its site, state and attempt), from the schedule's
 * seed and the key alone: what is drawn for it does not depend on what was drawn before, so a
 * schedule with one fault fewer draws the same for every run it still has.
 */
export function keyedPrng(seed: number, ...key: (string | number)[]): Prng {
  let h = mix(0x811c9dc5 ^ seed, '');
  for (const k of key) h = mix(h, String(k));
  return new Prng(h);
}
