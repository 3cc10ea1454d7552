// Input quoted in a message for a person: as JSON (quotes and escapes shown, control
// characters visible), cut so that a 10 MB value sent does not come back as a 10 MB message.

/** `v` as a JSON string, its first `max` characters then … when longer. */
export function quoted(v: string, max = 60): string {
  return JSON.stringify(v.length > max ? v.slice(0, max) + '…' : v);
}
