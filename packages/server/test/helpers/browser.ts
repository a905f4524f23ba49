import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it when missing), driven by
 * playwright-core. Never a browser downloaded by a tool. The flags keep it off the network this
 * machine does not have (background services would otherwise try to reach Google's hosts).
 */
export const CHROMIUM_PATH = process.env.PAYHOOKS_CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: run \`apt-get install -y chromium\` (or set PAYHOOKS_CHROMIUM).`);
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
