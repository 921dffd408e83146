/**
 * Deterministic randomness for the simulator: the same (seed, cloud, state, attempt) always draws
 * the same numbers, whatever order the operations run in.
 */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small, well-distributed 32-bit generator. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function drawFor(seed: number, ...key: (string | number)[]): () => number {
  return generator(fnv1a(`${seed}\u0000${key.join('\u0000')}`));
}
