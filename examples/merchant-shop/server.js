// npm start. Settings (see README.md):
//   PAYHOOKS_API_KEY=sk_test_...        the key from payhooks' banner (server-side only)
//   PAYHOOKS_WEBHOOK_SECRET=whsec_...   the endpoint's signing secret (comma-separated during a rotation)
//   PAYHOOKS_URL=http://127.0.0.1:8080  where payhooks' API is
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/merchant_shop   the shop's own database
//   PORT=4343, SHOP_URL=http://127.0.0.1:4343 (the address customers and payhooks use)
//   PAYHOOKS_DOUBLE_DELIVERY=true       sandbox: every checkout's events are delivered twice
import pg from 'pg';
import { createShop } from './src/app.js';

const env = process.env;
const missing = ['PAYHOOKS_API_KEY', 'PAYHOOKS_WEBHOOK_SECRET'].filter((name) => !env[name]);
if (missing.length > 0) {
  console.error(
    `Set ${missing.join(' and ')}: PAYHOOKS_API_KEY is the sk_test_ key payhooks prints when it starts, ` +
      "PAYHOOKS_WEBHOOK_SECRET the whsec_ secret returned when you registered the shop's webhook endpoint (see README.md).",
  );
  process.exit(1);
}

const secrets = env.PAYHOOKS_WEBHOOK_SECRET.split(',').map((s) => s.trim());
if (!/^sk_(test|live)_/.test(env.PAYHOOKS_API_KEY) || !secrets.every((s) => s.startsWith('whsec_'))) {
  console.error('PAYHOOKS_API_KEY must be an sk_test_... or sk_live_... key, and PAYHOOKS_WEBHOOK_SECRET whsec_... secret(s).');
  process.exit(1);
}

const port = Number(env.PORT ?? 4343);
const pool = new pg.Pool({ connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/merchant_shop' });
// An idle connection the server drops (a restart, a failover) is replaced on the next query; without
// this listener node-postgres would crash the process with it.
pool.on('error', (error) => console.error(`[shop] idle database connection lost: ${error.message}`));
let shop;
try {
  shop = await createShop({
    pool,
    apiKey: env.PAYHOOKS_API_KEY,
    webhookSecret: secrets,
    payhooksUrl: env.PAYHOOKS_URL ?? 'http://127.0.0.1:8080',
    publicUrl: env.SHOP_URL ?? `http://127.0.0.1:${port}`,
    doubleDelivery: ['1', 'true', 'yes'].includes((env.PAYHOOKS_DOUBLE_DELIVERY ?? '').toLowerCase()),
  });
} catch (error) {
  console.error(
    `The shop could not prepare its database: ${error.message}. Create it with \`createdb merchant_shop\` or set DATABASE_URL.`,
  );
  process.exit(1);
}

const server = shop.app.listen(port, () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  console.log(`shop listening on ${url} (webhooks at ${url}/webhooks/payhooks)`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    server.close();
    await shop.close(); // running work finishes; pending retries stay in payhooks_events
    await pool.end();
    process.exit(0);
  });
}
