import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { describeTarget, refusedConnection, unreachable } from '../../src/db/connect-errors.ts';
import { describeListenError, listenSource } from '../../src/cli/listen-address.ts';

/** A PostgreSQL protocol error as node-postgres raises it (SQLSTATE in `code`). */
const pgError = (code: string) => Object.assign(new Error('server said no'), { code, severity: 'FATAL' });
const URL_WITH_PASSWORD = 'postgres://shop:s3cret-pw@db.internal:6543/shop_prod';

describe('start-up messages', () => {
  it('a setting given as a flag is named as the flag; from the environment, as the variable', () => {
    expect(() => loadConfig({}, {}, { port: { flag: '--port', value: 'abc' } })).toThrow(
      '--port abc is not valid: expected a whole number from 0 to 65535.',
    );
    expect(() => loadConfig({ PAYHOOKS_PORT: 'abc' })).toThrow('PAYHOOKS_PORT="abc" is not valid');
    // The flag wins over the variable.
    expect(loadConfig({ PAYHOOKS_PORT: 'abc' }, {}, { port: { flag: '--port', value: '9000' } }).port).toBe(9000);
  });

  it('each PostgreSQL refusal says what to do, and never prints the password', () => {
    const missing = refusedConnection(pgError('3D000'), URL_WITH_PASSWORD);
    expect(missing).toBeInstanceOf(ConfigError);
    expect(missing.message).toBe(
      'Database "shop_prod" does not exist on PostgreSQL at db.internal:6543 (DATABASE_URL): create it with `createdb -h db.internal -p 6543 -U shop shop_prod`, or point DATABASE_URL at an existing database.',
    );
    expect(refusedConnection(pgError('28P01'), URL_WITH_PASSWORD).message).toBe(
      'PostgreSQL at db.internal:6543 rejected the password of user "shop" (DATABASE_URL): correct the user or password in DATABASE_URL.',
    );
    expect(refusedConnection(pgError('28000'), URL_WITH_PASSWORD).message).toContain(
      'refused user "shop" (DATABASE_URL): the role does not exist',
    );
    expect(refusedConnection(pgError('42501'), URL_WITH_PASSWORD).message).toBe(
      'PostgreSQL at db.internal:6543 refused the connection (SQLSTATE 42501): check the user, password and database name in DATABASE_URL.',
    );
    const down = unreachable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), URL_WITH_PASSWORD, 61_000);
    expect(down.message).toContain('PostgreSQL at db.internal:6543 (DATABASE_URL) is not reachable (ECONNREFUSED) after 61 s');
    for (const e of [missing, down, refusedConnection(pgError('28P01'), URL_WITH_PASSWORD)]) expect(e.message).not.toContain('s3cret-pw');
  });

  it('a database name that needs quoting is quoted in the createdb command', () => {
    expect(describeTarget('postgres://u@h/my%20db').database).toBe('my db');
    expect(refusedConnection(pgError('3D000'), 'postgres://u@h/my%20db').message).toContain("createdb -h h -p 5432 -U u 'my db'");
  });

  it('listen failures name where the host and port came from', () => {
    const inUse = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    expect(describeListenError(inUse, '127.0.0.1', 8080, listenSource({ port: '8080' }, {}))!.message).toBe(
      'Port 8080 (--port 8080) is already in use on 127.0.0.1: stop the process using it, or choose another port.',
    );
    expect(describeListenError(inUse, '127.0.0.1', 8080, listenSource({}, { PAYHOOKS_PORT: '8080' }))!.message).toContain(
      '(PAYHOOKS_PORT=8080)',
    );
    expect(describeListenError(inUse, '127.0.0.1', 8080, listenSource({}, {}))!.message).toContain(
      '(the default; change it with --port or PAYHOOKS_PORT)',
    );
    const noAddr = Object.assign(new Error('listen EADDRNOTAVAIL'), { code: 'EADDRNOTAVAIL' });
    expect(describeListenError(noAddr, '203.0.113.1', 0, listenSource({}, { PAYHOOKS_HOST: '203.0.113.1' }))!.message).toContain(
      'Address 203.0.113.1 (PAYHOOKS_HOST=203.0.113.1) is not an address of this machine',
    );
    expect(describeListenError(new Error('something else'), '127.0.0.1', 1, listenSource({}, {}))).toBeUndefined();
  });
});
