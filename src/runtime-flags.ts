import { setFlagsFromString } from 'node:v8';

/**
 * V8 tuning for a request server, imported first by src/main.ts so it applies before
 * the app's modules load (tests and embedders that build the app themselves skip it).
 * Allocation-site pretenuring is off: in about half the processes it put short-lived
 * per-request objects in the old generation and slowed every young collection
 * (docs/design-notes.md#runtime-flags, docs/decisions.md).
 */
setFlagsFromString('--no-allocation-site-pretenuring');
