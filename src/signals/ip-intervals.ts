// Sorted, disjoint IP intervals, searched one way everywhere: the ASN table, the published
// ranges and customers' compiled policies. Starts ascend; an IPv4 start is one word, an IPv6
// start four, most significant first. Plain loops over typed arrays: no allocation.

/** Index of the last interval whose start ≤ n: IPv4 starts at words[at + i], i < count; -1 when none. */
export function lastStartV4(words: Uint32Array, at: number, count: number, n: number): number {
  let lo = 0;
  let hi = count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (words[at + mid]! <= n) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi;
}

/** The same over IPv6 starts: interval i's start is words[at + stride * i .. + 3]; q is the address's four words. */
export function lastStartV6(words: Uint32Array, at: number, stride: number, count: number, q: ArrayLike<number>): number {
  let lo = 0;
  let hi = count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp128(words, at + stride * mid, q, 0) <= 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi;
}

/** Compares the 128-bit numbers a[ai..ai+3] and b[bi..bi+3]: -1, 0 or 1. */
export function cmp128(a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number): number {
  for (let k = 0; k < 4; k++) {
    const x = a[ai + k]!;
    const y = b[bi + k]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
