/**
 * Preloaded into the service for the fan-out bench (`node --expose-gc --import
 * bench/fanout/memory-probe.mjs dist/main.js`): answers `{cmd: 'memory', gc}` on the
 * IPC channel with process.memoryUsage(), after two full collections when `gc` is set,
 * so that RSS per connection is not skewed by garbage. Adds nothing to the service.
 */
process.on('message', (message) => {
  if (message?.cmd !== 'memory') return;
  if (message.gc && typeof globalThis.gc === 'function') {
    globalThis.gc();
    globalThis.gc();
  }
  process.send?.({ cmd: 'memory', ...process.memoryUsage() });
});
