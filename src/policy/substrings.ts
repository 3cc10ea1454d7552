// One substring automaton per customer for its UA substring entries: a UA is scanned once,
// whatever the number of substrings, one table read per character. Built on the main
// thread (Aho-Corasick: a trie with failure links, then every failure resolved in advance
// into a full transition table, a DFA) into 32-bit words that are part of the customer's
// compiled policy in shared memory; lookup threads only read it. Matching folds ASCII
// letters to lowercase on both sides (substrings are stored as given); any other character,
// Unicode included, compares as UTF-16 code units.
//
// The table has one row per state and one column per character class: each character that
// occurs in a substring is a class, every other character is class 0 (it can only lead
// back to the start). Layout (word offsets from `base`):
//   header[4]       states, classes, non-ASCII characters (n), 0
//   ascii[128]      class of each ASCII code (folded)
//   wide[2n]        sorted non-ASCII code units, then their classes (binary search)
//   out[states]     actions (1 allow, 2 deny) of every substring ending at the state
//   next[states × classes]

export function foldChar(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
}

/** Table cells past which a list is refused (4 M cells: 16 MB; the budget share usually ends it first). */
export const MAX_CELLS = 1 << 22;

/** Builds the automaton of `patterns` (action 1 allow, 2 deny). Throws when it would exceed MAX_CELLS. */
export function buildAutomaton(patterns: ReadonlyArray<{ text: string; action: number }>): Uint32Array {
  const classOf = new Map<number, number>();
  for (const p of patterns) {
    for (let i = 0; i < p.text.length; i++) {
      const c = foldChar(p.text.charCodeAt(i));
      if (!classOf.has(c)) classOf.set(c, classOf.size + 1);
    }
  }
  const classes = classOf.size + 1;
  // The trie, as class-indexed maps.
  const trie: Array<Map<number, number>> = [new Map()];
  const out: number[] = [0];
  for (const p of patterns) {
    let s = 0;
    for (let i = 0; i < p.text.length; i++) {
      const k = classOf.get(foldChar(p.text.charCodeAt(i)))!;
      let n = trie[s]!.get(k);
      if (n === undefined) {
        n = trie.length;
        trie.push(new Map());
        out.push(0);
        trie[s]!.set(k, n);
      }
      s = n;
    }
    out[s]! |= p.action;
  }
  const states = trie.length;
  if (states * classes > MAX_CELLS) throw new Error(`the UA substrings need ${states * classes} table cells; at most ${MAX_CELLS}`);
  const wide = [...classOf.keys()].filter((c) => c >= 128).sort((a, b) => a - b);
  const outAt = 4 + 128 + 2 * wide.length;
  const nextAt = outAt + states;
  const w = new Uint32Array(nextAt + states * classes);
  w[0] = states;
  w[1] = classes;
  w[2] = wide.length;
  for (const [c, k] of classOf) if (c < 128) w[4 + c] = k;
  wide.forEach((c, i) => {
    w[4 + 128 + i] = c;
    w[4 + 128 + wide.length + i] = classOf.get(c)!;
  });
  // Breadth first: a state's failure state is complete before its own row is filled.
  const fail = new Uint32Array(states);
  const row = (s: number) => nextAt + s * classes;
  for (const [k, n] of trie[0]!) w[row(0) + k] = n;
  const queue: number[] = [...trie[0]!.values()];
  for (let q = 0; q < queue.length; q++) {
    const s = queue[q]!;
    const f = fail[s]!;
    out[s]! |= out[f]!;
    // Every class goes where the failure state goes, unless the trie says otherwise.
    w.copyWithin(row(s), row(f), row(f) + classes);
    for (const [k, n] of trie[s]!) {
      fail[n] = w[row(f) + k]!;
      w[row(s) + k] = n;
      queue.push(n);
    }
  }
  for (let s = 0; s < states; s++) w[outAt + s] = out[s]!;
  return w;
}

/**
 * The actions of every substring found in `ua` (bit 1 allow, bit 2 deny); stops at the
 * first deny. `base` is the automaton's first word in `w`.
 */
export function scanSubstrings(w: Uint32Array, base: number, ua: string): number {
  const states = w[base]!;
  const classes = w[base + 1]!;
  const nWide = w[base + 2]!;
  const asciiAt = base + 4;
  const wideAt = asciiAt + 128;
  const outAt = wideAt + 2 * nWide;
  const nextAt = outAt + states;
  let found = 0;
  let s = 0;
  for (let i = 0; i < ua.length; i++) {
    let c = ua.charCodeAt(i);
    let k: number;
    if (c < 128) {
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      k = w[asciiAt + c]!;
    } else {
      k = 0;
      let a = 0, b = nWide - 1;
      while (a <= b) {
        const m = (a + b) >>> 1;
        const v = w[wideAt + m]!;
        if (v === c) { k = w[wideAt + nWide + m]!; break; }
        if (v < c) a = m + 1; else b = m - 1;
      }
    }
    s = w[nextAt + s * classes + k]!;
    const o = w[outAt + s]!;
    if (o !== 0) {
      found |= o;
      if (found & 2) return found;
    }
  }
  return found;
}
