/**
 * Content negotiation as graphql-http does it, for the responses this service writes
 * itself: the first acceptable type in the client's order wins, and a client that
 * accepts neither still gets JSON (graphql-http answers 406 before we get here).
 */
export type GraphQLMediaType = 'application/graphql-response+json' | 'application/json';

export function acceptedMediaType(accept: string | undefined): GraphQLMediaType {
  if (!accept) return 'application/json';
  for (const part of accept.toLowerCase().split(',')) {
    const type = part.split(';', 1)[0]!.trim();
    if (type === 'application/graphql-response+json') return type;
    if (type === 'application/json' || type === 'application/*' || type === '*/*') return 'application/json';
  }
  return 'application/json';
}

export function contentTypeOf(mediaType: GraphQLMediaType): string {
  return `${mediaType}; charset=utf-8`;
}
