/**
 * Waiting rooms on Firestore. Every step — admission (drop unused windows that passed, make a fair
 * start's draw at the opening, refill the rate budget, admit the next places while units remain,
 * close the line when the sale is over), then the step's own work (enable, join, read or verify a
 * ticket, reserve with an admitted ticket together with the hold and the per-customer limit) — is
 * ONE transaction of the sale (a SaleStep, sale-step.ts): its clock is the sale document's read
 * time, and its commit is guarded by the sale document's update time, so a room step and any other
 * step of the sale (a buy, a confirmation, a hold that expires) are serialised.
 *
 * A transaction writes at most 500 documents, so no step rewrites tickets in bulk: a ticket's
 * status is derived from the room document (room-state.ts) —
 *   - the fair start's draw records only the seed and the pre-queue's size; an early ticket's
 *     place is `drawnPlaces(seed, preQueue)[number]` whenever it is read or admitted;
 *   - admission adds the admitted numbers (with their window's end) to the room's `adm`, and
 *     without verification raises `thr`, the last place admitted (admission is a prefix of the
 *     line); with verification it takes the verified waiting tickets (`vf`) in place order;
 *   - a window that passes is dropped from `adm`: a ticket admitted once (verified, behind `thr`,
 *     neither admitted now, waiting for admission nor used) is expired;
 *   - a sale over for good sets `closed`: every ticket still waiting reads as sold out.
 * Only a join, a verification and a reservation write a ticket document (one each).
 *
 * Requests of one sale that wait in this process at the same time share one transaction (as sale
 * steps do, sale-queue.ts): a flash crowd polling its tickets is one transaction per process in
 * flight, not hundreds colliding on the sale document.
 *
 * Tokens are HMACs with the room's secret (core/sales/waiting-room.ts), kept on the room document.
 */
import { randomBytes } from 'node:crypto';
import type { DocumentReference } from '@google-cloud/firestore';
import { DibsError, isDibsError, notFound } from '../../core/errors.js';
import type { HoldResult } from '../../core/sales/types.js';
import {
  notAdmitted,
  verifyTicket,
  type Ticket,
  type WaitingRoom,
  type WaitingRoomBackend,
  type WaitingRoomSpec,
} from '../../core/sales/waiting-room.js';
import { GroupQueue, type Waiting } from '../shared/group-queue.js';
import { encodeId, type Layout } from './layout.js';
import { RoomState, type RoomDoc, type TicketDoc } from './room-state.js';
import { reserveIn } from './sale-ops.js';
import { SaleStep } from './sale-step.js';
import { RETRY, type TxRunner } from './transactions.js';

/** Most requests one transaction serves (each may write a ticket: far below 500 writes). */
const GROUP_MAX = 50;

type Op =
  | { kind: 'enable'; spec: WaitingRoomSpec; secret: string }
  | { kind: 'get' }
  | { kind: 'join'; customer: string }
  | { kind: 'ticket'; customer: string; token: string }
  | { kind: 'verify'; customer: string; token: string }
  | { kind: 'reserve'; customer: string; token: string; quantity: number; ttlMs: number };

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
/** An operation with when its caller asked: the contention deadline counts from the group's oldest. */
type Queued = Op & { at: number };

export class FirestoreWaitingRooms implements WaitingRoomBackend {
  private readonly queue: GroupQueue<Queued, unknown>;

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {
    this.queue = new GroupQueue({ max: GROUP_MAX, concurrency: 1, joinTurn: false }, (saleId, group) =>
      this.runGroup(saleId, group),
    );
  }

  enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom> {
    return this.submit(saleId, { kind: 'enable', spec, secret: randomBytes(32).toString('base64url') });
  }

  get(saleId: string): Promise<WaitingRoom> {
    return this.submit(saleId, { kind: 'get' });
  }

  join(saleId: string, customer: string): Promise<Ticket> {
    return this.submit(saleId, { kind: 'join', customer });
  }

  ticket(saleId: string, customer: string, token: string): Promise<Ticket> {
    return this.submit(saleId, { kind: 'ticket', customer, token });
  }

  verify(saleId: string, customer: string, token: string): Promise<Ticket> {
    return this.submit(saleId, { kind: 'verify', customer, token });
  }

  reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult> {
    return this.submit(saleId, { kind: 'reserve', customer, token, quantity, ttlMs });
  }

  private submit<T>(saleId: string, op: Op): Promise<T> {
    return this.queue.add(saleId, { ...op, at: Date.now() }) as Promise<T>;
  }

  private roomRef(saleId: string): DocumentReference {
    return this.layout.sale(saleId).sale.collection('room').doc('state');
  }

  private ticketRef(saleId: string, customer: string): DocumentReference {
    return this.layout.sale(saleId).sale.collection('tickets').doc(encodeId(customer));
  }

