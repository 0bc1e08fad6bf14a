import type { CodegenConfig } from '@graphql-codegen/cli';

// Resolver types are generated from schema.graphql (the single source of the schema);
// `test/graphql/schema.test.ts` fails when the committed output is out of date.
const config: CodegenConfig = {
  schema: 'src/graphql/schema.graphql',
  generates: {
    'src/graphql/generated/resolvers.ts': {
      plugins: ['typescript', 'typescript-resolvers'],
      config: {
        useTypeImports: true,
        useIndexSignature: false,
        contextType: '../context.js#GraphQLContext',
        mappers: {
          User: '../../domain/types.js#User',
          Post: '../../domain/types.js#PostListing',
          Reaction: '../../domain/types.js#Reaction',
          Book: '../../domain/types.js#Book',
        },
        mapperTypeSuffix: 'Record',
        enumsAsTypes: true,
        avoidOptionals: false,
        maybeValue: 'T | null',
        inputMaybeValue: 'T | null | undefined',
      },
    },
  },
  hooks: {},
};

export default config;
