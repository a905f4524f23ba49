import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '@payhooks/contract';
import {
  PAYMENT_STATUSES,
  PAYMENT_TRANSITIONS,
  TERMINAL_PAYMENT_STATUSES,
  allowedNext,
  canTransition,
  isTerminal,
  paymentEventType,
  statusOfPaymentEvent,
} from '../../src/payments/state-machine.ts';
import { serialiseMetadata, validateAmount, validateAssetCode } from '../../src/payments/objects.ts';
import { AppError } from '../../src/errors.ts';

describe('payment state machine', () => {
  it('has the eight statuses the payment.* event types name, one event type each', () => {
    expect(PAYMENT_STATUSES.map(paymentEventType)).toEqual(EVENT_TYPES.filter((t) => t.startsWith('payment.')));
    for (const s of PAYMENT_STATUSES) expect(statusOfPaymentEvent(paymentEventType(s))).toBe(s);
    expect(statusOfPaymentEvent('checkout_session.completed')).toBeUndefined();
    expect(statusOfPaymentEvent('payment.refunded')).toBeUndefined();
  });

  it('allows at least the transitions the issue requires', () => {
    for (const to of ['requires_action', 'under_review', 'processing', 'cancelled', 'expired'] as const)
      expect(canTransition('created', to)).toBe(true);
    expect(canTransition('processing', 'succeeded')).toBe(true);
    expect(canTransition('processing', 'failed')).toBe(true);
  });

  it('terminal statuses are final: succeeded, failed, cancelled, expired allow nothing', () => {
    expect([...TERMINAL_PAYMENT_STATUSES].sort()).toEqual(['cancelled', 'expired', 'failed', 'succeeded']);
    for (const from of TERMINAL_PAYMENT_STATUSES) {
      expect(isTerminal(from)).toBe(true);
      for (const to of PAYMENT_STATUSES) expect(canTransition(from, to)).toBe(false);
    }
  });

  it('money settles only from processing; nothing moves back to created; no self-transitions', () => {
    for (const from of PAYMENT_STATUSES) {
      expect(canTransition(from, 'created')).toBe(false);
      expect(canTransition(from, from)).toBe(false);
      if (from !== 'processing') expect(canTransition(from, 'succeeded')).toBe(false);
    }
    expect(canTransition('processing', 'cancelled')).toBe(false);
    expect(canTransition('processing', 'expired')).toBe(false);
  });

  it('every status is reachable from created, and every non-terminal status can reach a terminal one', () => {
    const reach = (from: string, seen = new Set<string>()): Set<string> => {
      for (const n of PAYMENT_TRANSITIONS[from as 'created'])
        if (!seen.has(n)) {
          seen.add(n);
          reach(n, seen);
        }
      return seen;
    };
    expect([...reach('created')].sort()).toEqual(PAYMENT_STATUSES.filter((s) => s !== 'created').sort());
    for (const s of PAYMENT_STATUSES) if (!isTerminal(s)) expect([...reach(s)].some((x) => isTerminal(x as 'failed'))).toBe(true);
    expect(allowedNext('processing')).toEqual(['succeeded', 'failed']);
  });
});

describe('payment field validation', () => {
  const rejects = (fn: () => unknown, param: string) => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).param).toBe(param);
      return;
    }
    throw new Error('expected a validation error');
  };

  it('amount: exactly two decimals, more than 0, at most 999999999.99', () => {
    for (const ok of ['0.01', '25.00', '1.50', '999999999.99']) expect(validateAmount(ok)).toBe(ok);
    for (const bad of ['0.00', '25', '25.0', '25.000', '-1.00', '1e3', ' 1.00', '01.00', '1,00', '1000000000.00', '', '.50'])
      rejects(() => validateAmount(bad), 'amount');
  });

  it('asset_code: <ASSET>.<NETWORK>, upper-case letters, digits and -', () => {
    for (const ok of ['USDC.ETH', 'USDC-E.ARB', 'BTC.BTC', 'USDT.TRON', 'EURC.BASE-2']) expect(validateAssetCode(ok)).toBe(ok);
    for (const bad of ['usdc.eth', 'USDC', 'USDC.', '.ETH', 'USDC.ETH.X', 'USDC_E.ARB', '-USDC.ETH', 'USDC-.ETH', 'US DC.ETH', 'Usdc.ETH'])
      rejects(() => validateAssetCode(bad), 'asset_code');
  });

  it('metadata: 50 keys, keys up to 40 characters, values up to 500, strings only; kept as sent', () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    expect(JSON.parse(serialiseMetadata(fifty))).toEqual(fifty);
    rejects(() => serialiseMetadata({ ...fifty, k50: 'v' }), 'metadata');
    expect(serialiseMetadata({ ['é'.repeat(40)]: 'ü'.repeat(500) })).toBe(JSON.stringify({ ['é'.repeat(40)]: 'ü'.repeat(500) }));
    rejects(() => serialiseMetadata({ ['k'.repeat(41)]: 'v' }), `metadata[${'k'.repeat(41)}]`);
    rejects(() => serialiseMetadata({ k: 'v'.repeat(501) }), 'metadata[k]');
    rejects(() => serialiseMetadata({ k: 1 }), 'metadata[k]');
    rejects(() => serialiseMetadata(['a']), 'metadata');
    expect(serialiseMetadata(undefined)).toBe('{}');
  });
});
