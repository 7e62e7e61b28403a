/**
 * A minimal `dibs` program carrying only the loadtest command, so the tests can drive the
 * command as a real CLI process before the lead wires it into src/cli.
 */
import { Command } from 'commander';
import { registerLoadtestCommand } from '../../src/loadtest/command.js';

const program = new Command('dibs');
registerLoadtestCommand(program);
await program.parseAsync(process.argv);
