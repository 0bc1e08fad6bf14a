import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * prom-client's default metrics — CPU, memory, heap, GC, handles and the event-loop
 * delay (`nodejs_eventloop_lag_*`, from `perf_hooks.monitorEventLoopDelay`) — describe
 * the process, not one app: they live in one registry per process, made on first use,
 * because each collection starts timers and observers that nothing can stop. Each
 * app's own registry (metrics.ts) is written after it on every scrape.
 */

let registry: Registry | undefined;

export function processRegistry(): Registry {
  if (registry === undefined) {
    registry = new Registry();
    // 10 ms (the default) misses nothing an operator acts on and samples cheaply.
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  }
  return registry;
}
