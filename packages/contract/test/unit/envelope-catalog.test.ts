import { describe, expect, it } from 'vitest';
import {
  EVENT_TIMESTAMP_PATTERN,
  computeSignature,
  eventFamily,
  formatEventTimestamp,
  parseSignatureHeader,
  signPayloadWithSecrets,
  type EventType,
} from '../../src/index.ts';

describe('formatEventTimestamp (spec 2.1: UTC, YYYY-MM-DDThh:mm:ssZ)', () => {
  it.each([
    [Date.UTC(2026, 10, 23, 1, 0, 5, 0), '2026-11-23T01:00:05Z'],
    [Date.UTC(2026, 10, 23, 1, 0, 5, 999), '2026-11-23T01:00:05Z'],
    [Date.UTC(2026, 0, 1, 0, 0, 0, 1), '2026-01-01T00:00:00Z'],
  ])('%d -> %s (milliseconds dropped, not rounded)', (ms, text) => {
    const formatted = formatEventTimestamp(new Date(ms));
    expect(formatted).toBe(text);
    expect(formatted).toMatch(EVENT_TIMESTAMP_PATTERN);
  });
});

describe('eventFamily (spec 6.1)', () => {
  it.each([
    ['payment.created', 'payment'],
    ['payment.succeeded', 'payment'],
    ['checkout_session.completed', 'checkout_session'],
    ['checkout_session.expired', 'checkout_session'],
    ['webhook_endpoint.disabled', 'webhook_endpoint'],
  ])('%s is of the %s family', (type, family) => {
    expect(eventFamily(type as EventType)).toBe(family);
  });
});

describe('signPayloadWithSecrets (spec 5.1, during a secret rotation)', () => {
  it('one v1 per secret, in the order given, each the HMAC under that secret', () => {
    const header = signPayloadWithSecrets(['whsec_new', 'whsec_old'], 1_700_000_000, '{"id":"evt_1"}');
    expect(parseSignatureHeader(header)).toEqual({
      timestamp: 1_700_000_000,
      signatures: [
        computeSignature('whsec_new', 1_700_000_000, '{"id":"evt_1"}'),
        computeSignature('whsec_old', 1_700_000_000, '{"id":"evt_1"}'),
      ],
      asymmetricSignatures: [],
    });
    expect(header).toBe(
      `t=1700000000,v1=${computeSignature('whsec_new', 1_700_000_000, '{"id":"evt_1"}')},v1=${computeSignature('whsec_old', 1_700_000_000, '{"id":"evt_1"}')}`,
    );
  });
});
