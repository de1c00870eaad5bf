import { MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'configureFailPoint failCommand: a test command, and state shared by every client of a real server',
);

/** configureFailPoint `mode: {activationProbability: p}` (mongod's FailPoint random mode). */
suite('failCommand fail point: activationProbability', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ retryWrites: false, retryReads: false });
  });
  afterEach(() => client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }));
  afterAll(() => cluster.close());

  const admin = () => client.db('admin');
  const configure = (p: unknown) =>
    admin().command({
      configureFailPoint: 'failCommand',
      mode: { activationProbability: p },
      data: { failCommands: ['ping'], errorCode: 2 },
    });
  const pings = async (n: number) => {
    let failed = 0;
    for (let i = 0; i < n; i++) {
      const ok = await admin()
        .command({ ping: 1 })
        .then(
          () => true,
          (e: { code?: number }) => {
            expect(e.code).toBe(2);
            return false;
          },
        );
      if (!ok) failed += 1;
    }
    return failed;
  };

  it('p = 1 always fires, p = 0 never; the count reply is how often it fired', async () => {
    const before = (await configure(1)).count as number;
    expect(await pings(20)).toBe(20);
    await configure(0);
    expect(await pings(20)).toBe(0);
    const off = await admin().command({ configureFailPoint: 'failCommand', mode: 'off' });
    expect(off.count - before).toBe(20);
  });

  it('fires independently with probability p and never exhausts', async () => {
    const before = (await configure(0.3)).count as number;
    const failed = await pings(400);
    // Binomial(400, 0.3): mean 120, sd ≈ 9.2 — this band is > 6 sd wide on each side.
    expect(failed).toBeGreaterThan(60);
    expect(failed).toBeLessThan(180);
    const off = await admin().command({ configureFailPoint: 'failCommand', mode: 'off' });
    expect(off.count - before).toBe(failed);
    // commands not listed in failCommands never fire (nor consume anything)
    await configure(1);
    await expect(admin().command({ buildInfo: 1 })).resolves.toMatchObject({ ok: 1 });
  });

  it('rejects probabilities outside [0, 1] and non-numbers with BadValue', async () => {
    for (const p of [-0.1, 1.5]) {
      await expect(configure(p)).rejects.toMatchObject({
        code: 2,
        message: 'activationProbability must be between 0.0 and 1.0',
      });
    }
    await expect(configure('half')).rejects.toMatchObject({
      code: 2,
      message: "the 'activationProbability' option to 'mode' must be a double between 0 and 1",
    });
  });
});
