/** Outcomes of the waiting-room storm (room-worker.ts), one per step a shopper took. */
export interface RoomOutcome {
  customer: string;
  then: 'confirm' | 'cancel' | 'abandon';
  step: 'join' | 'forged' | 'admission' | 'reserve' | 'confirm';
  status: 'ok' | 'error';
  number?: number;
  ticketStatus?: string;
  holdId?: string;
  orderId?: string;
  error?: string;
}
