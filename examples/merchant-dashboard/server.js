// npm start. Settings (see README.md):
//   PAYHOOKS_URL=http://127.0.0.1:8080       where payhooks runs (the browser loads the frame from here)
//   PAYHOOKS_INTERNAL_TOKEN=...              payhooks' internal token (development mode prints it)
//   PAYHOOKS_MERCHANT_ID=mch_...             the merchant whose Webhooks section the dashboard shows
//   PORT=4400, DASHBOARD_URL=http://localhost:4400 (must be in payhooks' PAYHOOKS_PORTAL_FRAME_ANCESTORS)
import { createDashboard } from './src/app.js';
import { DEMO_USERS } from './src/users.js';

const env = process.env;
const missing = ['PAYHOOKS_INTERNAL_TOKEN', 'PAYHOOKS_MERCHANT_ID'].filter((name) => !env[name]);
if (missing.length > 0) {
  console.error(`Set ${missing.join(' and ')} (see README.md): payhooks' development mode prints both.`);
  process.exit(1);
}
const port = Number(env.PORT ?? 4400);
const publicUrl = env.DASHBOARD_URL ?? `http://localhost:${port}`;
const app = createDashboard({
  payhooksUrl: env.PAYHOOKS_URL ?? 'http://127.0.0.1:8080',
  internalToken: env.PAYHOOKS_INTERNAL_TOKEN,
  merchantId: env.PAYHOOKS_MERCHANT_ID,
  publicUrl,
});
app.listen(port, () => {
  console.log(`dashboard on ${publicUrl}`);
  for (const u of DEMO_USERS) console.log(`  ${u.email} / ${u.password} (${u.role})`);
});
