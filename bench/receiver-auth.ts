/**
 * What authenticating to the receiver costs per delivery: the same backlog drained by one worker
 * to a plain HTTP receiver, to one that checks Basic credentials, to one behind a gateway that
 * takes OAuth 2.0 access tokens (oidc-provider issuing them over HTTPS; the gateway looks each one
 * up), to an HTTPS receiver on a private CA, and to one that requires a client certificate
 * (mutual TLS), in alternating rounds. Every receiver runs in this process (its CPU is counted
 * with the worker's), on a scratch PostgreSQL database; certificates are made with openssl.
 *
 *   npx tsx --conditions=@payhooks/source bench/receiver-auth.ts   # ROUNDS=3 EVENTS=2000
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { systemClock } from '../packages/server/src/clock.ts';
import { loadConfig } from '../packages/server/src/config.ts';
import { createContext } from '../packages/server/src/context.ts';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { migrate } from '../packages/server/src/db/migrate.ts';
import { publishEvents } from '../packages/server/src/events/publish.ts';
import { createPlatform } from '../packages/server/src/tenancy/platforms.ts';
import { issue, makeCa } from '../packages/server/test/helpers/certificates.ts';
import { createPgDatabase } from '../packages/server/test/helpers/database.ts';
import { startAuthorizationServer, startTokenGateway } from '../packages/server/test/helpers/oauth-server.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const EVENTS = Number(process.env.EVENTS ?? 2000);
const dir = mkdtempSync(join(tmpdir(), 'payhooks-bench-auth-'));
const ca = makeCa(dir, 'bench-ca');
const serverCert = issue(dir, 'bench-ca', 'receiver', 'subjectAltName=IP:127.0.0.1');
const clientCert = issue(dir, 'bench-ca', 'client', 'extendedKeyUsage=clientAuth');
const BASIC = `Basic ${Buffer.from('bench:secret').toString('base64')}`;

let received = 0;
const answer = (check: (req: IncomingMessage) => boolean) => (req: IncomingMessage, res: ServerResponse) => {
  req.resume();
  req.on('end', () => {
    if (!check(req)) return void res.writeHead(401).end();
    received++;
    res.end('ok');
  });
};
const listen = async (server: Server, scheme: string) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
};
const plain = createServer(answer(() => true));
const basic = createServer(answer((req) => req.headers.authorization === BASIC));
const tls = createHttpsServer(
  serverCert,
  answer(() => true),
);
const mtls = createHttpsServer(
  { ...serverCert, ca, requestCert: true, rejectUnauthorized: true },
  answer(() => true),
);

const auth = await startAuthorizationServer(dir, [{ client_id: 'bench', client_secret: 'bench-secret' }]);
const gateway = await startTokenGateway(auth, { inner: answer(() => true) });

const scratch = await createPgDatabase(process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'payhooks_bench_auth');
const database = await openDatabase({ databaseUrl: scratch.url, poolSize: 10 });
try {
  await migrate(database);
  const config = loadConfig({}, { databaseUrl: scratch.url, allowPrivateUrls: true, allowHttpUrls: true, logLevel: 'silent' });
  const ctx = createContext({ config, database, clock: systemClock, logger: pino({ level: 'silent' }), encryptionKey: randomBytes(32) });
  const cases = {
    plain: { url: await listen(plain, 'http'), settings: {} },
    basic: {
      url: await listen(basic, 'http'),
      settings: { authentication: { type: 'basic' as const, username: 'bench', password: 'secret' } },
    },
    oauth2: {
      url: gateway.url,
      settings: {
        tls: { ca_certificates: auth.caPem },
        authentication: {
          type: 'oauth2_client_credentials' as const,
          token_url: auth.tokenUrl,
          client_id: 'bench',
          client_secret: 'bench-secret',
        },
      },
    },
    tls: { url: await listen(tls, 'https'), settings: { tls: { ca_certificates: ca } } },
    mtls: {
      url: await listen(mtls, 'https'),
      settings: {
        tls: { ca_certificates: ca },
        authentication: { type: 'mtls' as const, certificate: clientCert.cert, private_key: clientCert.key },
      },
    },
  };
  const results: Record<string, { per_s: number[]; cpu_us: number[] }> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? Object.keys(cases) : Object.keys(cases).reverse();
    for (const name of order) {
      const c = cases[name as keyof typeof cases];
      // A Platform per case and round: its one endpoint gets the whole backlog.
      const p = await createPlatform(database.db, `bench-${name}-${round}`);
      const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'bench' } };
      await ctx.endpoints.create(scope, { url: c.url, enabled_events: ['*'], ...c.settings });
      for (let i = 0; i < EVENTS; i += 100)
        await database.db.transaction((tx) =>
          publishEvents(
            tx,
            Array.from({ length: Math.min(100, EVENTS - i) }, (_, k) => ({
              type: 'payment.succeeded',
              merchantId: p.merchant_id,
              environment: 'sandbox' as const,
              object: { id: `pay_${i + k}`, object: 'payment', status: 'succeeded', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} },
            })),
            new Date(),
          ),
        );
      const worker = ctx.createWorker();
      received = 0;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await worker.drain();
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      if (received !== EVENTS) throw new Error(`${name}: ${received} of ${EVENTS} delivered`);
      results[name] ??= { per_s: [], cpu_us: [] };
      const r = results[name];
      r.per_s.push(Math.round(EVENTS / (ms / 1000)));
      r.cpu_us.push(Math.round((cpu.user + cpu.system) / EVENTS));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const out = Object.fromEntries(
    Object.entries(results).map(([k, v]) => [
      k,
      { deliveries_per_s: median(v.per_s), process_cpu_us_per_delivery: median(v.cpu_us), rounds: v },
    ]),
  );
  console.log(JSON.stringify({ events_per_round: EVENTS, rounds: ROUNDS, token_requests: auth.tokenRequests(), results: out }, null, 2));
  await ctx.close();
} finally {
  await database.close();
  await scratch.drop();
  for (const s of [plain, basic, tls, mtls]) s.close();
  await gateway.close();
  await auth.close();
  rmSync(dir, { recursive: true, force: true });
}
