// Polls a condition in a test.

/** Polls until `ok()` holds; returns the milliseconds it took, or throws after `ms`. */
export async function until(what: string, ok: () => Promise<boolean>, ms = 8000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await ok()) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
