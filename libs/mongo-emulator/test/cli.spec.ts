import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { MongoClient } from 'mongodb';
import { parseArgs, parseUser, UsageError } from '../src/cli';
import { describeEmulatorOnly } from './helpers/real-server';

const ROOT = path.resolve(__dirname, '../../..');

const suite = describeEmulatorOnly("the emulator's CLI");

suite('cli argument parsing', () => {
  it('parses a full command line', () => {
    const opts = parseArgs([
      '--topology',
      'replset',
      '--name',
      'rsX',
      '--port=0',
      '--history',
      '500',
      '--user',
      'a:p:w:d:root,restore',
    ]);
    expect(opts.replSet).toEqual({
      name: 'rsX',
      port: 0,
      historySize: 500,
      users: [{ user: 'a', password: 'p:w:d', roles: ['root', 'restore'] }],
    });
  });

  it.each([
    [[], /--topology is required/],
    [['--topology', 'sharded'], /--shards is required/],
    [['--topology', 'mesh'], /unsupported topology 'mesh'/],
    [['--topology', 'replset', '--port', 'x'], /--port expects an integer/],
    [['--topology', 'replset', '--port', '70000'], /between 0 and 65535/],
    [['--topology', 'replset', '--bogus'], /unknown argument '--bogus'/],
    [['--topology', 'replset', '--name'], /--name requires a value/],
    [['--topology', 'replset', '--user', 'nopass'], /--user expects/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseArgs(argv as string[])).toThrow(UsageError);
    expect(() => parseArgs(argv as string[])).toThrow(message);
  });

  it('rejects unknown roles', () => {
    expect(() => parseUser('u:p:superuser')).toThrow(/unknown role 'superuser'/);
  });
});

suite('cli process', () => {
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

  it('prints the URI, serves the driver, and exits 0 on SIGTERM', async () => {
    const proc = run([
      '--topology',
      'replset',
      '--name',
      'rsCli',
      '--port',
      '0',
      '--user',
      'root:pw:root',
    ]);
    const line = await proc.firstLine;
    const { uri } = JSON.parse(line) as { uri: string };
    expect(uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=rsCli$/);
    const withCreds = uri.replace('mongodb://', 'mongodb://root:pw@') + '&authSource=admin';
    const client = new MongoClient(withCreds, { serverSelectionTimeoutMS: 5000 });
    try {
      await expect(client.db('admin').command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    } finally {
      await client.close();
    }
    proc.child.kill('SIGTERM');
    expect(await proc.exit).toBe(0);
  }, 30_000);

  it('exits 2 with one clear line for bad flags and unknown topologies', async () => {
    for (const args of [
      ['--topology', 'sharded'],
      ['--topology', 'replset', '--port', 'abc'],
    ]) {
      const proc = run(args);
      expect(await proc.exit).toBe(2);
      const lines = proc.stderr().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^emulator: /);
    }
  }, 30_000);
});
