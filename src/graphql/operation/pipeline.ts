import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationTypeNode,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { RequestError, requestError, withCode } from './errors.js';
import { traced, withSpan } from '../../observability/tracing.js';
import {
  collectFragments,
  complexityDependsOnVariables,
  complexityError,
  computeComplexity,
  countTokensWithin,
  maxAliasesRule,
  maxDepthRule,
} from './limits.js';

/**
 * The transport-free half of every operation: parse → validate (spec rules, limits,
 * no introspection in production) → compile with graphql-jit. HTTP and WebSocket
 * adapters both call `prepare` from their `onSubscribe` hooks, so there is one set
 * of rules. Documents are cached by their text in a bounded LRU: a repeated
 * operation is not parsed, validated or compiled again, and a repeated bad one is
 * refused from the cache too.
 */

export interface PreparedOperation {
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  readonly operationType: OperationTypeNode;
  readonly compiled: CompiledQuery;
  /** Stable key of (document, operation), for caches of results. */
  readonly key: string;
}

/** A prepared operation with the cost it has with the request's variables (docs/limits.md). */
export interface CheckedOperation {
  readonly operation: PreparedOperation;
  readonly cost: number;
}

interface DocumentEntry {
  readonly document: DocumentNode | undefined;
  readonly errors: readonly GraphQLError[] | undefined;
  readonly fragments: ReturnType<typeof collectFragments> | undefined;
  /** Compiled operations by operation name ('' for the only one), or the error that names it. */
  readonly operations: Map<string, PreparedOperation | RequestError>;
  readonly costs: Map<string, number | 'variable'>;
}

export interface PipelineOptions {
  limits: Config['limits'];
  introspection: boolean;
  cacheSize?: number;
}

export class OperationPipeline {
  private readonly documents: LRUCache<string, DocumentEntry>;
  private readonly rules: readonly ValidationRule[];

  constructor(
    readonly schema: GraphQLSchema,
    private readonly options: PipelineOptions,
  ) {
    this.documents = new LRUCache({
      max: options.cacheSize ?? 1000,
      // Bounded by text size too, so a flood of large distinct documents cannot grow memory.
      maxSize: 64 * 1024 * 1024,
      sizeCalculation: (_entry, key) => key.length * 2 + 1024,
    });
    this.rules = [
      ...specifiedRules,
      maxDepthRule(options.limits.maxDepth),
      maxAliasesRule(options.limits.maxAliases),
      ...(options.introspection ? [] : [NoSchemaIntrospectionCustomRule]),
    ];
  }

  /** The operation and its cost with these variables; throws RequestError (a 4xx with no data) for anything that must not execute. */
  prepare(
    query: string,
    operationName: string | null | undefined,
    variables: Record<string, unknown> | null | undefined,
  ): CheckedOperation {
    // observability: the `graphql.prepare` span (parse, validate, compile; short when cached).
    return withSpan('graphql.prepare', (span) => {
      const checked = this.prepareNow(query, operationName, variables);
      traced(span, checked.operation);
      return checked;
    });
  }

  private prepareNow(
    query: string,
    operationName: string | null | undefined,
    variables: Record<string, unknown> | null | undefined,
  ): CheckedOperation {
    const entry = this.entryFor(query);
    if (entry.errors) throw new RequestError(entry.errors);
    const name = operationName ?? '';
    let operation = entry.operations.get(name);
    if (!operation) {
      operation = this.compile(query, entry.document!, operationName ?? undefined);
      entry.operations.set(name, operation);
    }
    if (operation instanceof RequestError) throw operation;
    return { operation, cost: this.checkCost(entry, operation, variables) };
  }

  private entryFor(query: string): DocumentEntry {
    let entry = this.documents.get(query);
    if (!entry) {
      entry = this.analyse(query);
      this.documents.set(query, entry);
    }
    return entry;
  }

  private analyse(query: string): DocumentEntry {
    const failed = (errors: readonly GraphQLError[]): DocumentEntry => ({
      document: undefined,
      errors,
      fragments: undefined,
      operations: new Map(),
      costs: new Map(),
    });
    const tooManyTokens = countTokensWithin(query, this.options.limits.maxTokens);
    if (tooManyTokens) return failed([tooManyTokens]);
    let document: DocumentNode;
    try {
      document = parse(query, { noLocation: false });
    } catch (error) {
      if (error instanceof GraphQLError) return failed([withCode(error, 'GRAPHQL_PARSE_FAILED')]);
      throw error;
    }
    const errors = validate(this.schema, document, this.rules);
    if (errors.length > 0) return failed(errors.map((e) => withCode(e, 'GRAPHQL_VALIDATION_FAILED')));
    return { document, errors: undefined, fragments: collectFragments(document), operations: new Map(), costs: new Map() };
  }

  private compile(query: string, document: DocumentNode, operationName: string | undefined): PreparedOperation | RequestError {
    const ast = getOperationAST(document, operationName);
    if (!ast) {
      const message = operationName
        ? `Unknown operation named "${operationName}"`
        : 'Must provide operation name if query contains multiple operations';
      return requestError(message, 'GRAPHQL_VALIDATION_FAILED');
    }
    const compiled = compileQuery(this.schema, document, operationName, { customJSONSerializer: true });
    if (!isCompiledQuery(compiled)) {
      return new RequestError((compiled as ExecutionResult).errors?.map((e) => withCode(e, 'GRAPHQL_VALIDATION_FAILED')) ?? []);
    }
    return { document, operationName, operationType: ast.operation, compiled, key: `${operationName ?? ''}\u0000${query}` };
  }

  private checkCost(entry: DocumentEntry, operation: PreparedOperation, variables: Record<string, unknown> | null | undefined): number {
    const name = operation.operationName ?? '';
    let cost = entry.costs.get(name);
    if (cost === undefined) {
      cost = complexityDependsOnVariables(operation.document, operation.operationName) ? 'variable' : this.cost(entry, operation, undefined);
      entry.costs.set(name, cost);
    }
    const actual = cost === 'variable' ? this.cost(entry, operation, variables) : cost;
    if (actual > this.options.limits.maxComplexity) {
      throw new RequestError([complexityError(actual, this.options.limits.maxComplexity)]);
    }
    return actual;
  }

  private cost(entry: DocumentEntry, operation: PreparedOperation, variables: Record<string, unknown> | null | undefined): number {
    return computeComplexity(this.schema, operation.document, operation.operationName, variables, entry.fragments);
  }
}
