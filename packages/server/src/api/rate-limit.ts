import { AppError } from '../errors.ts';

/**
 * Per-key token bucket, in process memory: `rate` tokens a second up to `burst`. With several
 * API processes each enforces its own bucket (documented in docs/decisions.md).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
    /** The start of the 429's message, saying what was limited. */
    private readonly tooMany = 'Too many requests for this API key',
  ) {}

  /** Takes one token for `key` or throws a 429 with Retry-After. */
  take(key: string): void {
    const t = this.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: t };
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.rate);
    b.at = t;
    if (b.tokens < 1) {
      this.buckets.set(key, b);
      const wait = Math.ceil((1 - b.tokens) / this.rate);
      throw new AppError('rate_limited', 'rate_limited', `${this.tooMany}; retry after ${wait} s.`, { headers: { 'retry-after': String(wait) } });
    }
    b.tokens -= 1;
    this.buckets.set(key, b);
    if (this.buckets.size > 100_000) this.buckets.clear(); // bound memory under key churn
  }
}
