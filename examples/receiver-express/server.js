// npm start: PAYHOOKS_WEBHOOK_SECRET=whsec_... DATABASE_URL=postgres://... PORT=4242
import pg from 'pg';
import { createReceiver } from './src/app.js';

const secret = process.env.PAYHOOKS_WEBHOOK_SECRET;
if (!secret) {
  console.error('Set PAYHOOKS_WEBHOOK_SECRET to the endpoint\'s whsec_ signing secret (comma-separated during a rotation).');
  process.exit(1);
}
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
const { app, webhooks } = await createReceiver({ pool, secret: secret.split(',').map((s) => s.trim()) });

const server = app.listen(Number(process.env.PORT ?? 4242), () => {
  console.log(`receiver listening on http://localhost:${server.address().port}/webhooks/payhooks`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    server.close();
    await webhooks.close(); // running work finishes; queued retries stay in PostgreSQL
    await pool.end();
    process.exit(0);
  });
}
