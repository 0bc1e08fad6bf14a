import Negotiator from 'negotiator';

/**
 * Content negotiation of the GraphQL-over-HTTP spec (docs/graphql-endpoint.md), the one
 * place that reads `Accept`, with `negotiator`: q-values and wildcards honoured
 * (`application/json;q=0` accepts no JSON). Among equally acceptable types the client's
 * order wins, and JSON is the default (no header, any type, any `application/` type); a
 * client that accepts neither JSON type is answered 406 by the route before anything else,
 * unless it prefers an event stream (`prefersEventStream`).
 */
export type GraphQLMediaType = 'application/graphql-response+json' | 'application/json';

// Offered with the only charset served, so an `Accept` naming another charset matches
// nothing; `utf8` is the alias clients send. On a tie the first offered (JSON) wins.
const OFFERED = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; charset=utf8',
  'application/graphql-response+json; charset=utf8',
];
// Only to tell whether a browser asks for the GraphiQL page: last, so a wildcard alone
// still means JSON.
const OFFERED_WITH_HTML = [...OFFERED, 'text/html'];
// Only to tell whether a client asks for an event stream (GraphQL over SSE): last too.
const OFFERED_WITH_EVENT_STREAM = [...OFFERED, 'text/event-stream'];

type Negotiated = { type: GraphQLMediaType | null; html?: boolean; eventStream?: boolean };

// Clients send one of a few headers on every request (~8 µs to negotiate one): answers
// are kept per header, a bounded few, forgotten all at once when full.
const answers = new Map<string | undefined, Negotiated>();
const MAX_ANSWERS = 64;

function negotiate(accept: string | undefined): Negotiated {
  // An empty header says nothing, like no header.
  const header = accept === '' ? undefined : accept;
  let answer = answers.get(header);
  if (answer === undefined) {
    if (answers.size >= MAX_ANSWERS) answers.clear();
    const json = new Negotiator({ headers: header === undefined ? {} : { accept: header } }).mediaType(OFFERED);
    answer = { type: json === undefined ? null : (json.split(';', 1)[0] as GraphQLMediaType) };
    answers.set(header, answer);
  }
  return answer;
}

/** The type to answer with: the client's preferred JSON type (JSON when it accepts none). */
export function acceptedMediaType(accept: string | undefined): GraphQLMediaType {
  return negotiate(accept).type ?? 'application/json';
}

/** Whether this Accept header allows a GraphQL response at all (else 406). */
export function isAcceptable(accept: string | undefined): boolean {
  return negotiate(accept).type !== null;
}

/** Whether the client prefers an HTML page to either JSON type (a browser). */
export function prefersHtml(accept: string | undefined): boolean {
  const answer = negotiate(accept);
  answer.html ??= accept !== undefined && accept !== '' && new Negotiator({ headers: { accept } }).mediaType(OFFERED_WITH_HTML) === 'text/html';
  return answer.html;
}

/**
 * Whether the client prefers `text/event-stream` to either JSON type: then /graphql
 * answers with GraphQL over SSE (src/graphql/sse/). Among equally acceptable types the
 * client's order wins (urql's fetch lists the JSON types first), and a wildcard means JSON.
 */
export function prefersEventStream(accept: string | undefined): boolean {
  const answer = negotiate(accept);
  answer.eventStream ??=
    accept !== undefined && accept !== '' && new Negotiator({ headers: { accept } }).mediaType(OFFERED_WITH_EVENT_STREAM) === 'text/event-stream';
  return answer.eventStream;
}

export function contentTypeOf(mediaType: GraphQLMediaType): string {
  return `${mediaType}; charset=utf-8`;
}
