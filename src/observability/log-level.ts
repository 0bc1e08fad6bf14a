import type { FastifyBaseLogger } from 'fastify';

/** Whether an `info` line would be written: pino answers exactly; another logger is asked to log. */
export function infoEnabled(log: FastifyBaseLogger): boolean {
  const pino = log as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
  return pino.isLevelEnabled ? pino.isLevelEnabled('info') : true;
}
