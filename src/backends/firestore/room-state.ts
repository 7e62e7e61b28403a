/**
 * A waiting room's document on Firestore and everything derived from it inside one sale step
 * (waiting-rooms.ts says why tickets are derived rather than rewritten). Pure arithmetic on the
 * documents the step read; the step writes the room back if `dirty`.
 */
import { randomBytes } from 'node:crypto';
import { drawOrder } from '../../core/sales/fair-draw.js';
import {
  admissions,
  estimatedWait,
  signTicket,
  ticketPosition,
  type Ticket,
  type TicketStatus,
  type WaitingRoom,
  type WaitingRoomSpec,
} from '../../core/sales/waiting-room.js';
import { isoMs } from './sale-records.js';
import type { SaleStep } from './sale-step.js';

/** dibs/{prefix}/sales/{id}/room/state */
export interface RoomDoc {
  rate: number;
  /** Window to reserve once admitted, ms. */
  win: number;
  secret: string;
  fair: boolean;
  ver: boolean;
  /** Tickets joined: the last arrival number given. */
  j: number;
  /** The last place admitted (without verification every place up to it was admitted). */
  thr: number;
  /** Admissions so far, and tickets used so far. */
  ca: number;
  cu: number;
  /** Token bucket: budget and when it was last refilled (ms). */
  b: number;
  rf: number;
  /** Admitted tickets not used yet: arrival number -> end of the window (ms). */
  adm: Record<string, number>;
  /** Verified tickets waiting for admission (arrival numbers): admitted in place order. */
  vf: number[];
  /** The sale is over for good: every ticket still waiting is sold out. */
  closed: boolean;
  /** The opening's draw: seed (null: arrival order), pre-queue size, when (ms; null until the opening). */
  seed: string | null;
  preq: number;
  drawn: number | null;
  created: number;
}

/** dibs/{prefix}/sales/{id}/tickets/{b64(customer)} */
export interface TicketDoc {
  n: number;
  c: string;
  /** Verified (true at once in a room without verification). */
  v: boolean;
  /** Used: reserved with, `h` the hold. */
  u: boolean;
  h: string | null;
  at: number;
}

/** The draws of the rooms this process stepped lately: order and places per (seed, size). */
const draws = new Map<string, { order: number[]; places: number[] }>();

function drawn(seed: string, size: number): { order: number[]; places: number[] } {
  const key = `${seed}:${size}`;
  let found = draws.get(key);
  if (!found) {
    const order = drawOrder(seed, size);
    const places = new Array<number>(size + 1).fill(0);
    order.forEach((number, k) => {
      places[number] = k + 1;
    });
    found = { order, places };
    if (draws.size >= 8) draws.delete(draws.keys().next().value!);
    draws.set(key, found);
  }
  return found;
}

export class RoomState {
  dirty = false;

  constructor(
    private readonly step: SaleStep,
    readonly doc: RoomDoc,
  ) {}

  static create(step: SaleStep, secret: string): RoomState {
    const room = new RoomState(step, {
      rate: 1,
      win: 0,
      secret,
      fair: false,
      ver: false,
      j: 0,
      thr: 0,
      ca: 0,
      cu: 0,
      b: -1,
      rf: step.now,
      adm: {},
      vf: [],
      closed: false,
      seed: null,
      preq: 0,
      drawn: null,
      created: step.now,
    });
    room.dirty = true;
    return room;
  }

  /** New settings; a flag left out keeps its value. `unverified`: the unverified tickets, when verification changes. */
  configure(spec: WaitingRoomSpec, unverified: readonly number[] = []): void {
    const doc = this.doc;
    doc.rate = spec.admitPerSecond;
    doc.win = spec.windowMs;
    // a new room's bucket starts full: the first second's worth is admitted without a wait
    if (doc.b < 0) doc.b = Math.max(1, doc.rate);
    if (spec.fairStart !== undefined) doc.fair = spec.fairStart;
    if (spec.verification !== undefined && spec.verification !== doc.ver) {
      const no = new Set(unverified);
      const place = (n: number) => this.placeOf(n) ?? Number.POSITIVE_INFINITY;
      if (spec.verification) {
        // the verified tickets still waiting (the line from `thr` on, the passed-over list) wait
        // for admission on the list; the unverified ones wait to be verified
        const pending: number[] = [];
        if (doc.drawn === null) for (let n = 1; n <= doc.j; n++) pending.push(n);
        else for (let p = doc.thr + 1; p <= doc.j; p++) pending.push(this.numberAt(p));
        doc.vf = [...new Set([...doc.vf, ...pending])].filter((n) => doc.adm[n] === undefined && !no.has(n));
      } else {
        // from now on admission goes by place from `thr`; the tickets passed over before `thr`
        // (verified since, or still unverified) are admitted first, from the list
        doc.vf = [...new Set([...doc.vf, ...unverified])].filter((n) => place(n) <= doc.thr);
      }
      doc.ver = spec.verification;
    }
    this.dirty = true;
  }

