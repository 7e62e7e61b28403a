#!/usr/bin/env node
import { buildProgram } from './program.js';
import { reportError } from './context.js';

// `dibs export spring | head` closes our stdout early: that is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const program = buildProgram();
try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error);
}
