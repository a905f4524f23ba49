/** Time source, injected so tests can move time without sleeping (River's style). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests set by hand. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  set(time: Date | number): void {
    this.current = typeof time === 'number' ? time : time.getTime();
  }
  advance(ms: number): void {
    this.current += ms;
  }
}
