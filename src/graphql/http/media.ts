/**
 * Content negotiation of the GraphQL-over-HTTP spec (docs/graphql-endpoint.md): the
 * first acceptable type in the client's order wins; a client that accepts neither JSON
 * type is answered 406 by the route before anything else.
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

/** Whether this Accept header allows a GraphQL response at all (else 406). */
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
