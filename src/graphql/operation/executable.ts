import { execute, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery, type CompilerOptions } from 'graphql-jit';

/**
 * How a prepared operation executes: with graphql-js its first INTERPRETED_EXECUTIONS
 * times, then compiled by graphql-jit. A compile costs what 2 to 17 executions save
 * (115–443 µs against 13–102 µs saved per execution on the bench's read shapes), so an
 * operation is compiled once it has run about that many times: documents with literal
 * ids, each run a few times, mostly never compile, and a repeated operation gets the
 * compiled speed after its first few runs (docs/decisions.md, "Compiled on the tenth
 * execution").
 */
export const INTERPRETED_EXECUTIONS = 9;

export interface Executable {
  query(root: unknown, context: unknown, variables: Record<string, unknown> | undefined): ExecutionResult | Promise<ExecutionResult>;
}

export class CompiledOnRepeat implements Executable {
  private compiled: CompiledQuery | undefined;
  private executions = 0;
  private compilable = true;

  /** `onCompiled` is told the length of the generated code (undefined if unknown), for the document cache's budget. */
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly document: DocumentNode,
    private readonly operationName: string | undefined,
    private readonly onCompiled: (sourceChars: number | undefined) => void,
  ) {}

  query(root: unknown, context: unknown, variables: Record<string, unknown> | undefined): ExecutionResult | Promise<ExecutionResult> {
    if (this.compiled === undefined && this.compilable && ++this.executions > INTERPRETED_EXECUTIONS) this.compile();
    if (this.compiled) {
      const result = this.compiled.query(root, context, variables);
      // Variables that do not match their types (refused before any resolver, no data):
      // graphql-js words the refusal, as it does on a first execution.
      if (!(result instanceof Promise) && result.data === undefined) return this.interpret(root, context, variables);
      return result;
    }
    return this.interpret(root, context, variables);
  }

  private interpret(root: unknown, context: unknown, variables: Record<string, unknown> | undefined): ExecutionResult | Promise<ExecutionResult> {
    const { schema, document, operationName } = this;
    return execute({ schema, document, operationName, rootValue: root, contextValue: context, variableValues: variables });
  }

  private compile(): void {
    // `debug` hands back the generated source, whose length sizes the entry; it is dropped at
    // once. Results are serialised with JSON.stringify: graphql-jit's schema-built
    // serialiser measured no faster on the mixes and the nested query, and costs a compile.
    const options: Partial<CompilerOptions> & { debug: boolean } = { debug: true };
    const compiled = compileQuery(this.schema, this.document, this.operationName, options);
    // Validated already; should graphql-jit still refuse it, graphql-js keeps executing it.
    if (!isCompiledQuery(compiled)) {
      this.compilable = false;
      return;
    }
    const debug = compiled as { __DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation?: string };
    const source = debug.__DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation;
    delete debug.__DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation;
    this.compiled = compiled;
    this.onCompiled(source?.length);
  }
}
