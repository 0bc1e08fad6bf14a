import { enableTracing } from './tracing.js';

/**
 * Turns tracing on: the OpenTelemetry SDK with the OTLP/HTTP exporter, Fastify's own
 * instrumentation (`@fastify/otel`: the HTTP request span, W3C `traceparent` honoured)
 * and the `pg` and `ioredis` instrumentations. Loaded only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, and before the app's modules (src/main.ts):
 * the instrumentations patch `pg` and `ioredis` as they load. README, "Observability".
 */

export interface TracingOptions {
  /** OTLP/HTTP base URL; spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
}

/** Starts exporting; the returned function flushes what is buffered and stops. */
export async function startTracing(options: TracingOptions): Promise<() => Promise<void>> {
  // `pg` and `ioredis` load through `require` when the first pool or connection is made
  // (src/db/postgres-pool.ts, src/store/redis-client.ts), after this: their
  // instrumentations patch them there, and no ESM loader hook is needed.
  const [api, { NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources, { registerInstrumentations }, fastifyOtel, pg, ioredis] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/instrumentation'),
      import('@fastify/otel'),
      import('@opentelemetry/instrumentation-pg'),
      import('@opentelemetry/instrumentation-ioredis'),
    ]);

  const provider = new NodeTracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES still apply (the env detector wins).
    resource: resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.name': 'inkwell' }))
      .merge(resources.detectResources({ detectors: [resources.envDetector] })),
    // Batching settings come from the standard OTEL_BSP_* variables.
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(options.endpoint) }))],
  });
  // AsyncLocalStorage context and the W3C trace-context propagator, process-wide.
  provider.register();

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new fastifyOtel.FastifyOtelInstrumentation({
        // Attaches itself to every Fastify instance as it is created (diagnostics_channel).
        registerOnInitialization: true,
        // One span per request (and its handler), not one per plugin hook.
        instrumentHooks: false,
        // The path only: a query string may hold an OAuth code or state.
        requestHook: (span, request) => span.setAttribute('url.path', request.url.split('?', 1)[0] ?? ''),
      }),
      // PostgreSQL statements are traced here (one span per statement, placeholders
      // only, never values); SQLite's by src/db/statement-spans.ts. Statements outside a
      // request (migrations, start-up) would each be a trace of their own: left out.
      new pg.PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      // The command name only: keys can name users, values can be anything.
      new ioredis.IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  enableTracing(api);
  return () => provider.shutdown();
}

/** OTLP/HTTP: the traces path is appended to the base endpoint (the OTLP exporter specification). */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}
