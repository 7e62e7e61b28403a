/**
 * The real `dibs` program (src/cli) with the loadtest command registered on it, exactly as the
 * CLI will wire it, and the same error handling as src/cli/main.ts — so the tests drive
 * `dibs loadtest` as a real CLI process before it is wired into main.
 */
import { reportError } from '../../src/cli/context.js';
import { buildProgram } from '../../src/cli/program.js';
import { registerLoadtestCommand } from '../../src/loadtest/command.js';

process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const program = buildProgram();
registerLoadtestCommand(program);
try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error);
}
