import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationTypeNode,
  type Token,
  type ValidationRule,
} from 'graphql';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { RequestError, ValidationFailed, withCode } from './errors.js';
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
import { expandedFields, MAX_EXPANDED_FIELDS } from './fields.js';
import { CompiledOnRepeat, type Executable } from './executable.js';
import { trimKeptDocument } from './kept-document.js';

/**
 * The transport-free half of every operation: parse → validate (spec rules, limits,
 * no introspection in production) → an executable (./executable.ts: graphql-jit
 * compiles it once it has run a few times). HTTP and WebSocket adapters both call
 * `prepare` from their `onSubscribe` hooks, so there is one set of rules. Documents are
 * cached by their text in an LRU bounded in bytes: a repeated operation is not parsed,
 * validated or compiled again, and a repeated bad one is refused from the cache too
 * (docs/limits.md, "Memory").
 */

/** The parsed-document cache's budget, and the most a single entry may take of it. */
const DOCUMENT_CACHE_BYTES = 64 * 1024 * 1024;
const LARGEST_CACHED_ENTRY = 4 * 1024 * 1024;
/**
 * Longer texts are parsed for each request and never kept. Within 2,000 tokens a real
 * document is a few KB; the rest of a longer one is padding (comments, whitespace,
 * string literals), which would cost memory for nothing but the attacker's gain.
 */
const LARGEST_CACHED_TEXT = 64 * 1024;
/**
 * What an entry holds, estimated (measured with `global.gc` on documents of many shapes;
 * docs/limits.md): the text at two bytes a character, ~300 bytes per token for the
 * AST as parsed, with its locations and token list (comments included; a kept document
 * drops most of those, ./kept-document.ts: ~145 bytes, so the count errs high), and ~4 bytes per character
 * of the function graphql-jit generated for each compiled operation (its source, code and
 * per-field plan: a 3.6 KB document of 30 aliases compiles to 0.5 MB of source and holds 2.4 MB).
 */
const ENTRY_BASE_BYTES = 4 * 1024;
const BYTES_PER_TOKEN = 300;
const BYTES_PER_COMPILED_CHAR = 4;

export interface PreparedOperation {
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  readonly operationType: OperationTypeNode;
  readonly executable: Executable;
  /** Stable key of (document, operation), for caches of results. */
  readonly key: string;
}

/** A prepared operation with the cost it has with the request's variables (docs/limits.md). */
export interface CheckedOperation {
  readonly operation: PreparedOperation;
  readonly cost: number;
}

interface DocumentEntry {
  /** Estimated bytes held, grown as operations of the document are compiled. */
  bytes: number;
  readonly document: DocumentNode | undefined;
  /** Tokens of the document as parsed, comments included (0 when refused or not kept). */
  readonly tokens: number;
  readonly errors: readonly GraphQLError[] | undefined;
  readonly fragments: ReturnType<typeof collectFragments> | undefined;
  /** Compiled operations by operation name ('' for the only one), or why it cannot compile; never names the document lacks. */
  readonly operations: Map<string, PreparedOperation | RequestError>;
  readonly costs: Map<string, number | 'variable'>;
}

export interface PipelineOptions {
  limits: Config['limits'];
  introspection: boolean;
}

export class OperationPipeline {
  private readonly documents: LRUCache<string, DocumentEntry>;
  private readonly rules: readonly ValidationRule[];

