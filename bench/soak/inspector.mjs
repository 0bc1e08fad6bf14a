/**
 * Memory and handles of the service process, measured from outside: the service runs
 * with `--inspect=127.0.0.1:<port>` and this module speaks the Chrome DevTools protocol
 * over the inspector's WebSocket — a full collection (`HeapProfiler.collectGarbage`),
 * then `process.memoryUsage()` and the active handles read with `Runtime.evaluate`.
 * Nothing is added to the service's code.
 */
import WebSocket from 'ws';

const PROBE = `JSON.stringify({
  ...process.memoryUsage(),
  handles: process._getActiveHandles().length,
  resources: process.getActiveResourcesInfo().length,
})`;

/** Connects to the inspector on `port` (the first target it lists). Returns { sample(), close() }. */
export async function connectInspector(port, timeoutMs = 10_000) {
  const url = await debuggerUrl(port, timeoutMs);
  const socket = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  let nextId = 1;
  const pending = new Map();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    const waiter = message.id !== undefined && pending.get(message.id);
    if (!waiter) return; // events: no domain is enabled, so none are expected
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(`${waiter.method}: ${message.error.message}`));
    else waiter.resolve(message.result);
  });
  socket.on('close', () => {
    for (const waiter of pending.values()) waiter.reject(new Error('the inspector connection closed'));
    pending.clear();
  });
  const call = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject, method });
      socket.send(JSON.stringify({ id, method, params }));
    });

  return {
    /** { rss, heapTotal, heapUsed, external, arrayBuffers, handles, resources, gcMs } after a full GC. */
    async sample() {
      const started = Date.now();
      // Twice: the first collection can leave garbage that only finalizers released.
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      const gcMs = Date.now() - started;
      const { result, exceptionDetails } = await call('Runtime.evaluate', { expression: PROBE, returnByValue: true });
      if (exceptionDetails) throw new Error(`Runtime.evaluate: ${exceptionDetails.text}`);
      return { ...JSON.parse(result.value), gcMs };
    },
    close() {
      socket.close();
    },
  };
}

/** The WebSocket address of the inspector's first target, from its /json/list. */
async function debuggerUrl(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      if (targets[0]?.webSocketDebuggerUrl) return targets[0].webSocketDebuggerUrl;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`no inspector on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
