import { setFlagsFromString } from 'node:v8';

/**
 * V8 tuning for a request server, imported first by src/main.ts so it applies before
 * the app's modules load (tests and embedders that build the app themselves skip it).
 * Allocation-site pretenuring is off: in about half the processes it put short-lived
 * per-request objects in the old generation and slowed every young collection
 * (docs/design-notes.md#runtime-flags, docs/decisions.md).
 */
setFlagsFromString('--no-allocation-site-pretenuring');
/**
 * V8's compilation cache keeps the source and code of every `new Function` graphql-jit
 * generates, after the compiled query itself is gone: 100 distinct documents of 420 fields
 * left 184 MB behind after full collections, 1.8 MB without it (docs/limits.md, "Memory").
 * The document cache (src/graphql/operation/pipeline.ts) is what reuses compiled code.
 */
setFlagsFromString('--no-compilation-cache');
