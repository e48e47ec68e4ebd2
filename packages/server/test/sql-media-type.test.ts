/**
 * `/v1/sql`'s answer type: the fast path for the Accept headers nearly every client sends must pick
 * what the content negotiation (@fastify/accepts, as the server runs it) picks, for every header.
 */
import fastifyAccepts from '@fastify/accepts';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQL_MEDIA_TYPES, sqlMediaType } from '../src/sql-response.js';

const HEADERS = [
  undefined,
  '*/*',
  'application/json',
  'text/csv',
  'text/plain',
  'application/x-ndjson',
  'application/vnd.apache.arrow.stream',
  'application/vnd.spiceai.sql.v1+json',
  'text/html',
  'application/*',
  'text/*',
  '*/*;q=0.1, text/csv',
  'application/json;q=0.5, text/csv',
  'application/json;q=0',
  'text/html, application/xhtml+xml, application/xml;q=0.9, */*;q=0.8',
  'image/png',
];

describe('sqlMediaType', () => {
  const app = Fastify();
  beforeAll(async () => {
    await app.register(fastifyAccepts);
    app.get('/', (request) => {
      const negotiated = request.accepts().type([...SQL_MEDIA_TYPES]);
      return {
        negotiated: typeof negotiated === 'string' ? negotiated : 'application/json',
        chosen: sqlMediaType(request.headers.accept, () => request.accepts().type([...SQL_MEDIA_TYPES])),
      };
    });
    await app.ready();
  });
  afterAll(() => app.close());

  it.each(HEADERS.map((accept) => [accept ?? '(none)', accept]))(
    'Accept %s: as the negotiation',
    async (_, accept) => {
      const answer = await app.inject({ url: '/', headers: accept === undefined ? {} : { accept } });
      const { negotiated, chosen } = answer.json() as { negotiated: string; chosen: string };
      expect(chosen).toBe(negotiated);
    },
  );

  it('answers none, any type and JSON without negotiating', () => {
    const negotiate = () => {
      throw new Error('negotiated');
    };
    for (const accept of [undefined, '*/*', 'application/json']) {
      expect(sqlMediaType(accept, negotiate)).toBe('application/json');
    }
    expect(() => sqlMediaType('text/csv', negotiate)).toThrow('negotiated');
  });

  it('answers JSON when the negotiation accepts none of the types', () => {
    expect(sqlMediaType('image/png', () => false)).toBe('application/json');
    expect(sqlMediaType('text/csv', () => 'text/csv')).toBe('text/csv');
  });
});
