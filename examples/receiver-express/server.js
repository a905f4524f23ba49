// npm start: PAYHOOKS_WEBHOOK_SECRET=whsec_... [DATABASE_URL=postgres://.../receiver_express] [PORT=4242]
import { createReceiver } from './src/app.js';
import { DEFAULT_DATABASE_URL, openDatabase } from './src/database.js';

const secret = process.env.PAYHOOKS_WEBHOOK_SECRET;
if (!secret) {
  console.error("Set PAYHOOKS_WEBHOOK_SECRET to the endpoint's whsec_ signing secret (comma-separated during a rotation).");
  process.exit(1);
}
let pool;
try {
  pool = await openDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
} catch (error) {
  console.error(
    `The receiver could not open its database: ${error.message}. Check that PostgreSQL runs and DATABASE_URL (default ${DEFAULT_DATABASE_URL}) is right.`,
  );
  process.exit(1);
}
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
