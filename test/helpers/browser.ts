import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';

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

/**
 * A test file's share of its process's one Chromium: the contexts it opened (each a fresh
 * profile), closed by `close`. The browser itself stays for the process's next browser
 * file and goes with the process: a launch is ~1.3 s of CPU (docs/decisions.md, "Tests").
 */
export interface ChromiumSession {
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** Closes this file's contexts (their pages and connections), not the browser. */
  close(): Promise<void>;
}

let launched: Promise<Browser> | undefined;

export async function openChromium(): Promise<ChromiumSession> {
  let browser = await (launched ??= launchChromium());
  if (!browser.isConnected()) browser = await (launched = launchChromium());
  const contexts = new Set<BrowserContext>();
  return {
    async newContext(options) {
      const context = await browser.newContext(options);
      contexts.add(context);
      return context;
    },
    async close() {
      await Promise.all([...contexts].map((context) => context.close()));
      contexts.clear();
    },
  };
}

function launchChromium(): Promise<Browser> {
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
