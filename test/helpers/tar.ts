// Builds small tar archives for tests (ustar headers; GNU long names and pax records on request).
export interface TarEntry {
  name: string;
  data: Buffer | string;
  /** '0' file (default), '5' directory, 'L' GNU long name, 'x' pax header. */
  type?: string;
  /** Put the name in the ustar prefix field (for names with a directory part). */
  prefix?: string;
}

function header(name: string, size: number, type: string, prefix = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name.slice(0, 100), 0, 'utf8');
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148); // checksum placeholder: spaces
  h.write(type, 156);
  h.write('ustar\0', 257);
  h.write('00', 263);
  h.write(prefix.slice(0, 155), 345);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return h;
}

export function makeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data) : e.data;
    parts.push(header(e.name, data.length, e.type ?? '0', e.prefix));
    parts.push(data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}
