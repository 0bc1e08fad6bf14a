import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testBackend, withoutCost } from '../helpers/server.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';
import { startService, type ServiceProcess } from './service.js';

// The service as `npm start` runs it, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a
// loopback OTLP/HTTP receiver this test runs: a request carrying a W3C `traceparent`
// must come back as spans of that trace — HTTP, then prepare and execute, then each
// SQL statement — with the right parents, on this project's database.

const SERVER = 2; // OTLP SpanKind
const dbSystem = testBackend === 'postgres' ? 'postgresql' : 'sqlite';
// The stable database conventions, as the pg and ioredis instrumentations emit them.
const isSql = (s: ReceivedSpan) => s.attributes['db.system.name'] === dbSystem && typeof s.attributes['db.query.text'] === 'string';
const statementOf = (s: ReceivedSpan) => String(s.attributes['db.query.text']);

describe('tracing', () => {
  let receiver: OtlpReceiver;
  let service: ServiceProcess;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    service = await startService({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      // Export every 100 ms instead of every 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      LOG_LEVEL: 'info',
      // Every request executes (no cached answer short-cuts it).
      RESPONSE_CACHE_MB: '0',
    });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('continues the caller’s trace: HTTP → graphql.prepare / graphql.execute → each SQL statement', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    // A value that must reach the database as a parameter and never a span.
    const id = randomUUID();
    const response = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ query: 'query Lookup($id: ID!) { user(id: $id) { name } users(limit: 3) { name } }', variables: { id }, operationName: 'Lookup' }),
    });
    expect(response.status).toBe(200);
    expect(withoutCost(await response.json())).toEqual({ data: { user: null, users: [] } });

    const all = await receiver.waitFor((spans) => {
      const trace = spans.filter((s) => s.traceId === traceId);
      return trace.some((s) => s.kind === SERVER) && trace.some((s) => s.name === 'graphql.execute') && trace.some(isSql);
    });
    const trace = all.filter((s) => s.traceId === traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const ancestors = (span: ReceivedSpan): string[] => {
      const out: string[] = [];
      for (let p = span.parentSpanId; p !== undefined; p = byId.get(p)?.parentSpanId) out.push(p);
      return out;
    };

    // The HTTP span (from @fastify/otel) is the caller's span's child: the caller's trace goes on.
    const http = trace.filter((s) => s.kind === SERVER);
    expect(http).toHaveLength(1);
    expect(http[0]!.parentSpanId).toBe(callerSpan);
    expect(http[0]!.serviceName).toBe('inkwell');
    expect(http[0]!.attributes['http.route']).toBe('/graphql');

    const prepare = trace.filter((s) => s.name === 'graphql.prepare');
    const execute = trace.filter((s) => s.name === 'graphql.execute');
    expect(prepare).toHaveLength(1);
    expect(execute).toHaveLength(1);
    for (const span of [...prepare, ...execute]) {
      expect(ancestors(span)).toContain(http[0]!.spanId);
      expect(span.attributes).toMatchObject({ 'graphql.operation.name': 'Lookup', 'graphql.operation.type': 'query' });
    }
    expect(ancestors(execute[0]!)).not.toContain(prepare[0]!.spanId);

    // The resolvers' statements hang under execute: the user lookup, the list.
    const statements = trace.filter(isSql);
    const executed = statements.filter((s) => ancestors(s).includes(execute[0]!.spanId));
    expect(executed.length).toBeGreaterThanOrEqual(2);
    const lookup = executed.find((s) => /from "users" where "id" in \(/i.test(statementOf(s)));
    expect(lookup, executed.map(statementOf).join('\n')).toBeDefined();
    expect(statementOf(lookup!)).toMatch(testBackend === 'postgres' ? /\$1/ : /\?/);
    // One span per statement: no statement span inside another (the pg instrumentation and our own would nest).
    for (const span of statements) expect(span.parentSpanId && isSql(byId.get(span.parentSpanId)!)).toBeFalsy();

    // Parameter values never: not the id, in any attribute of any span.
    expect(JSON.stringify(all)).not.toContain(id);
  });

  it.runIf(testBackend === 'postgres')('traces Redis commands by name only, inside the request', async () => {
    const traceId = randomBytes(16).toString('hex');
    const response = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      body: JSON.stringify({ query: '{ users(limit: 1) { id } }' }),
    });
    expect(response.status).toBe(200);
    const all = await receiver.waitFor((spans) => spans.some((s) => s.traceId === traceId && s.attributes['db.system.name'] === 'redis'));
    const redis = all.filter((s) => s.traceId === traceId && s.attributes['db.system.name'] === 'redis');
    const http = all.find((s) => s.traceId === traceId && s.kind === SERVER);
    for (const span of redis) {
      expect(statementOf(span)).toMatch(/^[a-z]+$/i);
      expect(span.parentSpanId).toBeDefined();
    }
    expect(http).toBeDefined();
  });

  it('exports a request without a traceparent as a trace of its own', async () => {
    const before = new Set(receiver.spans.map((s) => s.traceId));
    const response = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ users(limit: 1) { id } }' }),
    });
    expect(response.status).toBe(200);
    const all = await receiver.waitFor((spans) => spans.some((s) => !before.has(s.traceId) && s.kind === SERVER));
    const root = all.find((s) => !before.has(s.traceId) && s.kind === SERVER)!;
    expect(root.parentSpanId).toBeUndefined();
    expect(receiver.paths.every((p) => p === '/v1/traces')).toBe(true);
  });
});
