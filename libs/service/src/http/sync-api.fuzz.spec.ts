import { API_ERRORS, type SyncOperation, type SyncState } from '@sync/contracts';
import fc from 'fast-check';
import { FakeSyncEngine } from '../test/fake-sync-engine';
import { startTestApi, type TestApi } from '../test/start-test-api';

/**
 * Property-based fuzzing of the real HTTP stack (middleware, validation, filter) over the fake
 * engine (issue 13 §3): every generated request gets the one success or a named 4xx, never a
 * 5xx or a crash, and the engine's state moves only by an accepted command.
 *
 * FUZZ_RUNS sets the cases per endpoint (default 1000, about 20 s in all); a long run:
 *   FUZZ_RUNS=20000 npx jest libs/service/src/http/sync-api.fuzz.spec.ts
 * FUZZ_SEED replays a failing run (fast-check prints the seed and path).
 */
const RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 1000) || 1000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const CONCURRENT = 10;

type Command = SyncOperation & ('start' | 'pause' | 'resume' | 'commit' | 'reverse');
const COMMANDS: Command[] = ['start', 'pause', 'resume', 'commit', 'reverse'];
/** The state each command is allowed in, and the state it leads to (FakeSyncEngine's rules). */
const TRANSITIONS: Record<Command, [SyncState, SyncState]> = {
  start: ['IDLE', 'RUNNING'],
  pause: ['RUNNING', 'PAUSED'],
  resume: ['PAUSED', 'RUNNING'],
  commit: ['RUNNING', 'COMMITTED'],
  reverse: ['COMMITTED', 'RUNNING'],
};
const STATES: SyncState[] = ['IDLE', 'RUNNING', 'PAUSED', 'COMMITTED'];

// ---- generated JSON text (built as text: duplicate and __proto__ keys survive) ---------------

const START_KEYS = [
  'source',
  'destination',
  'reversible',
  'enableUserWriteBlocking',
  'buildIndexes',
  'includeNamespaces',
  'excludeNamespaces',
  'sharding',
  'createSupportingIndexes',
  'database',
  'collections',
  'shardCollection',
  'key',
];
const EVIL_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', ''];
const key = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...START_KEYS) },
  { weight: 2, arbitrary: fc.constantFrom(...EVIL_KEYS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
);
const leafText = fc.oneof(
  fc
    .constantFrom(
      'cluster0',
      'cluster1',
      'cluster2',
      'true',
      'false',
      '1',
      '0',
      'null',
      'beforeDataCopy',
      'afterDataCopy',
      'never',
      '',
      'ｃｌｕｓｔｅｒ０',
      'cluster0\u0000',
    )
    .map((text) => JSON.stringify(text)),
  fc.constantFrom(
    'true',
    'false',
    'null',
    '0',
    '-0',
    '1',
    '1e309',
    '-1e309',
    '1.5',
    '1E2',
    '123456789012345678901234567890',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }).map((text) => JSON.stringify(text)),
  fc.double().map((n) => JSON.stringify(n)),
  fc.integer().map(String),
);
const { value: jsonText } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ maxDepth: 4, depthIdentifier: 'json' }, leafText, tie('array'), tie('object')),
  array: fc
    .array(tie('value'), { maxLength: 5, depthIdentifier: 'json' })
    .map((items) => `[${items.join(',')}]`),
  object: fc
    .array(fc.tuple(key, tie('value')), { maxLength: 6, depthIdentifier: 'json' })
    .map((pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
}));
const objectText = fc
  .array(fc.tuple(key, jsonText), { maxLength: 6 })
  .map((pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
/** Mostly valid start bodies, so accepted starts happen too. */
const startLike = fc
  .record(
    {
      source: fc.constantFrom('cluster0', 'cluster1', 'cluster2'),
      destination: fc.constantFrom('cluster0', 'cluster1'),
      reversible: fc.oneof(fc.boolean(), fc.constant('true')),
      enableUserWriteBlocking: fc.oneof(fc.boolean(), fc.constant(1)),
      buildIndexes: fc.constantFrom('beforeDataCopy', 'afterDataCopy', 'never', 'sometimes'),
    },
    { requiredKeys: ['source', 'destination'] },
  )
  .map((body) => JSON.stringify(body));
const deep = fc
  .integer({ min: 1, max: 20_000 })
  .chain((depth) =>
    fc.constantFrom(
      '['.repeat(depth) + ']'.repeat(depth),
      '{"source":'.repeat(depth) + '"cluster0"' + '}'.repeat(depth),
      `{"includeNamespaces":${'['.repeat(depth)}${']'.repeat(depth)},"source":"cluster0","destination":"cluster1"}`,
      `{"source":"cluster0","destination":"cluster1","sharding":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`,
    ),
  );
const huge = fc.oneof(
  fc
    .integer({ min: 1_000, max: 120_000 })
    .map(
      (n) =>
        `{"source":"cluster0","destination":"cluster1","includeNamespaces":[${Array(n).fill('{"database":"d"}').join(',')}]}`,
    ),
  fc
    .integer({ min: 1_000, max: 1_200_000 })
    .map((n) => `{"source":"${'x'.repeat(n)}","destination":"cluster1"}`),
  fc.integer({ min: 1_000, max: 300_000 }).map((n) => `[${Array(n).fill('0').join(',')}]`),
);
/** Text that is not JSON, and bytes that are not UTF-8. */
const broken = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.uint8Array({ minLength: 1, maxLength: 60 }),
  objectText.map((text) => text.slice(0, Math.max(1, text.length - 1))),
);
const body = fc.oneof(
  { weight: 6, arbitrary: objectText },
  { weight: 3, arbitrary: startLike },
  { weight: 2, arbitrary: jsonText },
  { weight: 2, arbitrary: fc.constant('{}') },
  { weight: 2, arbitrary: broken },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: huge },
  { weight: 1, arbitrary: fc.constant('') },
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/problem+json',
  'text/plain',
  'application/json; charset=latin1',
  'multipart/form-data; boundary=x',
  undefined,
);
const printable = fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code));
const commandId = fc.option(
  fc.oneof(
    fc.string({ unit: printable, minLength: 1, maxLength: 20 }),
    fc.string({ unit: printable, minLength: 120, maxLength: 200 }),
  ),
  { freq: 3 },
);
const query = fc.oneof(
  fc.constantFrom(
    '',
    '?detail=namespaces',
    '?detail=NAMESPACES',
    '?detail=namespaces&detail=namespaces',
    '?detail[]=namespaces',
    '?detail[__proto__][polluted]=1',
    '?__proto__[polluted]=1&detail=namespaces',
    '?constructor[prototype][polluted]=1',
    '?detail=%E0%A4%A',
    '?detail=%00',
    '?detail',
    '?detail=',
    `?detail=${'n'.repeat(10_000)}`,
  ),
  fc
    .tuple(
      fc.constantFrom('detail', '__proto__', 'constructor', 'x', 'detail[a]', 'detail.x'),
      fc.string({ unit: 'binary', maxLength: 30 }),
    )
    .map(([name, value]) => `?${encodeURIComponent(name)}=${encodeURIComponent(value)}`),
);

