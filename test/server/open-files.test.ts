// Running out of file descriptors (src/server/open-files.ts): a node:http listener's accept
// errors (EMFILE) are taken, every one of them, never thrown as an uncaught 'error'; the
// counts it watches read this process's /proc.
import t from 'tap';
import { createServer } from 'node:http';
import { openFiles, openFilesLimit, watchOpenFiles } from '../../src/server/open-files.ts';

const emfile = () => Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });

t.test('a listener\'s EMFILE errors are taken, not thrown', async (t) => {
  const bare = createServer();
  t.throws(() => bare.emit('error', emfile()), /EMFILE/, 'without the watch, an accept error with no listener is thrown (uncaught: the fatal handler ends the process)');
  const server = createServer();
  const files = watchOpenFiles();
  files.take(server);
  t.doesNotThrow(() => {
    for (let i = 0; i < 5; i++) server.emit('error', emfile());
  }, 'with it, five in a row are taken');
  t.doesNotThrow(() => server.emit('error', Object.assign(new Error('accept ECONNABORTED'), { code: 'ECONNABORTED' })), 'and another accept error too');
  files.stop();
  t.throws(() => server.emit('error', emfile()), /EMFILE/, 'stop() gives them back');
});

t.test('the descriptors and their limit are read from /proc', async (t) => {
  const limit = openFilesLimit();
  const open = openFiles();
  t.ok(limit !== null && limit > 0, `limit ${limit}`);
  t.ok(open !== null && open > 2 && open < limit!, `${open} open`);
});
