/**
 * Fault injection under the Firestore client, at its raw gRPC stub: a Commit whose answer is lost.
 * The commit RPC reaches the (real) emulator and is applied, and the client is told
 * `14 UNAVAILABLE` instead of the answer — what a dropped connection or a proxy timeout does in
 * production. Everything above the stub runs unchanged: the client's own gax retry settings (the
 * ones dibs configures), its transaction runner, dibs' TxRunner. `not-sent` fails the RPC without
 * sending it (the outcome is known: nothing applied) to check that dibs still re-runs those.
 *
 * It reaches into the client's internals (its client pool and the GAPIC client's `firestoreStub`)
 * because the client offers no transport hook; `handle.injected` lets a test assert that the fault
 * really happened, so a client upgrade that moves these internals fails the test loudly.
 */
import type { Firestore } from '@google-cloud/firestore';
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { grpc } = require('google-gax') as { grpc: { Metadata: new () => unknown } };

export interface CommitRequest {
  writes?: { update?: { name?: string }; delete?: string; transform?: { document?: string } }[];
  transaction?: Buffer | Uint8Array;
}

export interface CommitFaults {
  /** Faults injected so far. */
  readonly injected: number;
  /** Commit RPCs seen so far (including the client's own re-sends). */
  readonly commits: number;
  stop(): void;
}

export interface CommitFaultOptions {
  /** Which commits to hit (default: every one) — e.g. by the paths of the documents written. */
  when?: (request: CommitRequest) => boolean;
  /** How many faults to inject in all (default 1). */
  times?: number;
  /**
   * `lost-response` (default): applied, then UNAVAILABLE. `not-sent`: UNAVAILABLE, nothing applied.
   * `aborted`: refused as contention (ABORTED), nothing applied — what a commit that lost a race gets.
   */
  mode?: 'lost-response' | 'not-sent' | 'aborted';
}

type Callback = (error: unknown, response?: unknown) => void;
type Unary = (...args: unknown[]) => unknown;

interface GapicClient {
  firestoreStub?: Promise<Record<string, Unary>>;
  initialize(): Promise<Record<string, Unary>>;
}

interface ClientPool {
  activeClients: Map<GapicClient, unknown>;
  clientFactory: (requiresGrpc: boolean) => GapicClient;
}

/** The paths a commit request writes. */
export function writtenPaths(request: CommitRequest): string[] {
  return (request.writes ?? []).map((w) => w.update?.name ?? w.delete ?? w.transform?.document ?? '');
}

function grpcError(code: number, name: string, details: string): Error {
  const error = new Error(`${code} ${name}: ${details}`) as Error & {
    code: number;
    details: string;
    metadata: unknown;
  };
  error.code = code;
  error.details = details;
  error.metadata = new grpc.Metadata();
  return error;
}

const unavailableError = () => grpcError(14, 'UNAVAILABLE', 'connection dropped (injected: commit answer lost)');
const abortedError = () => grpcError(10, 'ABORTED', 'too much contention on these documents (injected)');

export function injectCommitFaults(db: Firestore, options: CommitFaultOptions = {}): CommitFaults {
  const pool = (db as unknown as { _clientPool?: ClientPool })._clientPool;
  if (!pool || !(pool.activeClients instanceof Map) || typeof pool.clientFactory !== 'function')
    throw new Error('injectCommitFaults: the Firestore client internals moved (no _clientPool)');
  const state = { injected: 0, commits: 0, stopped: false };
  const limit = options.times ?? 1;
  const mode = options.mode ?? 'lost-response';
  const patched = new WeakSet<object>();

  const patchStub = (stub: Record<string, Unary>) => {
    if (patched.has(stub)) return;
    patched.add(stub);
    const original = stub.commit!;
    stub.commit = function (this: unknown, ...args: unknown[]) {
      state.commits++;
      const request = args[0] as CommitRequest;
      const at = args.findIndex((a) => typeof a === 'function');
      const hit = !state.stopped && state.injected < limit && at >= 0 && (options.when?.(request) ?? true);
      if (!hit) return original.apply(stub, args);
      state.injected++;
      const callback = args[at] as Callback;
      if (mode === 'not-sent' || mode === 'aborted') {
        const call = Object.assign(new EventEmitter(), { cancel() {}, getPeer: () => 'injected' });
        setImmediate(() => callback(mode === 'aborted' ? abortedError() : unavailableError()));
        return call;
      }
      const wrapped = [...args];
      wrapped[at] = (error: unknown, response?: unknown) =>
        error ? callback(error, response) : callback(unavailableError());
      return original.apply(stub, wrapped);
    };
  };
  const patchClient = (client: GapicClient) => {
    if (client.firestoreStub) {
      void client.firestoreStub.then(patchStub);
      return;
    }
    const initialize = client.initialize.bind(client);
    client.initialize = () => {
      const stub = initialize();
      // patched before the first call through it runs: `then` callbacks run in order
      void stub.then(patchStub);
      return stub;
    };
  };
  for (const client of pool.activeClients.keys()) patchClient(client);
  const factory = pool.clientFactory;
  pool.clientFactory = (requiresGrpc) => {
    const client = factory(requiresGrpc);
    patchClient(client);
    return client;
  };
  return {
    get injected() {
      return state.injected;
    },
    get commits() {
      return state.commits;
    },
    stop() {
      state.stopped = true;
    },
  };
}
