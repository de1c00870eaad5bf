import { Binary, Long, type ClientSession, MongoClient } from 'mongodb';
import { randomUUID } from 'node:crypto';
import type { CommandDefinition } from '../src';
import { TestCluster } from './helpers/cluster';
import { emulatorOnly } from './helpers/real-server';

/**
 * Retryable writes are checked with a test-only command registered on the node: it
 * counts how often it really executed, so a deduplicated retry is visible.
 */
describe('sessions and retryable writes', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let applied = 0;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    const probe: CommandDefinition = {
      name: 'testRetryableProbe',
      access: 'write',
      userWrite: true,
      retryableWrite: true,
      run: () => {
        applied += 1;
        return { n: applied, ok: 1 };
      },
    };
    // The registry is private API; tests reach in to add a probe command (emulator only).
    if (!cluster.real)
      (
        cluster.rs.node.commands as unknown as { byName: Map<string, CommandDefinition> }
      ).byName.set(probe.name, probe);
    client = await cluster.connect();
  });
  afterAll(() => cluster.close());

  const withProbe = emulatorOnly('counts executions with a probe command added to the node');
  const withProbeAndFailPoint = emulatorOnly(
    'a probe command added to the node, and configureFailPoint (test commands)',
  );

  const lsid = () => ({ id: new Binary(Buffer.from(randomUUID().replace(/-/g, ''), 'hex'), 4) });
  /**
   * The driver replaces a command's `lsid` with its own session's, so each scenario uses
   * an explicit session (one lsid) and sends txnNumber itself.
   */
  const send = (session: ClientSession, txnNumber?: number, db = 'app') =>
    client.db(db).command(
      {
        testRetryableProbe: 1,
        ...(txnNumber !== undefined ? { txnNumber: Long.fromNumber(txnNumber) } : {}),
      },
      { session },
    );

  withProbe('answers a retry of the same (lsid, txnNumber) without applying it again', async () => {
    const session = client.startSession();
    const first = await send(session, 1);
    const retry = await send(session, 1);
    expect(retry.n).toBe(first.n);
    expect(applied).toBe(1);
    const next = await send(session, 2);
    expect(next.n).toBe(2);
    await expect(send(session, 1)).rejects.toMatchObject({
      code: 225,
      codeName: 'TransactionTooOld',
    });
    // Without txnNumber every call applies.
    await send(session);
    expect(applied).toBe(3);
    // Another session has its own table.
    const other = client.startSession();
    await send(other, 1);
    expect(applied).toBe(4);
    await session.endSession();
    await other.endSession();
  });

  withProbe('checks the txnNumber type', async () => {
    await expect(
      client.db('app').command({ testRetryableProbe: 1, txnNumber: 1 }),
    ).rejects.toMatchObject({
      code: 14,
      message:
        "BSON field 'OperationSessionInfo.txnNumber' is the wrong type 'int', expected type 'long'",
    });
  });

  withProbeAndFailPoint(
    'a failCommand error before execution leaves the write retryable, labelled RetryableWriteError',
    async () => {
      const admin = client.db('admin');
      await admin.command({
        configureFailPoint: 'failCommand',
        mode: { times: 1 },
        data: { failCommands: ['testRetryableProbe'], errorCode: 262 },
      });
      const session = client.startSession();
      const before = applied;
      const err = await send(session, 5).catch((e) => e);
      expect(err.code).toBe(262);
      expect(err.errorLabels).toContain('RetryableWriteError');
      expect(applied).toBe(before);
      await send(session, 5);
      expect(applied).toBe(before + 1);
      await session.endSession();
    },
  );

  withProbeAndFailPoint('writeConcernError runs the command and appends the error', async () => {
    const admin = client.db('admin');
    await admin.command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: {
        failCommands: ['testRetryableProbe'],
        writeConcernError: { code: 64, errmsg: 'waiting for replication timed out' },
      },
    });
    const before = applied;
    const session = client.startSession();
    // The driver pools server sessions, so this lsid may carry earlier txnNumbers: use a high one.
    const reply = await send(session, 1000).catch((e) => e);
    await session.endSession();
    expect(reply).toMatchObject({ writeConcernError: { code: 64 } });
    expect(applied).toBe(before + 1);
  });

  it('endSessions and killSessions succeed and startSession returns an id', async () => {
    const admin = client.db('admin');
    const started = await admin.command({ startSession: 1 });
    expect(started.timeoutMinutes).toBe(30);
    await expect(admin.command({ endSessions: [started.id] })).resolves.toMatchObject({ ok: 1 });
    await expect(admin.command({ killSessions: [lsid()] })).resolves.toMatchObject({ ok: 1 });
    await expect(admin.command({ refreshSessions: [lsid()] })).resolves.toMatchObject({ ok: 1 });
  });

  emulatorOnly("kills every session of the user, other specs' too on a shared server")(
    'killSessions with an empty list succeeds',
    async () => {
      await expect(client.db('admin').command({ killSessions: [] })).resolves.toMatchObject({
        ok: 1,
      });
    },
  );
});
