import { describe, expect, it } from 'vitest';
import { CommitNotifier } from '../../src/db/after-commit.ts';

/** A send whose completion the test controls, recording when each one started. */
function controlledSend() {
  const started: string[] = [];
  const finish: Array<() => void> = [];
  const send = (channel: string) => {
    started.push(channel);
    return new Promise<void>((resolve) => finish.push(resolve));
  };
  return { started, send, finishNext: () => finish.shift()!() };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('CommitNotifier: wake-ups sent after commit, one at a time per channel', () => {
  it('a commit with nothing in flight is sent at once', () => {
    const s = controlledSend();
    new CommitNotifier(s.send, () => {}).notify('wake');
    expect(s.started).toEqual(['wake']);
  });

  it('commits landing while a NOTIFY is in flight share exactly one more, sent after it (none is lost)', async () => {
    const s = controlledSend();
    const n = new CommitNotifier(s.send, () => {});
    n.notify('wake');
    // Three commits while the first NOTIFY may already have been delivered: a worker could have
    // claimed before they committed, so a NOTIFY must start after them.
    n.notify('wake');
    n.notify('wake');
    n.notify('wake');
    expect(s.started).toEqual(['wake']);
    s.finishNext();
    await tick();
    expect(s.started).toEqual(['wake', 'wake']);
    s.finishNext();
    await tick();
    expect(s.started).toHaveLength(2);
    await n.idle();
    // Idle again: the next commit sends at once.
    n.notify('wake');
    expect(s.started).toHaveLength(3);
  });

  it('channels are independent', () => {
    const s = controlledSend();
    const n = new CommitNotifier(s.send, () => {});
    n.notify('a');
    n.notify('b');
    n.notify('a');
    expect(s.started).toEqual(['a', 'b']);
  });

  it('a failed send is reported, and the next commit still sends (the worker polls meanwhile)', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const n = new CommitNotifier(
      async () => {
        calls++;
        if (calls === 1) throw new Error('connection lost');
      },
      (err) => errors.push(err),
    );
    n.notify('wake');
    await n.idle();
    expect(errors).toHaveLength(1);
    n.notify('wake');
    await n.idle();
    expect(calls).toBe(2);
    expect(errors).toHaveLength(1);
  });

  it('idle() waits for the follow-up NOTIFY too', async () => {
    const s = controlledSend();
    const n = new CommitNotifier(s.send, () => {});
    n.notify('wake');
    n.notify('wake');
    let idle = false;
    const waiting = n.idle().then(() => (idle = true));
    s.finishNext();
    await tick();
    expect(idle).toBe(false);
    s.finishNext();
    await waiting;
    expect(s.started).toHaveLength(2);
  });
});
