// First: V8 flags must be set before the rest of the app loads.
import './runtime-flags.js';
import { ConfigError, loadConfig } from './config.js';

/** Idle keep-alive connections may still bring a request this long after SIGTERM (src/http/drain.ts). */
const DRAIN_LINGER_MS = 1_000;
/** A drain that takes longer is cut short (exit 1): a stop timeout of 15 s leaves room. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Start-up: config → tracing (when configured) → app → listen → graceful shutdown on
 * SIGTERM/SIGINT. The app is imported only after tracing has started: instrumentations
 * patch `pg` and `ioredis` as they load (src/observability/tracing-start.ts).
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  // observability: tracing starts before the app's modules load, and only when configured.
  const stopTracing = config.otlpEndpoint
    ? await (await import('./observability/tracing-start.js')).startTracing({ endpoint: config.otlpEndpoint })
    : undefined;
  const { buildInkwell } = await import('./app.js');
  const inkwell = await buildInkwell(config);
  const { app } = inkwell;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'draining: no new connections, finishing in-flight requests');
    // A drain that hangs must not keep the process alive forever.
    const deadline = setTimeout(() => {
      app.log.error({ graceMs: SHUTDOWN_GRACE_MS }, 'shutdown took longer than its grace period; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    deadline.unref();
    try {
      await inkwell.close({ lingerMs: DRAIN_LINGER_MS });
      await stopTracing?.(); // observability: spans still buffered are sent before exit.
      app.log.info('drained; exiting');
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  app.log.info(`Inkwell GraphQL endpoint at ${config.publicUrl}/graphql`);
}

main().catch((error: unknown) => {
  process.stderr.write(`Inkwell failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
