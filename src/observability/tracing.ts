import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import { operationNameOf, type ObservedOperation } from './operation.js';

/**
 * Our own spans, through `@opentelemetry/api` only: the SDK, the exporter and the
 * library instrumentations load only when OTEL_EXPORTER_OTLP_ENDPOINT is set
 * (src/observability/tracing-start.ts). Until then `enabled` is false and every helper
 * here is one branch and a direct call: no span, no context switch, no attribute
 * object is built (README, "Observability").
 */

type OpenTelemetryApi = typeof import('@opentelemetry/api');

/** The API as the tracing start-up loaded it: a service without tracing never loads it (~60 ms of a start). */
let api: OpenTelemetryApi | undefined;
let tracer: Tracer | undefined;

/** Called once by the tracing start-up, after the SDK's provider is registered. */
export function enableTracing(otel: OpenTelemetryApi): void {
  api = otel;
  tracer = otel.trace.getTracer('inkwell');
}

/** True when spans are exported; false (the default) makes every helper a plain call. */
export function tracingEnabled(): boolean {
  return tracer !== undefined;
}

export interface SpanOptions {
  /** The span's kind: `internal` unless it is a call to another system (a SQL statement). */
  kind?: 'internal' | 'client';
  /** Built only when the span records, so an attribute object costs nothing when tracing is off. */
  attributes?: () => Attributes;
}

/**
 * Runs `fn` inside a span named `name` that is the active span meanwhile (children such
 * as SQL statements attach to it), and ends it when `fn` returns or its promise settles.
 * `fn` receives the span when it records, to add attributes it learns on the way.
 */
export function withSpan<T>(name: string, fn: (span: Span | undefined) => T, options?: SpanOptions): T {
  if (tracer === undefined) return fn(undefined);
  const kind = options?.kind === 'client' ? api!.SpanKind.CLIENT : api!.SpanKind.INTERNAL;
  return tracer.startActiveSpan(name, { kind }, (span) => {
    const recording = span.isRecording() ? span : undefined;
    if (recording && options?.attributes) recording.setAttributes(options.attributes());
    let result: T;
    try {
      result = fn(recording);
    } catch (error) {
      failed(span, error);
      span.end();
      throw error;
    }
    if (!isPromiseLike(result)) {
      span.end();
      return result;
    }
    return result.then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failed(span, error);
        span.end();
        throw error;
      },
    ) as T;
  });
}

/** Semantic-convention attributes of a GraphQL operation, for a recording span. */
export function operationAttributes(span: Span, operation: ObservedOperation): void {
  span.setAttribute('graphql.operation.type', operation.operationType);
  const name = operationNameOf(operation);
  if (name) span.setAttribute('graphql.operation.name', name);
}

/** Notes the operation on its span (when one records) and hands it back. */
export function traced<O extends ObservedOperation>(span: Span | undefined, operation: O): O {
  if (span) operationAttributes(span, operation);
  return operation;
}

/** `graphql.execute` around an operation's execution; field errors are counted on the span. */
export function traceExecute<R extends { errors?: readonly unknown[] }>(operation: ObservedOperation, execute: () => R | Promise<R>): R | Promise<R> {
  if (tracer === undefined) return execute();
  return withSpan('graphql.execute', (span) => {
    if (span === undefined) return execute();
    operationAttributes(span, operation);
    const noteErrors = (result: R): R => {
      if (result.errors?.length) span.setAttribute('graphql.errors', result.errors.length);
      return result;
    };
    const result = execute();
    return result instanceof Promise ? result.then(noteErrors) : noteErrors(result);
  });
}

function failed(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  span.setStatus({ code: api!.SpanStatusCode.ERROR, message });
  if (error instanceof Error) span.recordException(error);
}

function isPromiseLike<T>(value: T | PromiseLike<unknown>): value is PromiseLike<unknown> & T {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}