  /** Admission (the header of waiting-rooms.ts), at the step's clock. */
  admit(): void {
    const { step, doc } = this;
    const now = step.now;
    for (const [n, until] of Object.entries(doc.adm))
      if (until <= now) {
        delete doc.adm[n];
        this.dirty = true;
      }
    if (doc.closed) return;
    const sale = step.sale;
    const over = sale.cancelled !== null || step.nowIso >= sale.ends || (sale.cap !== null && sale.sold >= sale.cap);
    if (over) {
      doc.closed = true;
      this.dirty = true;
      return;
    }
    if (step.nowIso < sale.starts) return; // the line forms before the start; admission begins at it
    if (doc.drawn === null) this.draw();
    const unused = Object.keys(doc.adm).length;
    const { admit, budget } = admissions({
      budget: doc.b,
      elapsedMs: now - doc.rf,
      rate: doc.rate,
      freeUnits: sale.cap! - sale.sold - sale.held - unused * sale.limit,
      perCustomerLimit: sale.limit,
      waiting: doc.vf.length + (doc.ver ? 0 : Math.max(0, doc.j - doc.thr)),
    });
    // nothing admitted: the bucket keeps filling from `rf` (the same budget as refilling now)
    if (admit === 0) return;
    const until = now + doc.win;
    const place = (n: number) => this.placeOf(n) ?? Number.POSITIVE_INFINITY;
    const first = [...doc.vf].sort((a, b) => place(a) - place(b)).slice(0, admit);
    doc.vf = doc.vf.filter((n) => !first.includes(n));
    for (const n of first) {
      doc.adm[n] = until;
      doc.thr = Math.max(doc.thr, place(n));
    }
    if (!doc.ver)
      for (let k = first.length; k < admit; k++) {
        doc.thr += 1;
        doc.adm[this.numberAt(doc.thr)] = until;
      }
    doc.ca += admit;
    doc.b = budget;
    doc.rf = now;
    this.dirty = true;
  }

  /** The opening: every ticket so far is the pre-queue, placed by a seeded shuffle in a fair start. */
  private draw(): void {
    const doc = this.doc;
    doc.drawn = this.step.now;
    doc.preq = doc.j;
    doc.seed = doc.fair ? randomBytes(8).toString('hex') : null;
    this.dirty = true;
  }

  /** A ticket's place: drawn for the pre-queue of a fair start (null until the draw), else its number. */
  placeOf(n: number): number | null {
    const doc = this.doc;
    if (doc.drawn === null) return doc.fair ? null : n;
    if (doc.seed !== null && n <= doc.preq) return drawn(doc.seed, doc.preq).places[n]!;
    return n;
  }

  /** The arrival number at a place (once drawn). */
  private numberAt(place: number): number {
    const doc = this.doc;
    if (doc.seed !== null && place <= doc.preq) return drawn(doc.seed, doc.preq).order[place - 1]!;
    return place;
  }

  newTicket(customer: string): TicketDoc {
    const doc = this.doc;
    doc.j += 1;
    this.dirty = true;
    return { n: doc.j, c: customer, v: !doc.ver, u: false, h: null, at: this.step.now };
  }

  /** Marks a ticket verified; false when it already was. */
  verify(t: TicketDoc): boolean {
    if (t.v) return false;
    t.v = true;
    // without verification (switched off since this ticket joined) the ticket is in line already:
    // by place from `thr` on, or on the list if it was passed over (configure)
    if (this.doc.ver) this.doc.vf.push(t.n);
    this.dirty = true;
    return true;
  }

  use(t: TicketDoc, holdId: string): void {
    t.u = true;
    t.h = holdId;
    delete this.doc.adm[t.n];
    this.doc.cu += 1;
    this.dirty = true;
  }

  statusOf(t: TicketDoc): TicketStatus {
    const doc = this.doc;
    if (t.u) return 'used';
    const until = doc.adm[t.n];
    if (until !== undefined && until > this.step.now) return 'admitted';
    const place = this.placeOf(t.n);
    const waiting = (doc.ver && !t.v) || doc.vf.includes(t.n) || place === null || place > doc.thr;
    if (!waiting) return 'expired'; // admitted once (verified, behind `thr`, not on the list): its window passed
    return doc.closed ? 'sold_out' : 'waiting';
  }

  positionOf(t: TicketDoc, status: TicketStatus): number {
    return ticketPosition({ status, place: this.placeOf(t.n) }, this.doc.thr, this.doc.j);
  }

  toTicket(t: TicketDoc): Ticket {
    const status = this.statusOf(t);
    const position = this.positionOf(t, status);
    const until = this.doc.adm[t.n];
    return {
      saleId: this.step.sale.id,
      customer: t.c,
      number: t.n,
      status,
      place: this.placeOf(t.n),
      verified: t.v,
      position,
      estimatedWaitMs: estimatedWait(status, position, this.doc.rate),
      admittedUntil: status === 'admitted' && until !== undefined ? isoMs(until) : null,
      holdId: t.h,
      token: signTicket(this.doc.secret, this.step.sale.id, t.c, t.n),
    };
  }

  describe(): WaitingRoom {
    const doc = this.doc;
    const admitted = Object.values(doc.adm).filter((u) => u > this.step.now).length;
    const left = doc.j - doc.ca;
    return {
      saleId: this.step.sale.id,
      admitPerSecond: doc.rate,
      windowMs: doc.win,
      fairStart: doc.fair,
      verification: doc.ver,
      draw: doc.drawn === null ? null : { seed: doc.seed, preQueue: doc.preq, drawnAt: isoMs(doc.drawn) },
      createdAt: isoMs(doc.created),
      tickets: {
        waiting: doc.closed ? 0 : left,
        admitted,
        used: doc.cu,
        expired: doc.ca - doc.cu - admitted,
        sold_out: doc.closed ? left : 0,
      },
    };
  }
}