  private async runGroup(saleId: string, group: readonly Waiting<Queued, unknown>[]): Promise<void> {
    const customers = [...new Set(group.flatMap((w) => ('customer' in w.request ? [w.request.customer] : [])))];
    const outcomes = await this.runner.run<Outcome[]>(
      async (tx, _n, attempt) => {
        const step = await SaleStep.open(tx, this.layout, saleId, 'optimistic');
        // the stale pass first: holds that expired free units before admission counts them
        const [roomSnap, ...ticketSnaps] = await step.prefetch({
          customers: group.flatMap((w) => (w.request.kind === 'reserve' ? [w.request.customer] : [])),
          extra: [this.roomRef(saleId), ...customers.map((c) => this.ticketRef(saleId, c))],
        });
        const tickets = new Map<string, TicketDoc | null>();
        customers.forEach((c, i) => tickets.set(c, (ticketSnaps[i]!.data() as TicketDoc | undefined) ?? null));
        const box = { room: roomSnap!.exists ? new RoomState(step, roomSnap!.data() as RoomDoc) : null };
        box.room?.admit();
        const dirty = new Set<string>();
        const answers: Outcome[] = [];
        for (const w of group) {
          try {
            answers.push({ ok: true, value: await this.apply(step, box, tickets, dirty, w.request) });
          } catch (error) {
            if (!isDibsError(error)) throw error;
            answers.push({ ok: false, error });
          }
        }
        if (box.room?.dirty) step.set(this.roomRef(saleId), { ...box.room.doc });
        for (const c of dirty) step.set(this.ticketRef(saleId, c), { ...tickets.get(c)! });
        // a refusal decided on reads that no commit validates stands only if they were one state
        if (answers.some((a) => !a.ok) && !(await step.refusalsStand())) return RETRY;
        step.commit(attempt);
        return answers;
      },
      undefined,
      { optimistic: true, since: Math.min(...group.map((w) => w.request.at)) },
    );
    group.forEach((w, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    });
  }

  private async apply(
    step: SaleStep,
    box: { room: RoomState | null },
    tickets: Map<string, TicketDoc | null>,
    dirty: Set<string>,
    op: Op,
  ): Promise<unknown> {
    const saleId = step.sale.id;
    if (op.kind === 'enable') {
      if (step.sale.cap === null)
        throw new DibsError(
          'invalid_input',
          `sale '${saleId}' is unlimited: a waiting room needs a cap to admit against`,
          { field: 'saleId' },
        );
      const room = box.room ?? RoomState.create(step, op.secret);
      // a change of verification needs the unverified tickets (a query: this is rare)
      const switching = op.spec.verification !== undefined && op.spec.verification !== room.doc.ver;
      const unverified = switching
        ? (await step.query(this.layout.sale(saleId).sale.collection('tickets').where('v', '==', false))).docs.map(
            (d) => d.get('n') as number,
          )
        : [];
      room.configure(op.spec, unverified);
      // from now on the sale sells only through admitted tickets (sale-ops.ts)
      if (step.sale.wr !== true) step.touchSale().wr = true;
      box.room = room;
      room.admit();
      return room.describe();
    }
    const room = box.room;
    if (!room) throw notFound('waiting room of sale', saleId);
    if (op.kind === 'get') return room.describe();
    if (op.kind === 'join') {
      if (!tickets.get(op.customer)) {
        tickets.set(op.customer, room.newTicket(op.customer));
        dirty.add(op.customer);
        // a newcomer to an empty line with units left is admitted at once
        room.admit();
      }
      return room.toTicket(tickets.get(op.customer)!);
    }
    const ticket = tickets.get(op.customer) ?? null;
    const number = verifyTicket(room.doc.secret, saleId, op.customer, op.token);
    if (!ticket || ticket.n !== number)
      throw new DibsError(
        'invalid_ticket',
        `this ticket is not valid for customer '${op.customer}' in sale '${saleId}'`,
        {
          field: 'ticket',
        },
      );
    if (op.kind === 'ticket') return room.toTicket(ticket);
    if (op.kind === 'verify') {
      if (room.verify(ticket)) {
        dirty.add(op.customer);
        // a verified ticket at the door goes in now
        room.admit();
      }
      return room.toTicket(ticket);
    }
    // the same reservation again (a retry after a lost answer) gets the same hold back: the key
    const key = `ticket:${ticket.n}`;
    if (ticket.u) return reserveIn(step, op.customer, op.quantity, op.ttlMs, key, true);
    const status = room.statusOf(ticket);
    if (status !== 'admitted')
      throw notAdmitted({
        saleId,
        number: ticket.n,
        status,
        position: room.positionOf(ticket, status),
        verified: ticket.v,
      });
    const result = await reserveIn(step, op.customer, op.quantity, op.ttlMs, key, true);
    room.use(ticket, result.hold.id);
    dirty.add(op.customer);
    return result;
  }
}
