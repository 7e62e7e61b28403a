/**
 * The generic group queue (src/backends/shared/group-queue.ts), in process, no store: property tests
 * (fast-check) over random arrival schedules on several keys, random run durations and random
 * refusals and group failures, plus the batching semantics the backends rely on.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { GroupQueue, type GroupPolicy, type Waiting } from '../../src/backends/shared/group-queue.js';

interface Req {
  id: number;
  pool: string;
  claimant: string;
  key: string | null;
  /** Turn of the event loop in which it arrives. */
  turn: number;
  /** Turns its group's run takes at least. */
  duration: number;
  /** 'refuse': its own answer is a rejection; 'group': the run fails when it reaches this request. */
  fail: 'none' | 'refuse' | 'group';
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await nextTurn();
}

const requestArb = fc.record({
  pool: fc.constantFrom('p0', 'p1', 'p2'),
  claimant: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
  key: fc.option(fc.constantFrom('k0', 'k1', 'k2', 'k3'), { nil: null }),
  turn: fc.nat({ max: 6 }),
  duration: fc.nat({ max: 3 }),
  fail: fc.constantFrom<Req['fail']>('none', 'none', 'none', 'refuse', 'group'),
});

const policyArb = fc.record({
  max: fc.integer({ min: 1, max: 6 }),
  concurrency: fc.integer({ min: 1, max: 3 }),
  joinTurn: fc.boolean(),
  distinct: fc.boolean(),
  holdBack: fc.boolean(),
});

type PolicyDraft = { max: number; concurrency: number; joinTurn: boolean; distinct: boolean; holdBack: boolean };
type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Runs one schedule through a queue and checks every rule the backends rely on. */
async function runSchedule(policyIn: PolicyDraft, drafts: Omit<Req, 'id'>[]): Promise<void> {
  const requests: Req[] = drafts.map((d, id) => ({ ...d, id }));
  const policy: GroupPolicy<Req> = {
    max: policyIn.max,
    concurrency: policyIn.concurrency,
    joinTurn: policyIn.joinTurn,
    ...(policyIn.distinct ? { identify: (r: Req) => r, holdBack: policyIn.holdBack } : {}),
  };
  const holdBack = policyIn.distinct && policyIn.holdBack;
  const running = new Map<string, Set<Req[]>>(); // per pool: the groups running now
  const expected = new Map<number, Settled>();
  const answeredBy = new Map<number, number>(); // request id -> how many groups held it
  const startOrder = new Map<string, number[]>(); // per pool: request ids in the order groups started

  const violations: string[] = []; // broken rules, seen inside a run (where a throw fails only the group)
  const run = async (pool: string, group: readonly Waiting<Req, unknown>[]): Promise<void> => {
    try {
      await checkedRun(pool, group);
    } catch (error) {
      if (error instanceof assert.AssertionError) violations.push(error.message);
      throw error;
    }
  };
  const checkedRun = async (pool: string, group: readonly Waiting<Req, unknown>[]): Promise<void> => {
    const members = group.map((w) => w.request);
    assert.ok(members.length >= 1 && members.length <= policy.max, `group of ${members.length}, max ${policy.max}`);
    for (const r of members) {
      assert.equal(r.pool, pool);
      answeredBy.set(r.id, (answeredBy.get(r.id) ?? 0) + 1);
    }
    startOrder.set(pool, [...(startOrder.get(pool) ?? []), ...members.map((r) => r.id)]);
    if (policyIn.distinct) {
      assert.equal(new Set(members.map((r) => r.claimant)).size, members.length, 'a claimant twice in one group');
      const keys = members.flatMap((r) => (r.key === null ? [] : [r.key]));
      assert.equal(new Set(keys).size, keys.length, 'a key twice in one group');
    }
    const others = running.get(pool) ?? new Set<Req[]>();
    assert.ok(
      others.size < policy.concurrency,
      `${others.size + 1} groups of ${pool} running, bound ${policy.concurrency}`,
    );
    if (holdBack) {
      for (const other of others) {
        for (const r of members) {
          assert.ok(!other.some((o) => o.claimant === r.claimant), `claimant ${r.claimant} in two running groups`);
          assert.ok(r.key === null || !other.some((o) => o.key === r.key), `key ${r.key} in two running groups`);
        }
      }
    }
    others.add(members);
    running.set(pool, others);
    await turns(Math.max(...members.map((r) => r.duration)));
    const done = () => {
      others.delete(members);
      if (others.size === 0) running.delete(pool);
    };
    for (let i = 0; i < group.length; i++) {
      const r = members[i]!;
      if (r.fail === 'group') {
        // the whole statement fails: this request and the ones after it get the group's error
        const error = new Error(`group failed at ${r.id}`);
        for (const rest of members.slice(i)) expected.set(rest.id, { ok: false, error });
        done();
        throw error;
      }
      const outcome: Settled =
        r.fail === 'refuse' ? { ok: false, error: new Error(`refused ${r.id}`) } : { ok: true, value: `value ${r.id}` };
      expected.set(r.id, outcome);
      if (outcome.ok) group[i]!.resolve(outcome.value);
      else group[i]!.reject(outcome.error);
    }
    done();
  };

  const queue = new GroupQueue<Req, unknown>(policy, run);
  const settled = new Map<number, Settled[]>();
  const promises: Promise<void>[] = [];
  const lastTurn = Math.max(0, ...requests.map((r) => r.turn));
  for (let turn = 0; turn <= lastTurn; turn++) {
    for (const r of requests.filter((q) => q.turn === turn)) {
      const record = (s: Settled): void => void settled.set(r.id, [...(settled.get(r.id) ?? []), s]);
      promises.push(
        queue.add(r.pool, r).then(
          (value) => record({ ok: true, value }),
          (error: unknown) => record({ ok: false, error }),
        ),
      );
    }
    await nextTurn();
  }
  await Promise.all(promises);
  await nextTurn(); // the last groups' bookkeeping runs right after their answers

  assert.deepEqual(violations, []);
  for (const r of requests) {
    assert.equal(answeredBy.get(r.id), 1, `request ${r.id} served by ${answeredBy.get(r.id) ?? 0} groups`);
    const outcomes = settled.get(r.id) ?? [];
    assert.equal(outcomes.length, 1, `request ${r.id} settled ${outcomes.length} times`);
    const want = expected.get(r.id)!;
    const got = outcomes[0]!;
    assert.equal(got.ok, want.ok, `request ${r.id}: ok`);
    if (got.ok && want.ok) assert.equal(got.value, want.value);
    if (!got.ok && !want.ok) assert.equal(got.error, want.error, `request ${r.id} got another request's error`);
  }
  if (!policyIn.distinct) {
    // nothing is passed over: each pool's requests are served strictly in arrival order
    for (const [pool, order] of startOrder) {
      const arrival = requests
        .filter((r) => r.pool === pool)
        .sort((a, b) => a.turn - b.turn || a.id - b.id)
        .map((r) => r.id);
      assert.deepEqual(order, arrival);
    }
  }
  assert.equal(queue.activeKeys, 0, 'an idle queue keeps no per-key state');
}

