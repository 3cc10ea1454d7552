// Entry point of `ivtd` (`npm run ivtd -- …`, `npm start`, and the single executable).
import { runCli } from './commands.ts';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
});
