import type { DestinationStream } from 'pino';

/**
 * Human-readable logs on a terminal (`npm run dev`, `npm start` in a shell), JSON lines
 * everywhere else (a service manager, a container, a file): the same records either
 * way. pino-pretty loads only when stdout is a terminal.
 */
export async function logStreamFor(stdout: NodeJS.WriteStream = process.stdout): Promise<{ stream?: DestinationStream }> {
  if (!stdout.isTTY) return {};
  const { default: pretty } = await import('pino-pretty');
  return { stream: pretty({ destination: stdout, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }) };
}
