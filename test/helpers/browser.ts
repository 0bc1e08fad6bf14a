import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium (installed by .ci/run) driven by playwright-core. Headless, and
 * without anything that would reach beyond loopback (component updates, sync, QUIC).
 */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export function chromiumInstalled(): boolean {
  return existsSync(CHROMIUM_PATH);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
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
