import { MongoServerError } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly('users created at launch');

suite('authentication and authorization', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start({
      users: [
        { user: 'admin', password: 'secret', roles: ['root'] },
        { user: 'reader', password: 'r3ad', roles: ['readAnyDatabase'] },
        { user: 'monitor', password: 'm0n', roles: ['clusterMonitor'] },
        { user: 'sp ecial', password: 'pä:ss,wörd', roles: ['readWriteAnyDatabase'] },
      ],
    });
  });
  afterAll(() => cluster.close());

  it.each(['SCRAM-SHA-256', 'SCRAM-SHA-1'] as const)(
    'authenticates with %s',
    async (authMechanism) => {
      const client = await cluster.connect({ user: 'admin', password: 'secret', authMechanism });
      const status = await client.db('admin').command({ connectionStatus: 1 });
      expect(status.authInfo.authenticatedUsers).toEqual([{ user: 'admin', db: 'admin' }]);
      expect(status.authInfo.authenticatedUserRoles).toEqual([{ role: 'root', db: 'admin' }]);
    },
  );

  it('negotiates the mechanism and authenticates speculatively by default', async () => {
    const client = await cluster.connect({ user: 'sp ecial', password: 'pä:ss,wörd' });
    await expect(client.db('admin').command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    const hello = await client
      .db('admin')
      .command({ hello: 1, saslSupportedMechs: 'admin.sp ecial' });
    expect(hello.saslSupportedMechs).toEqual(['SCRAM-SHA-1', 'SCRAM-SHA-256']);
  });

  it('rejects a wrong password with AuthenticationFailed', async () => {
    for (const authMechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-1'] as const) {
      const client = cluster.client({ user: 'admin', password: 'wrong', authMechanism });
      const err = await client.connect().catch((e) => e);
      expect(err).toBeInstanceOf(MongoServerError);
      expect(err).toMatchObject({
        code: 18,
        codeName: 'AuthenticationFailed',
        message: 'Authentication failed.',
      });
    }
    const unknown = cluster.client({ user: 'nobody', password: 'x' });
    await expect(unknown.connect()).rejects.toMatchObject({ code: 18 });
  });

  it('lets unauthenticated clients run only the handshake commands', async () => {
    const client = await cluster.connect();
    const admin = client.db('admin');
    await expect(admin.command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    await expect(admin.command({ buildInfo: 1 })).resolves.toMatchObject({ ok: 1 });
    await expect(admin.command({ hello: 1 })).resolves.toMatchObject({ ok: 1 });
    await expect(admin.command({ serverStatus: 1 })).rejects.toMatchObject({
      code: 13,
      codeName: 'Unauthorized',
      message: 'Command serverStatus requires authentication',
    });
    await expect(admin.command({ replSetGetStatus: 1 })).rejects.toMatchObject({ code: 13 });
  });

  it('authorizes by built-in role', async () => {
    const monitor = await cluster.connect({ user: 'monitor', password: 'm0n' });
    await expect(monitor.db('admin').command({ serverStatus: 1 })).resolves.toMatchObject({
      ok: 1,
    });
    await expect(
      monitor.db('admin').command({ setUserWriteBlockMode: 1, global: true }),
    ).rejects.toMatchObject({
      code: 13,
      message: expect.stringContaining('not authorized on admin to execute command'),
    });
    const reader = await cluster.connect({ user: 'reader', password: 'r3ad' });
    await expect(reader.db('admin').command({ serverStatus: 1 })).rejects.toMatchObject({
      code: 13,
    });
    await expect(reader.db('admin').command({ replSetGetStatus: 1 })).rejects.toMatchObject({
      code: 13,
    });
  });

  it('logout forgets the user', async () => {
    const client = await cluster.connect({ user: 'admin', password: 'secret', maxPoolSize: 1 });
    const admin = client.db('admin');
    await admin.command({ logout: 1 });
    const status = await admin.command({ connectionStatus: 1 });
    expect(status.authInfo.authenticatedUsers).toEqual([]);
  });
});
