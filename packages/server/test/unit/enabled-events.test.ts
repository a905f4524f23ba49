import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, REQUIRED_LIVE_EVENT_TYPES } from '@payhooks/contract';
import { AppError } from '../../src/errors.ts';
import { subscribes, validateEnabledEvents } from '../../src/endpoints/enabled-events.ts';

function refusal(list: string[], env: 'live' | 'sandbox'): AppError {
  try {
    validateEnabledEvents(list, env);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(list)}`);
}

describe('validateEnabledEvents', () => {
  it('spec 6.1: accepts every catalog type and the wildcard', () => {
    expect(validateEnabledEvents([...EVENT_TYPES], 'sandbox')).toEqual([...EVENT_TYPES]);
    expect(validateEnabledEvents(['*'], 'live')).toEqual(['*']);
    for (const t of EVENT_TYPES) expect(validateEnabledEvents([t], 'sandbox')).toEqual([t]);
  });

  it('spec 6.1: an unknown type is a 400 event_type_unknown naming its position', () => {
    const err = refusal(['payment.succeeded', 'payment.refunded'], 'sandbox');
    expect(err.status).toBe(400);
    expect(err.code).toBe('event_type_unknown');
    expect(err.param).toBe('enabled_events[1]');
    expect(err.message).toContain('payment.refunded');
    for (const bad of ['Payment.succeeded', 'payment.*', 'payment', '', ' payment.succeeded', '**', 'checkout_session']) {
      expect(refusal([bad], 'sandbox').code, bad).toBe('event_type_unknown');
    }
  });

  it('drops duplicates and keeps the first order', () => {
    expect(validateEnabledEvents(['payment.failed', 'payment.created', 'payment.failed'], 'sandbox')).toEqual([
      'payment.failed',
      'payment.created',
    ]);
  });

  it('spec 4.1 rule 3: a live subscription must cover the four required types', () => {
    expect([...REQUIRED_LIVE_EVENT_TYPES].sort()).toEqual([
      'checkout_session.completed',
      'payment.expired',
      'payment.failed',
      'payment.succeeded',
    ]);
    expect(validateEnabledEvents([...REQUIRED_LIVE_EVENT_TYPES], 'live')).toEqual([...REQUIRED_LIVE_EVENT_TYPES]);
    for (const missing of REQUIRED_LIVE_EVENT_TYPES) {
      const list = REQUIRED_LIVE_EVENT_TYPES.filter((t) => t !== missing);
      const err = refusal([...list, 'payment.created'], 'live');
      expect(err.status).toBe(422);
      expect(err.code).toBe('live_subscription_incomplete');
      expect(err.param).toBe('enabled_events');
      expect(err.message).toContain(`Missing: ${missing}`);
    }
  });

  it('spec 4.1 rule 3: the wildcard satisfies the live rule; sandbox has no such rule', () => {
    expect(validateEnabledEvents(['*', 'payment.created'], 'live')).toEqual(['*', 'payment.created']);
    expect(validateEnabledEvents(['payment.created'], 'sandbox')).toEqual(['payment.created']);
  });

  it('an unknown type is reported before an incomplete live subscription', () => {
    expect(refusal(['nope'], 'live').code).toBe('event_type_unknown');
  });
});

describe('subscribes', () => {
  it('spec 6.1: an endpoint receives the types it lists, or all of them with *', () => {
    expect(subscribes(['payment.succeeded'], 'payment.succeeded')).toBe(true);
    expect(subscribes(['payment.succeeded'], 'payment.failed')).toBe(false);
    expect(subscribes([], 'payment.failed')).toBe(false);
    expect(subscribes(['*'], 'payment.failed')).toBe(true);
  });

  it('spec 6.1 rule 1: * also covers types added to the catalog later', () => {
    expect(subscribes(['*'], 'refund.created')).toBe(true);
    expect(subscribes([...EVENT_TYPES], 'refund.created')).toBe(false);
  });
});
