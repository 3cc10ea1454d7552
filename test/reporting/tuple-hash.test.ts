// A tuple's id must be the same wherever it is computed (every lookup thread, the main
// thread's fallback counts, the tests' expectations): tupleHash, the lookup threads'
// TupleHasher (its customer-and-hour prefix hashed once) and hash.ts's hashAddIndexed
// (the values and their positions in one loop) all equal the plain streaming definition:
// the customer, the hour, then each value followed by its position.
import t from 'tap';
import { HASH, hashAdd, hashAddNumber, hashBegin, hashEnd } from '../../src/memory/hash.ts';
import { TupleHasher, tupleHash } from '../../src/counts/tuple.ts';

function reference(customerId: string, hour: number, dims: readonly string[], seed: number): [number, number] {
  hashBegin(seed);
  hashAdd(customerId);
  hashAddNumber(hour);
  for (let i = 0; i < dims.length; i++) {
    hashAdd(dims[i]!);
    hashAddNumber(i);
  }
  hashEnd();
  return [HASH[0]!, HASH[1]!];
}

function rnd(seed: number): () => number {
  let x = seed >>> 0;
  return () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 4294967296);
}

const ALPHABET = ['', 'a', 'pub-12', 'exchange.example', 'é', '\ud83d\ude00', 'x'.repeat(300), 'none', '3'];

t.test('tupleHash and TupleHasher equal the streaming definition', async (t) => {
  const r = rnd(7);
  const seed = 0x9e3779b1;
  const hasher = new TupleHasher(seed);
  const customers = ['6f1c2f9e-8a4b-4c7d-9e2f-1a2b3c4d5e6f', 'c1', ''];
  let mismatches = 0;
  let distinct = new Set<string>();
  for (let n = 0; n < 2000; n++) {
    // Runs of the same customer and hour, as a lookup thread sees them, with switches.
    const customerId = customers[Math.floor(r() * 1.2) % customers.length]!;
    const hour = 1_764_979_200_000 + 3_600_000 * Math.floor(r() * 1.3);
    const dims = Array.from({ length: 19 }, () => ALPHABET[Math.floor(r() * ALPHABET.length)]!);
    const want = reference(customerId, hour, dims, seed);
    tupleHash(customerId, hour, dims, seed);
    const plain = [HASH[0]!, HASH[1]!];
    hasher.hash(customerId, hour, dims);
    const resumed = [HASH[0]!, HASH[1]!];
    if (plain[0] !== want[0] || plain[1] !== want[1] || resumed[0] !== want[0] || resumed[1] !== want[1]) mismatches++;
    distinct.add(want.join(':'));
  }
  t.equal(mismatches, 0, 'every tuple hashes alike three ways');
  t.ok(distinct.size > 1900, `the tuples are varied (${distinct.size} distinct hashes)`);
});

t.test('a value moved to the next position changes the hash', async (t) => {
  const dims = ['ab', 'c', ...new Array<string>(17).fill('')];
  const moved = ['a', 'bc', ...new Array<string>(17).fill('')];
  tupleHash('c1', 0, dims, 1);
  const a = [HASH[0], HASH[1]];
  tupleHash('c1', 0, moved, 1);
  t.not(`${HASH[0]}:${HASH[1]}`, `${a[0]}:${a[1]}`);
});