  constructor(
    readonly schema: GraphQLSchema,
    private readonly options: PipelineOptions,
  ) {
    this.documents = new LRUCache({
      // Bounded by what entries hold, not their number, so a flood of large or costly
      // documents cannot grow memory, and many small ones (literal ids) all stay parsed.
      maxSize: DOCUMENT_CACHE_BYTES,
      maxEntrySize: LARGEST_CACHED_ENTRY,
      sizeCalculation: (entry) => entry.bytes,
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

  /**
   * The operation is parsed, validated and compiled already (or known to be refused): its
   * `prepare` is a lookup, cheap enough to do before the request is counted.
   */
  knows(query: string, operationName: string | null | undefined): boolean {
    const entry = this.documents.peek(query);
    return entry !== undefined && (entry.errors !== undefined || entry.operations.has(operationName ?? ''));
  }

  /** Estimated bytes the cached documents hold (tests, diagnostics). */
  get cachedBytes(): number {
    return this.documents.calculatedSize;
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
      const compiled = this.compile(query, entry, operationName ?? undefined);
      operation = compiled.operation;
      // Kept only for names the document has: any other name a client sends is refused anew.
      if (compiled.bytes > 0) {
        entry.operations.set(name, operation);
        this.grow(query, entry, compiled.bytes);
      }
    }
    if (operation instanceof RequestError) throw operation;
    return { operation, cost: this.checkCost(entry, operation, variables) };
  }

  /**
   * Counts `bytes` more held by an entry. Set again so that the cache counts its new size
   * (or drops it, now too large): lru-cache sizes a value when it is set, and setting the
   * same value again keeps the old size.
   */
  private grow(query: string, entry: DocumentEntry, bytes: number): void {
    entry.bytes += bytes;
    if (this.documents.peek(query) === entry) {
      this.documents.delete(query);
      this.documents.set(query, entry);
    }
  }

  private entryFor(query: string): DocumentEntry {
    let entry = this.documents.get(query);
    if (!entry) {
      entry = this.analyse(query);
      // An entry estimated over LARGEST_CACHED_ENTRY is not kept by the cache either.
      if (query.length <= LARGEST_CACHED_TEXT) this.documents.set(query, entry);
    }
    return entry;
  }

  private analyse(query: string): DocumentEntry {
    const failed = (errors: readonly GraphQLError[]): DocumentEntry => ({
      // The text and compact errors only: no AST, no source, no stack.
      bytes: ENTRY_BASE_BYTES + query.length * 2 + errors.length * 512,
      document: undefined,
      tokens: 0,
      errors: errors.map(compact),
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
    // Tokens are counted, and the AST trimmed, only for documents that may be kept.
    const kept = query.length <= LARGEST_CACHED_TEXT;
    const tokens = kept ? tokenCount(document) : 0;
    if (kept) trimKeptDocument(document);
    return {
      bytes: ENTRY_BASE_BYTES + query.length * 2 + tokens * BYTES_PER_TOKEN,
      document,
      tokens,
      errors: undefined,
      fragments: collectFragments(document),
      operations: new Map(),
      costs: new Map(),
    };
  }

  /** The operation (or why it cannot run) and the bytes it adds to its entry; 0 when it must not be kept. */
  private compile(
    query: string,
    entry: DocumentEntry,
    operationName: string | undefined,
  ): { operation: PreparedOperation | RequestError; bytes: number } {
    const document = entry.document!;
    const ast = getOperationAST(document, operationName);
    if (!ast) {
      const message = operationName
        ? `Unknown operation named "${operationName}"`
        : 'Must provide operation name if query contains multiple operations';
      return { operation: new ValidationFailed(message), bytes: 0 };
    }
    // Compiling costs in proportion to the expanded fields, whatever the cost says (limit: 0).
    if (expandedFields(this.schema, document, operationName) > MAX_EXPANDED_FIELDS) {
      return { operation: new RequestError([complexityError(0, this.options.limits.maxComplexity)]), bytes: 1024 };
    }
    // The generated code, once there is any, counts in the entry (should graphql-jit stop
    // handing its source back: the most a token was measured to cost compiled).
    const executable = new CompiledOnRepeat(this.schema, document, operationName, (sourceChars) =>
      this.grow(query, entry, sourceChars !== undefined ? sourceChars * BYTES_PER_COMPILED_CHAR : entry.tokens * 3_000),
    );
    return {
      operation: { document, operationName, operationType: ast.operation, executable, key: `${operationName ?? ''}\u0000${query}` },
      bytes: ENTRY_BASE_BYTES,
    };
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

/** Tokens the parsed document keeps linked from its locations, comments included. */
function tokenCount(document: DocumentNode): number {
  let count = 0;
  for (let token: Token | null | undefined = document.loc?.startToken; token; token = token.next) count++;
  return count;
}

/**
 * A copy of a refusal that keeps what clients see (message, locations, code) without the
 * AST nodes, the source text or the stack frames the original holds: a cached refusal
 * must not keep alive the document, or the request, that it refused.
 */
function compact(error: GraphQLError): GraphQLError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    const copy = new GraphQLError(error.message, { extensions: error.extensions, originalError: error.originalError });
    if (error.locations) (copy as { locations?: GraphQLError['locations'] }).locations = error.locations;
    return copy;
  } finally {
    Error.stackTraceLimit = limit;
  }
}
