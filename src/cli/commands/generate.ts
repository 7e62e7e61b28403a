/** `dibs generate`: unique random codes from a pattern, straight into a pool, with a progress bar. */
import { Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { CHARSETS, codeShape } from '../../core/generate.js';
import { intOption, output, withDibs } from '../context.js';

interface GenerateOptions {
  count: number;
  length?: number;
  pattern?: string;
  charset: string;
  prefix?: string;
  suffix?: string;
  check?: boolean;
  progress: boolean;
}

export function generateCommand(program: Command): void {
  program
    .command('generate <pool>')
    .description('generate unique, hard-to-guess codes into a pool (crypto randomness, optional check character)')
    .requiredOption('--count <n>', 'how many new codes', intOption('--count'))
    .option('--length <n>', 'random characters per code (or give --pattern)', intOption('--length'))
    .option('--pattern <pattern>', 'literal text with # for each random character, e.g. PROMO-####-####')
    .addOption(
      new Option(
        '--charset <chars>',
        `${Object.keys(CHARSETS).join(' | ')} (look-alikes 0/O, 1/I/L left out) or your own characters`,
      ).default('alphanumeric'),
    )
    .option('--prefix <text>', 'literal text before every code')
    .option('--suffix <text>', 'literal text after every code')
    .option('--check', 'append a check character (Luhn mod N) so typos are caught before a lookup')
    .option('--no-progress', 'no progress bar')
    .addHelpText(
      'after',
      `
Examples:
  $ dibs generate spring --count 100000 --pattern SPRING-####-#### --check
  $ dibs generate vip --count 500 --length 6 --charset numeric --prefix VIP

At most half of the pattern's space may be generated (e.g. 6 numeric places allow 500,000): beyond
that codes become guessable and draws collide; such a request is refused before anything is written.`,
    )
    .action(async (pool: string, opts: GenerateOptions, command: Command) => {
      await withDibs(command, async (dibs) => {
        const spec = {
          count: opts.count,
          charset: opts.charset,
          ...(opts.length !== undefined ? { length: opts.length } : {}),
          ...(opts.pattern !== undefined ? { pattern: opts.pattern } : {}),
          ...(opts.prefix !== undefined ? { prefix: opts.prefix } : {}),
          ...(opts.suffix !== undefined ? { suffix: opts.suffix } : {}),
          checkChar: Boolean(opts.check),
        };
        codeShape(spec).assertFeasible(spec.count); // a clear refusal before the pool is touched
        const bar =
          opts.progress && process.stderr.isTTY
            ? new cliProgress.SingleBar(
                {
                  format: 'generating [{bar}] {value}/{total} codes · {collisions} redrawn · {eta_formatted} left',
                  stream: process.stderr,
                },
                cliProgress.Presets.shades_classic,
              )
            : null;
        bar?.start(spec.count, 0, { collisions: 0 });
        const started = Date.now();
        try {
          const result = await dibs.pools.generate(pool, spec, {
            onProgress: (p) => bar?.update(p.generated, { collisions: p.collisions }),
          });
          bar?.stop();
          output(
            command,
            result,
            () =>
              `generated ${result.generated} codes into ${pool} (${result.collisions} draws redrawn) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
          );
        } finally {
          bar?.stop();
        }
      });
    });
}
