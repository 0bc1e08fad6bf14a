/**
 * The login load generator, in its own process (forked by run.mjs, driven over IPC):
 *
 *   parent → {cmd: 'start', url, accounts: [{ email, password }], perSecond}
 *   child  → {cmd: 'started'}
 *   parent → {cmd: 'mark'}                     notes how many logins had completed (the end of the Q1 run)
 *   child  → {cmd: 'marked', completed, sent, inFlight, seconds, latencies}
 *   parent → {cmd: 'stop', drainMs}            no new logins; waits up to drainMs for the ones in flight
 *   child  → {cmd: 'stopped', result}
 *
 * Open loop: login n starts at start + n × (1000 / perSecond) ms whether or not earlier
 * ones have answered, the way independent users arrive. Accounts are used in turn, so
 * no email comes near the login throttle (10 attempts per 15 min; a success resets it).
 * A login's latency runs from sending POST /api/auth/login to the end of its response.
 */

const latencies = [];
const statuses = {};
let sent = 0;
let inFlight = 0;
let failures = 0;
let stopped = false;
let timer;
let started = 0;
let firstError;

function fire(url, account) {
  sent++;
  inFlight++;
  const begin = performance.now();
  fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(account),
  })
    .then(async (response) => {
      await response.arrayBuffer();
      statuses[response.status] = (statuses[response.status] ?? 0) + 1;
      if (response.status === 200) latencies.push(performance.now() - begin);
      else failures++;
    })
    .catch((error) => {
      failures++;
      firstError ??= String(error?.cause?.message ?? error?.message ?? error);
    })
    .finally(() => {
      inFlight--;
    });
}

function start({ url, accounts, perSecond }) {
  const intervalMs = 1000 / perSecond;
  started = performance.now();
  const tick = () => {
    if (stopped) return;
    // Every login whose start time has come (a late timer sends the missed ones at once).
    const due = Math.floor((performance.now() - started) / intervalMs) + 1;
    while (sent < due) fire(url, accounts[sent % accounts.length]);
    timer = setTimeout(tick, Math.max(0, started + sent * intervalMs - performance.now()));
  };
  tick();
}

async function stop({ drainMs = 60_000 }) {
  stopped = true;
  clearTimeout(timer);
  const firingSeconds = (performance.now() - started) / 1000;
  const inFlightAtStop = inFlight;
  const deadline = performance.now() + drainMs;
  while (inFlight > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return { sent, completed: latencies.length, failures, statuses, inFlightAtStop, unfinished: inFlight, firingSeconds, latencies, firstError };
}

process.once('disconnect', () => process.exit(0));
process.on('message', async (message) => {
  try {
    if (message.cmd === 'start') {
      start(message);
      process.send({ cmd: 'started' });
    } else if (message.cmd === 'mark') {
      const seconds = (performance.now() - started) / 1000;
      process.send({ cmd: 'marked', completed: latencies.length, sent, inFlight, seconds, latencies: [...latencies] });
    } else if (message.cmd === 'stop') {
      process.send({ cmd: 'stopped', result: await stop(message) });
    }
  } catch (error) {
    process.send({ cmd: message?.cmd ?? 'error', error: String(error?.stack ?? error) });
  }
});
