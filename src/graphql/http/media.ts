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

/** Whether graphql-http would answer this Accept header at all (else it answers 406). */
export function isAcceptable(accept: string | undefined): boolean {
  if (!accept) return true;
  for (const part of accept.toLowerCase().replace(/\s/g, '').split(',')) {
    const [type, ...params] = part.split(';');
    const charset = params.find((p) => p.startsWith('charset=')) ?? 'charset=utf-8';
    if (charset !== 'charset=utf-8' && charset !== 'charset=utf8') continue;
    if (type === 'application/graphql-response+json' || type === 'application/json' || type === 'application/*' || type === '*/*') return true;
  }
  return false;
}

export function contentTypeOf(mediaType: GraphQLMediaType): string {
  return `${mediaType}; charset=utf-8`;
}