describe('group queue', () => {
  it('random schedules: every request settles once with its own outcome, within every bound', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, fc.array(requestArb, { minLength: 1, maxLength: 40 }), (policy, requests) =>
        runSchedule(policy, requests),
      ),
      { numRuns: 1000 },
    );
  });

  it('an idle key runs a request at once: in the next turn with joinTurn, synchronously without', async () => {
    const started: number[][] = [];
    const run = async (_key: string, group: readonly Waiting<number, number>[]) => {
      started.push(group.map((w) => w.request));
      for (const w of group) w.resolve(w.request);
    };
    const joined = new GroupQueue<number, number>({ max: 10, concurrency: 1 }, run);
    const first = joined.add('k', 1);
    assert.deepEqual(started, []);
    await nextTurn();
    assert.deepEqual(started, [[1]]);
    assert.equal(await first, 1);

    started.length = 0;
    const immediate = new GroupQueue<number, number>({ max: 10, concurrency: 1, joinTurn: false }, run);
    const answers = [immediate.add('k', 1), immediate.add('k', 2), immediate.add('k', 3)];
    assert.deepEqual(started, [[1]], 'the first request starts at once, alone');
    assert.deepEqual(await Promise.all(answers), [1, 2, 3]);
    assert.deepEqual(started, [[1], [2, 3]], 'the ones that arrived meanwhile form the next group');
  });

  it('requests of one turn form groups of at most max, at most concurrency of them at once; a repeat waits', async () => {
    const started: string[][] = [];
    const releases: (() => void)[] = [];
    const run = async (_key: string, group: readonly Waiting<{ claimant: string; key: string | null }, string>[]) => {
      started.push(group.map((w) => w.request.claimant));
      await new Promise<void>((resolve) => releases.push(resolve));
      for (const w of group) w.resolve(w.request.claimant);
    };
    const queue = new GroupQueue(
      { max: 3, concurrency: 2, identify: (r: { claimant: string; key: string | null }) => r, holdBack: true },
      run,
    );
    const claimants = ['a', 'b', 'c', 'a', 'd', 'e', 'f', 'g'];
    const answers = claimants.map((claimant) => queue.add('pool', { claimant, key: null }));
    await nextTurn();
    // the repeat of 'a' is passed over (held back), not dropped: it keeps its place for a later group
    assert.deepEqual(started, [
      ['a', 'b', 'c'],
      ['d', 'e', 'f'],
    ]);
    releases.shift()!();
    await turns(2);
    assert.deepEqual(started.at(-1), ['a', 'g'], 'the repeat runs once its first group has ended');
    while (releases.length > 0) {
      releases.shift()!();
      await turns(2);
    }
    assert.deepEqual(await Promise.all(answers), claimants);
    assert.equal(queue.activeKeys, 0);
  });
});
