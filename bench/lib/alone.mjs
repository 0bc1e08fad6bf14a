/**
 * Each server measured alone: while one server runs a measurement, every other server the
 * bench started is paused (SIGSTOP), and resumed (SIGCONT) once that server is idle again.
 * The mixed bench keeps six servers alive on two cores; an idle one's own work (V8's memory
 * reducer shrinking a heap that stopped growing, a timer) otherwise lands in another
 * server's measured seconds, which a service with its machine to itself never meets
 * (bench/results/fixed-rate.md, "Sixteenth and seventeenth runs"). Every server alike: Inkwell
 * and the reference.
 */
const servers = new Set();

/** A server ({ child }) that must not run while another is measured. */
export function pausable(server) {
  servers.add(server);
  return server;
}

/** `run()` with every other pausable server paused meanwhile; resolves once they serve again. */
export async function alone(server, run) {
  const others = [...servers].filter((s) => s !== server && s.child.exitCode === null && s.child.signalCode === null);
  for (const s of others) s.child.kill('SIGSTOP');
  try {
    return await run();
  } finally {
    for (const s of others) s.child.kill('SIGCONT');
    await Promise.all(others.map(serving));
  }
}

/**
 * Until the server no longer sheds load. A paused Inkwell finds its event loop lagged by the
 * whole pause at its next sample (once a second, run first when it resumes) and answers 503
 * OVERLOADED until the sample after (src/http/overload.ts); the reference has no /readyz (404).
 */
async function serving({ url }, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  await sleep(200);
  for (;;) {
    const status = await fetch(`${url}/readyz`).then(async (r) => (await r.arrayBuffer(), r.status), () => 0);
    if ((status !== 503 && status !== 0) || Date.now() >= deadline) return;
    await sleep(100);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
