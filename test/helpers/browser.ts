import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium (installed by .ci/run) driven by playwright-core: its headless shell
 * (package chromium-headless-shell, the same engine and version without the desktop
 * browser's layers) when installed, else the browser itself, headless. The shell took
 * 3.1 s of CPU for 5 contexts × 5 navigations against 17.5 s (docs/decisions.md, "Tests").
 * Nothing reaches beyond loopback (component updates, sync, QUIC).
 */
const CANDIDATES = ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium'];
export const CHROMIUM_PATH = CANDIDATES.find((path) => existsSync(path)) ?? CANDIDATES[CANDIDATES.length - 1]!;

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
