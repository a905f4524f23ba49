import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { fixedWindow, installRateLimits, redisAddress, type LimitRule } from '../../src/api/rate-limit.ts';

/**
 * The per-process mode of the API rate limit (@fastify/rate-limit's memory store) on a real
 * Fastify instance; the Redis mode shared by several processes is tested in
 * test/integration/rate-limit-shared.postgres.test.ts. Only `Date` is faked, so windows pass
 * without waiting.
 */
const apps: FastifyInstance[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function limitedApp(rule: LimitRule) {
  const app = Fastify();
  apps.push(app);
  const limits = await installRateLimits(app, { redis: null, logger: pino({ level: 'silent' }) });
  const limit = limits.limit('test', rule, (req) => String(req.headers['x-key']), 'Too many requests for this key');
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof AppError) return reply.code(err.status).headers(err.headers).send(err.toBody());
    return reply.code(500).send({ unexpected: String(err) });
  });
  app.get('/', async (req) => {
    await limit(req);
    return { ok: true };
  });
  await app.ready();
  return { limits, hit: (key = 'k') => app.inject({ method: 'GET', url: '/', headers: { 'x-key': key } }) };
}

describe('fixedWindow: a rate and burst as @fastify/rate-limit windows', () => {
  it.each([
    [
      { perSecond: 100, burst: 200 },
      { max: 200, timeWindowMs: 2000 },
    ],
    [
      { perSecond: 1, burst: 2 },
      { max: 2, timeWindowMs: 2000 },
    ],
    [
      { perSecond: 10 / 60, burst: 30 },
      { max: 30, timeWindowMs: 180_000 },
    ],
    [
      { perSecond: 5 / 60, burst: 10 },
      { max: 10, timeWindowMs: 120_000 },
    ],
    [
      { perSecond: 1_000_000, burst: 1 },
      { max: 1, timeWindowMs: 1 },
    ],
  ])('%j -> %j: the same long-run rate, `burst` requests at once', (rule, window) => {
    expect(fixedWindow(rule)).toEqual(window);
  });
});

describe('rate limit, per process', () => {
  it('allows `burst` requests, then answers 429 rate_limited with the error object and Retry-After', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { limits, hit } = await limitedApp({ perSecond: 1, burst: 3 });
    expect(limits.store).toBe('memory');
    for (let i = 0; i < 3; i++) expect((await hit()).statusCode).toBe(200);
    const refused = await hit();
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({
      error: { type: 'rate_limit_error', code: 'rate_limited', message: 'Too many requests for this key; retry after 3 s.' },
    });
    expect(refused.headers['retry-after']).toBe('3');
  });

  it('Retry-After counts down to the end of the window, and a client that honours it gets through', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { hit } = await limitedApp({ perSecond: 0.25, burst: 1 }); // one request per 4 s
    expect((await hit()).statusCode).toBe(200);
    expect((await hit()).headers['retry-after']).toBe('4');
    vi.advanceTimersByTime(1500);
    const later = await hit();
    expect(later.statusCode).toBe(429);
    expect(later.headers['retry-after']).toBe('3');
    vi.advanceTimersByTime(Number(later.headers['retry-after']) * 1000);
    expect((await hit()).statusCode).toBe(200);
  });

  it('Retry-After is never 0, even in the last milliseconds of a window', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { hit } = await limitedApp({ perSecond: 100, burst: 1 }); // a 10 ms window
    expect((await hit()).statusCode).toBe(200);
    vi.advanceTimersByTime(9);
    const refused = await hit();
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
  });

  it('counts per key: one busy key does not limit another', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { hit } = await limitedApp({ perSecond: 1, burst: 1 });
    expect((await hit('a')).statusCode).toBe(200);
    expect((await hit('a')).statusCode).toBe(429);
    expect((await hit('b')).statusCode).toBe(200);
    expect((await hit('b')).statusCode).toBe(429);
  });

  it('refused requests do not push the window out: the key recovers when the window ends', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { hit } = await limitedApp({ perSecond: 1, burst: 1 });
    expect((await hit()).statusCode).toBe(200);
    for (let i = 0; i < 20; i++) expect((await hit()).statusCode).toBe(429);
    vi.advanceTimersByTime(1000);
    expect((await hit()).statusCode).toBe(200);
  });
});

describe('redisAddress', () => {
  it('names host, port and database, never the password', () => {
    expect(redisAddress('redis://:s3cret@cache.internal:6380/2')).toBe('redis://cache.internal:6380/2');
    expect(redisAddress('rediss://user:s3cret@cache.internal')).toBe('rediss://cache.internal:6379');
    expect(redisAddress('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });
});
