import { execFileSync } from 'node:child_process';

/**
 * A dependency that stops answering without closing anything: SIGSTOP freezes a process
 * (and here its children: PostgreSQL's postmaster and backends) with every TCP
 * connection still open, as a server swapping to death or a network dropping packets
 * would look; SIGCONT lets it carry on where it was.
 */
export function processTree(pid: number): number[] {
  const pids = [pid];
  for (let i = 0; i < pids.length; i++) {
    let children = '';
    try {
      children = execFileSync('pgrep', ['-P', String(pids[i])], { encoding: 'utf8' });
    } catch {
      // pgrep exits 1 when there is no child
    }
    for (const line of children.split('\n')) if (line.trim()) pids.push(Number(line.trim()));
  }
  return pids;
}

export interface Paused {
  pids: number[];
  resume(): void;
}

/**
 * Freezes `pid` and its descendants; `resume()` thaws them, and the parent too: a
 * parent such as `runuser` (PostgreSQL's when the tests run as root) stops itself when
 * its child stops, and would otherwise stay stopped, never reaping the child.
 */
export function pauseTree(pid: number): Paused {
  const parent = Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
  // The root first, so that it forks no child meanwhile; a child that exits between the
  // listing and its signal (a PostgreSQL backend whose client left) is simply gone.
  process.kill(pid, 'SIGSTOP');
  const pids = processTree(pid);
  for (const p of pids.slice(1)) {
    try {
      process.kill(p, 'SIGSTOP');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
  let resumed = false;
  return {
    pids,
    resume() {
      if (resumed) return;
      resumed = true;
      for (const p of [...pids, parent]) {
        try {
          process.kill(p, 'SIGCONT');
        } catch {
          // gone meanwhile
        }
      }
    },
  };
}
