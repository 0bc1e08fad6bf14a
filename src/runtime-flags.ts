import { setFlagsFromString } from 'node:v8';

/**
 * V8 tuning for a request server, imported first by src/main.ts so it applies before
 * the app's modules load (tests and embedders that build the app themselves skip it).
 * Both are explained and measured in docs/design-notes.md#runtime-flags:
 * - allocation-site pretenuring off: in about half the processes it put short-lived
 *   per-request objects in the old generation and slowed every young collection;
 * - the old generation grows to twice what the last full collection kept before the next:
 *   V8 judges a collection by its main-thread share alone and, for a server that promotes
 *   little, starts one after ~10 % growth, while its concurrent marking takes a core from
 *   the requests. An operator's own `node --heap-growing-percent=N` wins.
 */
setFlagsFromString('--no-allocation-site-pretenuring');

const HEAP_GROWING_PERCENT = 100;
const chosenByOperator = process.execArgv.some((flag) => flag.startsWith('--heap-growing-percent'));
if (!chosenByOperator) setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
