import { setFlagsFromString } from 'node:v8';

/**
 * V8 tuning for a request server, imported first by src/main.ts so it applies before
 * the app's modules load (tests and embedders that build the app themselves skip it).
 *
 * Allocation-site pretenuring: when objects from one allocation site survive a young
 * collection in bulk (start-up, a burst of concurrent requests), V8 starts allocating
 * that site's objects directly in the old generation. For per-request objects that is
 * the wrong bet: they die within milliseconds but now pile up in the old generation
 * until a full collection, and every young collection slows down. Measured on the
 * cached-query bench, about half the processes fell into that state (scavenges of
 * 11–13 ms instead of 1–2 ms, a third fewer requests per second); with pretenuring off,
 * none did (4 of 4 runs at 1.5–1.8 ms). See docs/decisions.md.
 */
setFlagsFromString('--no-allocation-site-pretenuring');
