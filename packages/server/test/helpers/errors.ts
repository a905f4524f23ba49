import { expect } from 'vitest';

/**
 * Asserts our error shape `{error: {type, code, message, param?}}` (and nothing else) with the
 * given status, and optionally its code and param (`null`: no param). Returns the error member.
 */
export function expectError(res: { status: number; body: any; headers: Headers }, status: number, code?: string, param?: string | null) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expectErrorShape(res.body);
  const err = res.body.error;
  if (code !== undefined) expect(err.code).toBe(code);
  if (param === null) expect(err.param).toBeUndefined();
  else if (param !== undefined) expect(err.param).toBe(param);
  return err;
}

/** The body is exactly `{error: {type, code, message, param?}}` with non-empty strings. */
export function expectErrorShape(body: any, what = '') {
  expect(Object.keys(body ?? {}), what).toEqual(['error']);
  const err = body.error;
  expect(typeof err.type, what).toBe('string');
  expect(typeof err.code, what).toBe('string');
  expect(typeof err.message, what).toBe('string');
  expect(err.message.length, what).toBeGreaterThan(0);
  for (const k of Object.keys(err)) expect(['type', 'code', 'message', 'param'], what).toContain(k);
  if ('param' in err) expect(typeof err.param, what).toBe('string');
}
