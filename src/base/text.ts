// Small text helpers for what people send and read: input quoted in a message, and text
// files as editors write them.

/**
 * `v` as a JSON string (quotes and escapes shown, control characters visible), its first
 * `max` characters then … when longer: a 10 MB value sent does not come back as a 10 MB message.
 */
export function quoted(v: string, max = 60): string {
  return JSON.stringify(v.length > max ? v.slice(0, max) + '…' : v);
}

/**
 * `text` without a leading byte order mark. Editors on Windows start a UTF-8 file with one,
 * and JSON.parse refuses it as an (invisible) unexpected character.
 */
export function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A value as ClickHouse stores it from a JSON insert and compares it in a literal: lone surrogates → U+FFFD. */
export function toStoredString(value: string): string {
  return value.replace(LONE_SURROGATE, '\ufffd');
}
