import { MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'configureFailPoint failCommand: a test command, and state shared by every client of a real server',
);

suite('failCommand fail point', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    // Shutdown codes (91) carry no topologyVersion, so the driver marks the server Unknown until
    // its next heartbeat, exactly as with mongod (NotPrimary codes carry one and do not): a
    // short heartbeat keeps those tests quick.
    client = await cluster.connect({
      retryWrites: false,
      retryReads: false,
      heartbeatFrequencyMS: 500,
    });
  });
  afterEach(() => client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }));
  afterAll(() => cluster.close());

  const admin = () => client.db('admin');

  it('fails listed commands with the given code and labels', async () => {
    const set = await admin().command({
      configureFailPoint: 'failCommand',
      mode: 'alwaysOn',
      data: { failCommands: ['buildInfo'], errorCode: 91, errorLabels: ['MyLabel'] },
    });
    expect(set).toMatchObject({ count: 0, ok: 1 });
    const err = await admin()
      .command({ buildInfo: 1 })
      .catch((e) => e);
    expect(err).toMatchObject({
      code: 91,
      codeName: 'ShutdownInProgress',
      message: "Failing command via 'failCommand' failpoint",
    });
    expect(err.errorLabels).toContain('MyLabel'); // the driver adds ResetPool for state-change codes
    expect(err.errorLabels).not.toContain('RetryableWriteError');
    await expect(admin().command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    const off = await admin().command({ configureFailPoint: 'failCommand', mode: 'off' });
    expect(off.count).toBe(1);
  });

  it('honours times and skip', async () => {
    await admin().command({
      configureFailPoint: 'failCommand',
      mode: { times: 2 },
      data: { failCommands: ['ping'], errorCode: 2 },
    });
    await expect(admin().command({ ping: 1 })).rejects.toMatchObject({ code: 2 });
    await expect(admin().command({ ping: 1 })).rejects.toMatchObject({ code: 2 });
    await expect(admin().command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });

    await admin().command({
      configureFailPoint: 'failCommand',
      mode: { skip: 1 },
      data: { failCommands: ['ping'], errorCode: 2 },
    });
    await expect(admin().command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    await expect(admin().command({ ping: 1 })).rejects.toMatchObject({ code: 2 });
  });

  it('closes the connection', async () => {
    await admin().command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['ping'], closeConnection: true },
    });
    const err = await admin()
      .command({ ping: 1 })
      .catch((e) => e);
    expect(err.name).toBe('MongoNetworkError');
    await expect(admin().command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
  });

  it('blocks the connection', async () => {
    await admin().command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['ping'], blockConnection: true, blockTimeMS: 300 },
    });
    const started = Date.now();
    await admin().command({ ping: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
  });

  it('filters by appName and leaves hello alone unless listed', async () => {
    const other = await cluster.connect({ appName: 'victim' });
    await admin().command({
      configureFailPoint: 'failCommand',
      mode: 'alwaysOn',
      data: { failCommands: ['ping'], errorCode: 2, appName: 'victim' },
    });
    await expect(admin().command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    await expect(other.db('admin').command({ ping: 1 })).rejects.toMatchObject({ code: 2 });
    await expect(other.db('admin').command({ hello: 1 })).resolves.toMatchObject({ ok: 1 });
  });

  it('labels retryable errors of retryable writes RetryableWriteError', async () => {
    await admin().command({
      configureFailPoint: 'failCommand',
      mode: 'alwaysOn',
      data: { failCommands: ['appendOplogNote', 'ping'], errorCode: 262 },
    });
    // ping is not a retryable write: no label.
    const err = await admin()
      .command({ ping: 1 })
      .catch((e) => e);
    expect(err.code).toBe(262);
    expect(err.errorLabels ?? []).not.toContain('RetryableWriteError');
  });

  it('rejects bad modes', async () => {
    await expect(
      admin().command({ configureFailPoint: 'failCommand', mode: 'sometimes' }),
    ).rejects.toMatchObject({ code: 2 });
  });
});
