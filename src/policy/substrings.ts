// One Aho-Corasick automaton per customer for its UA substring entries: a UA is scanned
// once, whatever the number of substrings, in time linear in its length. Built on the main
// thread into 32-bit words (part of the customer's compiled policy in shared memory);
// lookup threads only read it. Matching folds ASCII letters to lowercase on both sides
// (substrings are stored as given); other characters, any Unicode, compare as UTF-16 code units.
//
// Layout (word offsets relative to `base`):
//   fail[states], out[states]   failure link and the actions (1 allow, 2 deny) of every
//                               substring ending in that state or in its failure chain
//   root[128]                   the root's transitions on ASCII, dense (most characters of a UA leave the root at once)
//   edges[cap × 3]              open-addressed (state, char) → next; state stored + 1 so 0 is empty

export function foldChar(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
}

function edgeSlot(state: number, c: number, mask: number): number {
  return (Math.imul(state, 0x9e3779b1) ^ Math.imul(c, 0x85ebca6b)) & mask;
}

export interface BuiltAutomaton {
  words: Uint32Array;
  states: number;
  edgeCap: number;
}

/** Builds the automaton of `patterns` (action 1 allow, 2 deny). */
export function buildAutomaton(patterns: ReadonlyArray<{ text: string; action: number }>): BuiltAutomaton {
  const trans: Array<Map<number, number>> = [new Map()];
  const out: number[] = [0];
  for (const p of patterns) {
    let s = 0;
    for (let i = 0; i < p.text.length; i++) {
      const c = foldChar(p.text.charCodeAt(i));
      let n = trans[s]!.get(c);
      if (n === undefined) {
        n = trans.length;
        trans.push(new Map());
        out.push(0);
        trans[s]!.set(c, n);
      }
      s = n;
    }
    out[s]! |= p.action;
  }
  const states = trans.length;
  const fail = new Uint32Array(states);
  // Breadth first: a state's failure link is known before its children's.
  const queue: number[] = [];
  for (const n of trans[0]!.values()) queue.push(n);
  for (let q = 0; q < queue.length; q++) {
    const s = queue[q]!;
    out[s]! |= out[fail[s]!]!;
    for (const [c, n] of trans[s]!) {
      let f = fail[s]!;
      while (f !== 0 && !trans[f]!.has(c)) f = fail[f]!;
      const g = trans[f]!.get(c);
      fail[n] = g !== undefined && g !== n ? g : 0;
      queue.push(n);
    }
  }
  let edges = 0;
  for (const m of trans) edges += m.size;
  let cap = 16;
  while (cap < edges * 2) cap *= 2;
  const words = new Uint32Array(2 * states + 128 + 3 * cap);
  words.set(fail, 0);
  for (let s = 0; s < states; s++) words[states + s] = out[s]!;
  const rootAt = 2 * states;
  const edgeAt = rootAt + 128;
  const mask = cap - 1;
  for (let s = 0; s < states; s++) {
    for (const [c, n] of trans[s]!) {
      if (s === 0 && c < 128) words[rootAt + c] = n;
      let i = edgeSlot(s, c, mask);
      while (words[edgeAt + 3 * i] !== 0) i = (i + 1) & mask;
      words[edgeAt + 3 * i] = s + 1;
      words[edgeAt + 3 * i + 1] = c;
      words[edgeAt + 3 * i + 2] = n;
    }
  }
  return { words, states, edgeCap: cap };
}

/** The next state from `s` on `c`, or -1. */
function step(w: Uint32Array, edgeAt: number, mask: number, s: number, c: number): number {
  let i = edgeSlot(s, c, mask);
  for (;;) {
    const at = edgeAt + 3 * i;
    const st = w[at]!;
    if (st === 0) return -1;
    if (st === s + 1 && w[at + 1] === c) return w[at + 2]!;
    i = (i + 1) & mask;
  }
}

/**
 * The actions of every substring found in `ua` (bit 1 allow, bit 2 deny); stops at the
 * first deny. `base` is the automaton's first word in `w`.
 */
export function scanSubstrings(w: Uint32Array, base: number, states: number, edgeCap: number, ua: string): number {
  const failAt = base;
  const outAt = base + states;
  const rootAt = base + 2 * states;
  const edgeAt = rootAt + 128;
  const mask = edgeCap - 1;
  let found = 0;
  let s = 0;
  for (let i = 0; i < ua.length; i++) {
    const c = foldChar(ua.charCodeAt(i));
    for (;;) {
      if (s === 0) {
        s = c < 128 ? w[rootAt + c]! : Math.max(0, step(w, edgeAt, mask, 0, c));
        break;
      }
      const n = step(w, edgeAt, mask, s, c);
      if (n >= 0) {
        s = n;
        break;
      }
      s = w[failAt + s]!;
    }
    const o = w[outAt + s]!;
    if (o !== 0) {
      found |= o;
      if (found & 2) return found;
    }
  }
  return found;
}
