import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { RateLimiter } from '../../src/api/rate-limit.ts';

/** A clock tests move by hand (milliseconds, like performance.now()). */
function clock(start = 1_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

function refusal(limiter: RateLimiter, key: string): AppError {
  try {
    limiter.take(key);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('the request was allowed');
}

describe('RateLimiter (token bucket per API key)', () => {
  it('allows a burst of `burst` requests, then refuses with 429 rate_limited and Retry-After', () => {
    const c = clock();
    const limiter = new RateLimiter(1, 3, c.now);
    for (let i = 0; i < 3; i++) limiter.take('k');
    const err = refusal(limiter, 'k');
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limited');
    expect(err.toBody().error.type).toBe('rate_limit_error');
    expect(err.headers['retry-after']).toBe('1');
  });

  it('refills at `rate` tokens a second', () => {
    const c = clock();
    const limiter = new RateLimiter(2, 2, c.now);
    limiter.take('k');
    limiter.take('k');
    refusal(limiter, 'k');
    c.advance(499);
    refusal(limiter, 'k');
    c.advance(1); // 500 ms at 2/s = one token
    limiter.take('k');
    refusal(limiter, 'k');
    c.advance(1000); // two more
    limiter.take('k');
    limiter.take('k');
    refusal(limiter, 'k');
  });

  it('never holds more than `burst` tokens, however long the key was idle', () => {
    const c = clock();
    const limiter = new RateLimiter(10, 2, c.now);
    c.advance(3_600_000);
    limiter.take('k');
    limiter.take('k');
    refusal(limiter, 'k');
  });

  it('refused requests do not use up tokens', () => {
    const c = clock();
    const limiter = new RateLimiter(1, 1, c.now);
    limiter.take('k');
    for (let i = 0; i < 50; i++) refusal(limiter, 'k');
    c.advance(1000);
    limiter.take('k');
  });

  it('Retry-After is the whole seconds until one token is back (never 0)', () => {
    const c = clock();
    const slow = new RateLimiter(0.25, 1, c.now); // one token every 4 s
    slow.take('k');
    expect(refusal(slow, 'k').headers['retry-after']).toBe('4');
    c.advance(1500);
    expect(refusal(slow, 'k').headers['retry-after']).toBe('3');
    const fast = new RateLimiter(100, 1, c.now);
    fast.take('k');
    expect(refusal(fast, 'k').headers['retry-after']).toBe('1');
    c.advance(9);
    expect(refusal(fast, 'k').headers['retry-after']).toBe('1');
  });

  it('a waiting client that honours Retry-After gets through', () => {
    const c = clock();
    const limiter = new RateLimiter(3, 1, c.now);
    limiter.take('k');
    const wait = Number(refusal(limiter, 'k').headers['retry-after']);
    c.advance(wait * 1000);
    limiter.take('k');
  });

  it('buckets are per key: one busy key does not limit another', () => {
    const c = clock();
    const limiter = new RateLimiter(1, 1, c.now);
    limiter.take('a');
    refusal(limiter, 'a');
    limiter.take('b');
    refusal(limiter, 'b');
  });
});
