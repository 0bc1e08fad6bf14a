// A diagnostic of the machine, not of Inkwell: the CPU a trivial node:http server spends per
// request in closed loop (50 connections) and at fixed rates. What a request costs more at a
// low rate is what the platform charges for a request met alone (the event loop's wake-up, a
// working set refilled); every server on the machine pays it (bench/results/fixed-rate.md,
// "The same sequence given to the reference").
//
//   node bench/diagnostics/wake-cost.mjs [work=20000]
//
// `work` is the loop each request runs (20,000 additions: ~15 µs warm).
import { fork } from 'node:child_process';
import http from 'node:http';
import { cpuMsOf } from '../lib/cpu.mjs';

const RATES = [20, 200, 500];
const CLOSED_REQUESTS = 20_000;
const CONNECTIONS = 50;

if (process.argv[2] === 'serve') serve(Number(process.argv[3]));
else await measure(Number(process.argv[2] ?? 20_000));

function serve(work) {
  http
    .createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        let sum = 0;
        for (let i = 0; i < work; i++) sum += i;
        response.end(`{"sum":${sum}}`);
      });
    })
    .listen(0, '127.0.0.1', function () {
      process.send(this.address().port);
    });
}

async function measure(work) {
  const child = fork(new URL(import.meta.url).pathname, ['serve', String(work)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise((resolve) => child.once('message', resolve));
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const send = () =>
    new Promise((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, method: 'POST', agent }, (response) => response.resume().on('end', resolve));
      request.on('error', reject).end('{}');
    });
  try {
    for (let i = 0; i < 3_000; i++) await send(); // warm
    for (const rate of [...RATES, 0]) {
      const count = rate === 0 ? CLOSED_REQUESTS : rate * 8;
      const before = cpuMsOf(child.pid);
      if (rate === 0) {
        let sent = 0;
        const connection = async () => {
          while (sent++ < count) await send();
        };
        await Promise.all(Array.from({ length: CONNECTIONS }, connection));
      } else {
        const start = performance.now();
        const pending = [];
        for (let i = 0; i < count; i++) {
          const wait = start + (i * 1000) / rate - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          pending.push(send());
        }
        await Promise.all(pending);
      }
      // /proc counts in clock ticks (10 ms): thousands of requests make the figure exact enough.
      const us = ((cpuMsOf(child.pid) - before) * 1000) / count;
      console.log(`${rate === 0 ? `closed loop (${CONNECTIONS} connections)` : `${rate} req/s`}: ${Math.round(us)} µs CPU per request over ${count}`);
    }
  } finally {
    child.kill();
  }
}
