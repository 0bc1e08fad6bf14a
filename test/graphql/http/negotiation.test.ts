import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptedMediaType, isAcceptable, prefersHtml } from '../../../src/graphql/http/media.js';
import { startServer, type TestServer } from '../../helpers/server.js';

/** docs/graphql-endpoint.md ("Response"): Accept with q-values and wildcards. */
describe('Accept, read with q-values', () => {
  it.each([
    // [Accept, answered with, or null for 406]
    [undefined, 'application/json'],
    ['', 'application/json'],
    ['*/*', 'application/json'],
    ['application/*', 'application/json'],
    ['application/json', 'application/json'],
    ['application/graphql-response+json', 'application/graphql-response+json'],
    ['application/graphql-response+json, application/json', 'application/graphql-response+json'],
    ['application/json, application/graphql-response+json', 'application/json'],
    // Named outright beats a wildcard at the same q-value.
    ['*/*, application/graphql-response+json', 'application/graphql-response+json'],
    ['application/json;q=0.5, application/graphql-response+json', 'application/graphql-response+json'],
    ['application/graphql-response+json;q=0.5, application/json', 'application/json'],
    ['application/graphql-response+json;q=0, */*', 'application/json'],
    ['application/json;q=0, application/graphql-response+json', 'application/graphql-response+json'],
    ['application/json; charset=utf-8', 'application/json'],
    ['application/json; charset=UTF-8', 'application/json'],
    ['application/json;charset=utf8', 'application/json'],
    ['application/json;q=0', null],
    ['application/json;q=0, application/graphql-response+json;q=0', null],
    ['*/*;q=0', null],
    ['application/json;q=0, */*', 'application/graphql-response+json'],
    ['application/json; charset=latin1', null],
    ['text/plain', null],
    ['text/html', null],
  ])('Accept %j → %s', (accept, expected) => {
    expect(isAcceptable(accept)).toBe(expected !== null);
    if (expected) expect(acceptedMediaType(accept)).toBe(expected);
  });

  it.each([
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', true],
    ['text/html', true],
    ['text/html;q=0, */*', false],
    ['text/html;q=0.5, application/json', false],
    ['*/*', false],
    [undefined, false],
  ])('a browser page for %j: %s', (accept, expected) => {
    expect(prefersHtml(accept)).toBe(expected);
  });
});

describe('over the wire', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  const post = (accept: string) =>
    fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept },
      body: JSON.stringify({ query: '{ __typename }' }),
    });

  it('Accept: application/json;q=0 is 406 NOT_ACCEPTABLE', async () => {
    const response = await post('application/json;q=0');
    expect(response.status).toBe(406);
    expect(((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('NOT_ACCEPTABLE');
  });

  it('a JSON type at q=0 is not chosen when the other is acceptable', async () => {
    const response = await post('application/graphql-response+json;q=0, application/json;q=0.1');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  it('a GET whose Accept refuses text/html is not given the GraphiQL page', async () => {
    const response = await fetch(`${server.url}/graphql`, { headers: { accept: 'text/html;q=0, application/json' } });
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  });
});
