import { API_ERRORS, type ApiErrorName } from '@sync/contracts';
import { FakeSyncEngine } from '../test/fake-sync-engine';
import { startTestApi, type TestApi } from '../test/start-test-api';
import { OPERATION_ERRORS } from './api-operations';

type Json = any;

/** Every operation the app serves (a new route fails this test until it is documented). */
const OPERATIONS: Array<[string, string, string]> = [
  ['post', '/api/v1/start', 'start'],
  ['get', '/api/v1/progress', 'progress'],
  ['post', '/api/v1/pause', 'pause'],
  ['post', '/api/v1/resume', 'resume'],
  ['post', '/api/v1/commit', 'commit'],
  ['post', '/api/v1/reverse', 'reverse'],
  ['get', '/metrics', 'metrics'],
];

describe('GET /api/v1/openapi.json', () => {
  let api: TestApi;
  let document: Json;

  beforeAll(async () => {
    api = await startTestApi(async () => new FakeSyncEngine());
    const refused = await fetch(`${api.baseUrl}/openapi.json?ignored=1`);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'InvalidRequest' });
    const response = await fetch(`${api.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    document = await response.json();
  });

  afterAll(async () => {
    await api.app.close();
  });

  const resolve = (schema: Json): Json =>
    schema?.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema;

  it('is OpenAPI 3 and lists every operation, and only those', () => {
    expect(document.openapi).toMatch(/^3\./);
    const listed = Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => [method, path, (op as Json).operationId]),
    );
    expect(listed.sort()).toEqual([...OPERATIONS].sort());
  });

  it('names every error of API_ERRORS in the envelope schema (the same list as the README table)', () => {
    const names = Object.keys(API_ERRORS);
    expect(document.components.schemas.ErrorName.enum).toEqual(names);
    const envelope = document.components.schemas.ErrorBody;
    expect(envelope.required).toEqual(['success', 'error', 'errorDescription']);
    expect(envelope.properties.error).toEqual({ $ref: '#/components/schemas/ErrorName' });
  });

  it('answers every error name from some operation, under its own status', () => {
    const seen = new Set<string>();
    for (const [method, path, id] of OPERATIONS.filter(([, , id]) => id !== 'metrics')) {
      const responses = document.paths[path][method].responses as Record<string, Json>;
      expect(Object.keys(responses)).toContain('200');
      for (const [status, response] of Object.entries(responses)) {
        if (status === '200') continue;
        const schema = response.content['application/json'].schema;
        expect(schema.allOf[0]).toEqual({ $ref: '#/components/schemas/ErrorBody' });
        const names = schema.allOf[1].properties.error.enum as ApiErrorName[];
        for (const name of names) {
          expect(`${name} ${API_ERRORS[name].httpStatus}`).toBe(`${name} ${status}`);
          seen.add(name);
        }
      }
      expect([...new Set(OPERATION_ERRORS[id as keyof typeof OPERATION_ERRORS])].sort()).toEqual(
        Object.entries(responses)
          .filter(([status]) => status !== '200')
          .flatMap(([, r]) => r.content['application/json'].schema.allOf[1].properties.error.enum)
          .sort(),
      );
    }
    // NotFound answers paths that are not operations (components.responses.NotFound).
    expect(document.components.responses.NotFound).toBeDefined();
    seen.add('NotFound');
    expect([...seen].sort()).toEqual(Object.keys(API_ERRORS).sort());
  });

  it('describes the start body from its DTOs, nested options included', () => {
    const body = document.paths['/api/v1/start'].post.requestBody;
    expect(body.required).toBe(true);
    const start = resolve(body.content['application/json'].schema);
    expect(start.additionalProperties).toBe(false);
    expect(start.required).toEqual(['source', 'destination']);
    expect(start.properties.buildIndexes).toEqual({
      type: 'string',
      enum: ['beforeDataCopy', 'never'],
    });
    expect(start.properties.reversible).toEqual({ type: 'boolean' });
    const include = start.properties.includeNamespaces;
    expect(include).toMatchObject({ type: 'array', minItems: 1 });
    const filter = resolve(include.items);
    expect(filter.required).toEqual(['database']);
    expect(filter.properties.collections).toMatchObject({
      type: 'array',
      items: { type: 'string' },
      'x-validators': expect.arrayContaining(['isCollectionName']),
    });
    expect(resolve(filter.properties.collectionsRegex).required).toEqual(['pattern']);
    const sharding = resolve(start.properties.sharding);
    expect(sharding.required).toEqual(['shardingEntries']);
    const entry = resolve(sharding.properties.shardingEntries.items);
    expect(entry.required).toEqual(['database', 'collection', 'shardCollection']);
    expect(resolve(entry.properties.shardCollection).properties.key.type).toBe('array');
    expect(Object.keys(start.properties)).toEqual(
      expect.arrayContaining(['enableUserWriteBlocking', 'excludeNamespaces', 'sharding']),
    );
    for (const op of ['pause', 'resume', 'commit', 'reverse']) {
      const schema =
        document.paths[`/api/v1/${op}`].post.requestBody.content['application/json'].schema;
      expect(schema).toEqual({ $ref: '#/components/schemas/EmptyBody' });
      expect(document.paths[`/api/v1/${op}`].post.parameters).toEqual([
        expect.objectContaining({ name: 'x-command-id', in: 'header', required: false }),
      ]);
    }
  });

  it('describes the success and progress envelopes', () => {
    const ok = document.paths['/api/v1/pause'].post.responses['200'];
    expect(ok.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/SuccessBody',
    });
    const progress = document.paths['/api/v1/progress'].get;
    expect(resolve(progress.responses['200'].content['application/json'].schema).required).toEqual([
      'success',
      'progress',
    ]);
    expect(progress.parameters).toEqual([
      expect.objectContaining({ name: 'detail', in: 'query', required: false }),
    ]);
    expect(document.components.schemas.Progress.properties.state.enum).toContain('COMMITTED');
  });
});
