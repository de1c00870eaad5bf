import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { MongoClient } from 'mongodb';
import { parseArgs } from '../src/cli';
import { describeEmulatorOnly } from './helpers/real-server';

const ROOT = path.resolve(__dirname, '../../..');

const suite = describeEmulatorOnly("the emulator's CLI");

suite('cli argument parsing: sharded', () => {
  it('parses --topology sharded with shards, mongos and users', () => {
    const opts = parseArgs([
      '--topology',
      'sharded',
      '--shards',
      '3',
      '--mongos=2',
      '--name',
      'c0',
      '--history',
      '50',
      '--user',
      'u:p:root',
    ]);
    expect(opts.topology).toBe('sharded');
    expect(opts.sharded).toEqual({
      name: 'c0',
      shards: 3,
      mongos: 2,
      historySize: 50,
      users: [{ user: 'u', password: 'p', roles: ['root'] }],
    });
    expect(parseArgs(['--topology', 'sharded', '--shards', '1']).sharded).toEqual({
      name: 'sharded',
      shards: 1,
    });
  });

  it('passes --noop-interval-ms to every shard (periodicNoopIntervalSecs)', () => {
    expect(
      parseArgs(['--topology', 'sharded', '--shards', '2', '--noop-interval-ms', '250']).sharded,
    ).toEqual({ name: 'sharded', shards: 2, noopIntervalMs: 250 });
    expect(parseArgs(['--topology', 'replset', '--noop-interval-ms=500']).replSet).toEqual({
      noopIntervalMs: 500,
    });
    expect(() =>
      parseArgs(['--topology', 'sharded', '--shards', '2', '--noop-interval-ms', '0']),
    ).toThrow(/--noop-interval-ms must be between 1 and/);
  });

  it.each([
    [['--topology', 'sharded'], /--shards is required/],
    [['--topology', 'sharded', '--shards', '0'], /between 1 and 64/],
    [['--topology', 'replset', '--shards', '2'], /--shards and --mongos need --topology sharded/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseArgs(argv as string[])).toThrow(message);
  });
});

suite('cli process: sharded', () => {
  let outDir: string;
  let cliPath: string;
  const children: ChildProcess[] = [];

  beforeAll(() => {
    // Compile the CLI's import graph into a scratch directory (the shared dist/ is not touched).
    // It lives under node_modules/.cache so the compiled files still resolve 'bson' and 'mongodb'.
    const cache = path.join(ROOT, 'node_modules/.cache');
    mkdirSync(cache, { recursive: true });
    outDir = mkdtempSync(path.join(cache, 'emulator-cli-'));
    spawnSync(
      process.execPath,
      [
        require.resolve('typescript/bin/tsc'),
        path.join(ROOT, 'libs/mongo-emulator/src/cli.ts'),
        '--outDir',
        outDir,
        '--rootDir',
        ROOT,
        '--module',
        'commonjs',
        '--target',
        'ES2022',
        '--esModuleInterop',
        '--skipLibCheck',
        '--types',
        'node',
        '--noEmitOnError',
        'false',
      ],
      { cwd: ROOT, stdio: 'ignore' },
    );
    cliPath = path.join(outDir, 'libs/mongo-emulator/src/cli.js');
  }, 120_000);

  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(outDir, { recursive: true, force: true });
  });

  function run(args: string[]): {
    child: ChildProcess;
    firstLine: Promise<string>;
    exit: Promise<number | null>;
    stderr: () => string;
  } {
    const child = spawn(process.execPath, [cliPath, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const firstLine = new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        out += d;
        const nl = out.indexOf('\n');
        if (nl >= 0) resolve(out.slice(0, nl));
      });
      child.on('exit', () => reject(new Error(`exited before printing: ${err}`)));
    });
    firstLine.catch(() => undefined);
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, firstLine, exit, stderr: () => err };
  }

  it('prints the mongos uri and the shards, serves the driver on both, and exits 0 on SIGTERM', async () => {
    const proc = run([
      '--topology',
      'sharded',
      '--shards',
      '2',
      '--mongos',
      '2',
      '--name',
      'c0',
      '--user',
      'root:pw:root',
    ]);
    const line = await proc.firstLine;
    const out = JSON.parse(line) as { uri: string; shards: Array<{ _id: string; uri: string }> };
    expect(Object.keys(out)).toEqual(['uri', 'shards']);
    expect(out.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\/$/);
    expect(out.shards.map((s) => s._id)).toEqual(['c0-shard0', 'c0-shard1']);
    out.shards.forEach((s) =>
      expect(s.uri).toMatch(new RegExp(`^mongodb://127\\.0\\.0\\.1:\\d+/\\?replicaSet=${s._id}$`)),
    );
    const viaMongos = new MongoClient(
      out.uri.replace('mongodb://', 'mongodb://root:pw@') + '?authSource=admin',
      { serverSelectionTimeoutMS: 5000 },
    );
    const direct = new MongoClient(
      out.shards[0].uri.replace('mongodb://', 'mongodb://root:pw@') + '&authSource=admin',
      { serverSelectionTimeoutMS: 5000 },
    );
    try {
      const hello = await viaMongos.db('admin').command({ hello: 1 });
      expect(hello.msg).toBe('isdbgrid');
      await viaMongos.db('clidb').collection<{ _id: number }>('c').insertOne({ _id: 1 });
      // The first database's primary is the first shard; the same users exist there.
      expect(await direct.db('clidb').collection('c').findOne()).toEqual({ _id: 1 });
    } finally {
      await viaMongos.close();
      await direct.close();
    }
    proc.child.kill('SIGTERM');
    expect(await proc.exit).toBe(0);
  }, 60_000);
});
