/**
 * Every child process the bench starts is registered here, so that whatever happens
 * (normal end, a thrown error, Ctrl-C, SIGTERM) none is left running.
 */
import { fork } from 'node:child_process';

const children = new Set();

/** Forks a Node script with IPC; the child is killed when the bench exits. */
export function forkTracked(script, args = [], options = {}) {
  const child = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...options });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Sends SIGTERM, then SIGKILL after `graceMs`; resolves when the child has exited. */
export function stopChild(child, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
    // A paused child (./alone.mjs) acts on SIGTERM only once it runs again.
    child.kill('SIGCONT');
  });
}

/** Resolves with the first IPC message for which `match` is true; rejects if the child exits first. */
export function waitForMessage(child, match = () => true, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message) => {
      if (!match(message)) return;
      cleanup();
      resolve(message);
    };
    const onExit = (code, signal) => {
      cleanup();
      reject(new Error(`child ${child.spawnargs.slice(1).join(' ')} exited (${signal ?? code}) before answering`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`child ${child.spawnargs.slice(1).join(' ')} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

function killAll() {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

let installed = false;
/** Kills every tracked child on exit, on SIGINT/SIGTERM and on an uncaught error. */
export function installCleanup() {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(signal, () => {
      killAll();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (error) => {
    console.error(error);
    killAll();
    process.exit(1);
  });
  process.on('unhandledRejection', (error) => {
    console.error(error);
    killAll();
    process.exit(1);
  });
}