// ---- the checks -----------------------------------------------------------------------------

interface Answer {
  status: number;
  body: { success?: boolean; error?: string; errorDescription?: string };
}

/** The one success, or a named error whose status is the table's (4xx here). */
function expectNamed(answer: Answer): void {
  if (answer.status === 200) {
    expect(answer.body.success).toBe(true);
    return;
  }
  const name = answer.body.error as keyof typeof API_ERRORS;
  expect([answer.status, answer.body.success, name in API_ERRORS]).toEqual([
    answer.status,
    false,
    true,
  ]);
  expect(API_ERRORS[name].httpStatus).toBe(answer.status);
  expect(answer.status).toBeGreaterThanOrEqual(400);
  expect(answer.status).toBeLessThan(500);
  expect(typeof answer.body.errorDescription).toBe('string');
}

describe('API fuzzing (fast-check)', () => {
  let engine: FakeSyncEngine;
  let api: TestApi;
  let cases = 0;

  beforeAll(async () => {
    engine = new FakeSyncEngine();
    api = await startTestApi(async () => engine);
  });

  afterAll(async () => {
    await api.app.close();
    console.log(`API fuzzing: ${cases} requests tried (FUZZ_RUNS=${RUNS} per endpoint), no 5xx`);
    expect(api.fatal).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  const reset = (state: SyncState) => {
    engine.state = state;
    engine.canCommit = state === 'RUNNING';
    engine.started = [];
    engine.commandIds = [];
    engine.failNext = null;
  };

  async function send(
    path: string,
    payload: string | Uint8Array,
    type: string | undefined,
    id: string | null,
  ): Promise<Answer> {
    cases += 1;
    const headers: Record<string, string> = {};
    if (type !== undefined) headers['content-type'] = type;
    if (id !== null) headers['x-command-id'] = id;
    const response = await fetch(`${api.baseUrl}/${path}`, {
      method: 'POST',
      headers,
      body: payload,
    });
    const text = await response.text();
    let parsed: Answer['body'];
    try {
      parsed = JSON.parse(text) as Answer['body'];
    } catch {
      throw new Error(
        `POST /${path} answered ${response.status} with a non-JSON body: ${text.slice(0, 200)}`,
      );
    }
    return { status: response.status, body: parsed };
  }

  it.each(COMMANDS)(
    `POST /%s: ${RUNS} generated requests get the success or a named 4xx`,
    async (command) => {
      const [allowedIn, next] = TRANSITIONS[command];
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...STATES, allowedIn, allowedIn),
          body,
          contentType,
          commandId,
          async (initial, payload, type, id) => {
            reset(initial);
            const answer = await send(command, payload, type, id);
            expectNamed(answer);
            if (answer.status === 200) {
              expect(initial).toBe(allowedIn);
              expect(engine.state).toBe(next);
              expect(engine.commandIds).toHaveLength(1);
              expect(engine.started).toHaveLength(command === 'start' ? 1 : 0);
            } else {
              expect(engine.state).toBe(initial);
              expect(engine.started).toEqual([]);
            }
          },
        ),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
    },
    120_000,
  );

  it(`GET /progress: ${RUNS} generated queries get 200 or InvalidRequest`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...STATES), query, async (initial, search) => {
        reset(initial);
        cases += 1;
        const response = await fetch(`${api.baseUrl}/progress${search}`);
        const answer = { status: response.status, body: (await response.json()) as Answer['body'] };
        expectNamed(answer);
        expect([200, 400]).toContain(answer.status);
        if (answer.status === 400) expect(answer.body.error).toBe('InvalidRequest');
        expect(engine.state).toBe(initial);
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  }, 120_000);

  it(`${CONCURRENT} identical starts at once: one succeeds, the others are NotIdle`, async () => {
    for (let round = 0; round < 20; round += 1) {
      reset('IDLE');
      const start = JSON.stringify({ source: 'cluster0', destination: 'cluster1' });
      const answers = await Promise.all(
        Array.from({ length: CONCURRENT }, () => send('start', start, 'application/json', null)),
      );
      answers.forEach(expectNamed);
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      expect(answers.filter((a) => a.body.error === 'NotIdle')).toHaveLength(CONCURRENT - 1);
      expect([engine.state, engine.started.length]).toEqual(['RUNNING', 1]);
    }
  });

  it(`${CONCURRENT} different starts at once: only the accepted one reaches the engine`, async () => {
    for (let round = 0; round < 20; round += 1) {
      reset('IDLE');
      const bodies = Array.from({ length: CONCURRENT }, (_, i) => ({
        source: i % 2 ? 'cluster0' : 'cluster1',
        destination: i % 2 ? 'cluster1' : 'cluster0',
        enableUserWriteBlocking: i % 3 === 0,
      }));
      const answers = await Promise.all(
        bodies.map((b, index) =>
          send('start', JSON.stringify(b), 'application/json', `s-${index}`),
        ),
      );
      answers.forEach(expectNamed);
      const accepted = answers.flatMap((a, index) => (a.status === 200 ? [bodies[index]] : []));
      expect(accepted).toHaveLength(1);
      expect(engine.started).toHaveLength(1);
      expect(engine.started[0]).toMatchObject(accepted[0]);
    }
  });

  it(`${CONCURRENT} conflicting commands at once (pause/commit/start): exactly one applies`, async () => {
    const mix: Command[] = [
      'pause',
      'commit',
      'pause',
      'commit',
      'pause',
      'commit',
      'pause',
      'commit',
      'start',
      'start',
    ];
    for (let round = 0; round < 20; round += 1) {
      reset('RUNNING');
      const order = [...mix].sort(() => Math.random() - 0.5);
      const answers = await Promise.all(
        order.map((command) =>
          send(
            command,
            command === 'start' ? '{"source":"cluster0","destination":"cluster1"}' : '{}',
            'application/json',
            null,
          ),
        ),
      );
      answers.forEach(expectNamed);
      const accepted = order.filter((_, index) => answers[index].status === 200);
      expect(accepted).toHaveLength(1);
      expect(engine.state).toBe(TRANSITIONS[accepted[0]][1]);
      expect(engine.started).toEqual([]);
      for (const answer of answers.filter((a) => a.status !== 200)) {
        expect(['InvalidState', 'NotIdle', 'CommitNotReady']).toContain(answer.body.error);
      }
    }
  });
});
