import { execute, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery, type CompilerOptions } from 'graphql-jit';

/**
 * How a prepared operation executes: with graphql-js the first time, compiled by
 * graphql-jit from its second execution on (Mercurius's `jit: 1`). Compiling costs
 * more than executing a few times (on the literal-ids mix it was a fifth of the CPU,
 * most of it for documents run once or answered from the response cache after their
 * first execution); a repeated operation still gets the compiled speed
 * (docs/decisions.md, "Compiled on the second execution").
 */
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
    if (this.compiled === undefined && this.compilable && ++this.executions > 1) this.compile();
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
