// A shape: which parts of a JSON document a reader wants (src/prebid/ortb/map.ts's bid request shape,
// src/signals/schain.ts's supply chain), and a value read by one. An object the shape reads is
// a Fields: its wanted keys' values at the keys' indexes in the shape (keysOf), so a reader
// takes each field at a fixed index, never by a name (V8 then builds and reads these objects
// without keyed lookups by name, which a bid request's forty fields paid for twice: the build's
// stores and the mapping's loads). Arrays keep every element, each read by the element shape;
// a value whose type is not the one the shape expects (an array where an object is read, an
// object where a string is) is kept whole, so a reader sees the same types and values as in
// the document. The fast parse (pruned-json.ts) builds such values from a body's bytes;
// prune() makes them from a value JSON.parse built: one reader for both.
import { isJsonObject, type JsonValue } from './bounded-json.ts';

/** Build this value whole. */
export const WHOLE = 0;
/** An object of which only these keys are built (each by its shape), or an array whose every element is built by the one shape in it. */
export type JsonShape = typeof WHOLE | { readonly [key: string]: JsonShape } | readonly [JsonShape];

/**
 * An object read by its shape: the values of the shape's keys by the key's index in the shape
 * (keysOf), undefined where the object lacks the key. A class of its own, so that the mapping
 * tells an object read by its shape from a value built whole (`instanceof Fields`).
 */
export class Fields {
  constructor(readonly at: Array<Pruned | undefined>) {}
}

/** A value read by a shape: a Fields where it reads an object, an array of such values where it reads an array, else the JSON value whole. */
export type Pruned = JsonValue | Fields | Pruned[];

/** Each key of an object shape and its index in the Fields read by that shape. */
export function keysOf<S extends { readonly [key: string]: JsonShape }>(shape: S): { readonly [K in keyof S]: number } {
  const out: Record<string, number> = {};
  Object.keys(shape).forEach((k, i) => (out[k] = i));
  return out as { readonly [K in keyof S]: number };
}

/** A shape as the builder reads it (compileShape); load() writes the scan's copy of it into the scan's memory. */
export interface Compiled {
  /** An object shape's keys and their shapes (null: whole), parallel. */
  keys: string[];
  shapes: Array<Compiled | null>;
  /** An object shape's Fields before any value: as many undefined as keys (copied per object: a packed array, no holes). */
  blank: undefined[];
  /** An array shape's element shape (null: whole); undefined for an object shape. */
  elem: Compiled | null | undefined;
}

/** An object shape as parsePruned reads it: made once (the body's at module load), not per body. */
export function compileShape(shape: { readonly [key: string]: JsonShape }): Compiled {
  return compile(shape)!;
}

function compile(shape: JsonShape): Compiled | null {
  if (shape === WHOLE) return null;
  if (Array.isArray(shape)) return { keys: [], shapes: [], blank: [], elem: compile((shape as readonly [JsonShape])[0]) };
  const keys = Object.keys(shape);
  for (const k of keys) if (!/^[\x20-\x7e]*$/.test(k) || k.includes('"') || k.includes('\\')) throw new Error('a shape key must be printable ASCII without a quote or a backslash');
  return { keys, shapes: keys.map((k) => compile((shape as Record<string, JsonShape>)[k]!)), blank: Array.from(keys, () => undefined), elem: undefined };
}

/**
 * `value`, a JSON value built whole (the reference parser's), read by `shape` (null: whole)
 * as parsePruned reads the same text: what the mapping reads, whichever path parsed the body.
 */
export function prune(value: JsonValue, shape: Compiled | null): Pruned {
  if (shape === null) return value;
  if (shape.elem !== undefined) return Array.isArray(value) ? value.map((e) => prune(e, shape.elem!)) : value;
  if (!isJsonObject(value)) return value;
  const at: Array<Pruned | undefined> = shape.blank.slice();
  shape.keys.forEach((k, i) => {
    const v = Object.hasOwn(value, k) ? value[k] : undefined;
    if (v !== undefined) at[i] = prune(v, shape.shapes[i]!);
  });
  return new Fields(at);
}
