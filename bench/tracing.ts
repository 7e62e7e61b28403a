/**
 * What tracing costs a claim: the same in-process SQLite claims, untraced and traced (an SDK
 * tracer provider with a batch processor whose exporter discards the spans, so export I/O is
 * not measured), in interleaved rounds (untraced, traced, untraced, traced, …): median and
 * spread of each. Per claim, tracing makes two spans (the library call and the store step).
 * `sqlite::memory:` keeps the store cheap, so this is the worst case for the relative cost;
 * with a store on disk or on the network the same cost is a smaller share.
 */
import {
  NodeTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { openDibs, type Dibs } from '../src/index.js';
import { timeOps } from './lib/measure.js';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const discard: SpanExporter = {
  export: (_spans: ReadableSpan[], done) => done({ code: 0 }),
  shutdown: async () => {},
};

async function round(tracing: boolean): Promise<number> {
  const dibs: Dibs = await openDibs('sqlite::memory:', { tracing });
  try {
    await dibs.pools.create({ name: 'bench' });
    await dibs.pools.importCodes(
      'bench',
      Array.from({ length: CLAIMS }, (_, i) => `DIBS-${i}`),
    );
    const run = await timeOps(CLAIMS, 1, (i) => dibs.pools.claim('bench', `user-${i}`));
    return CLAIMS / run.seconds;
  } finally {
    await dibs.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function main(): Promise<void> {
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] });
  provider.register();
  const plain: number[] = [];
  const traced: number[] = [];
  await round(false); // warm-up (JIT, module loading)
  await round(true);
  for (let i = 0; i < ROUNDS; i++) {
    plain.push(await round(false));
    traced.push(await round(true));
  }
  await provider.shutdown();
  const fmt = (xs: number[]) =>
    `median ${Math.round(median(xs))} claims/s (spread ${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))})`;
  console.log(`\n${CLAIMS} claims × ${ROUNDS} interleaved rounds, 1 in flight, sqlite::memory:`);
  console.log(`untraced: ${fmt(plain)}`);
  console.log(`traced:   ${fmt(traced)}`);
  console.log(`traced/untraced (medians): ${(median(traced) / median(plain)).toFixed(2)}×`);
}
