/** Median and spread of repeated measurements. */

export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** { median, min, max, n, samples } of a list of numbers. */
export function summary(values, digits = 3) {
  const round = (x) => Number(x.toFixed(digits));
  return {
    median: round(median(values)),
    min: round(Math.min(...values)),
    max: round(Math.max(...values)),
    n: values.length,
    samples: values.map(round),
  };
}

/**
 * A ratio of two measured series: the ratio of their medians, and the spread of the ratios of the
 * pairs measured next to each other (run i of one, then run i of the other).
 */
export function ratio(values, baselines) {
  const pairs = values.map((v, i) => v / baselines[i]).filter((x) => Number.isFinite(x));
  return {
    median: Number((median(values) / median(baselines)).toFixed(3)),
    min: Number(Math.min(...pairs).toFixed(3)),
    max: Number(Math.max(...pairs).toFixed(3)),
    n: pairs.length,
  };
}
