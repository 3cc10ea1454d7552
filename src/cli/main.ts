// Entry point of `ivtd` (`npm run ivtd -- …`, `npm start`, and the single executable).
// No top-level await: the binary's bundle is CommonJS (Node 20 SEA).
import '../runtime/heap-flags.ts'; // first: before anything allocates
import { runCli } from './commands.ts';

void runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
}).then((code) => {
  process.exitCode = code;
});
