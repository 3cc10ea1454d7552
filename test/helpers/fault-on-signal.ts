// Loaded into an `ivtd serve` child with `--import` (tests only): on SIGUSR2 the main
// thread fails with nothing to catch it, as a bug in a callback would: an exception thrown
// from a timer callback, or (TEST_FAULT=reject) a promise rejected with no handler.
process.on('SIGUSR2', () => {
  if (process.env.TEST_FAULT === 'reject') {
    void Promise.reject(new Error('injected rejection nobody handles'));
  } else {
    setImmediate(() => {
      throw new Error('injected fault nobody catches');
    });
  }
});
