/**
 * `npm run test:real` and the README's "Testing against real MongoDB", checked without Docker (no
 * engine runs on this project's machines, nor in CI): every documented command is run in its dry
 * mode and must print the README's block line for line; the script itself runs against
 * stand-ins for `docker` and `npm`; the compose file's "test" profile is parsed and its init
 * script run against a model of the two servers it declares.
 */
import { connectionStringProblem } from '@sync/contracts/connection-string';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { MongoClient } from 'mongodb';
import { parse as parseYaml } from 'yaml';
import { TEST_CLUSTER_VARIABLES } from '../helpers/real-clusters';

const ROOT = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

// ------------------------------------------------------------------------------------------------
// The README section and its two blocks

const readme = read('README.md');
const TITLE = 'Testing against real MongoDB';
const section = ((): string => {
  const start = readme.indexOf(`\n## ${TITLE}\n`);
  if (start < 0) throw new Error(`README.md has no "## ${TITLE}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
})();
const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1].trimEnd());
/** The `npm run test:real` lines, without their comments. */
const commands = (blocks.find((b) => b.includes('npm run test:real')) ?? '')
  .split('\n')
  .map((line) => line.replace(/\s+#.*$/, '').trim())
  .filter((line) => line !== '');
/** What it runs, by hand. */
const manual = blocks.find((b) => b.includes('docker compose --profile test up')) ?? '';
const manualLines = manual.split('\n');

/** The environment of a user who set none of the switch's variables. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of [...Object.values(TEST_CLUSTER_VARIABLES), 'TEST_REAL_DRY_RUN']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

/** Runs a command line as a shell would; npm's own "> script" banner is not the script's output. */
function sh(line: string, env: NodeJS.ProcessEnv): { status: number | null; lines: string[] } {
  const result = spawnSync('bash', ['-c', line], { cwd: ROOT, env, encoding: 'utf8' });
  const lines = result.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('> '));
  return { status: result.status, lines };
}

const uriOf = (variable: string): string => {
  const match = new RegExp(`^${variable}='([^']+)' \\\\$`, 'm').exec(manual);
  if (!match) throw new Error(`the README block sets no ${variable}='...'`);
  return match[1];
};

describe('README "Testing against real MongoDB": the commands print what it says', () => {
  it('documents npm run test:real and its dry mode, and the block of what it runs', () => {
    expect(commands).toEqual(['npm run test:real', 'npm run test:real -- --dry-run']);
    expect(manualLines).toEqual([
      'docker compose --profile test up -d --wait',
      expect.stringMatching(/^SYNC_TEST_SOURCE_URI='mongodb:\/\/[^']+' \\$/),
      expect.stringMatching(/^SYNC_TEST_DESTINATION_URI='mongodb:\/\/[^']+' \\$/),
      'npm test -- --runInBand --forceExit',
      'docker compose --profile test down -v',
    ]);
    expect(JSON.parse(read('package.json')).scripts['test:real']).toBe('bash scripts/test-real.sh');
    for (const variable of Object.values(TEST_CLUSTER_VARIABLES))
      expect(section).toContain(`\`${variable}\``);
  });

  it.each([
    ['npm run test:real', { TEST_REAL_DRY_RUN: '1' }],
    ['npm run test:real -- --dry-run', {}],
  ])('%s (dry) prints exactly the README block and runs nothing', (command, extra) => {
    expect(commands).toContain(command);
    const run = sh(command, cleanEnv(extra));
    expect(run.status).toBe(0);
    expect(run.lines).toEqual(manualLines);
  });

  it('passes the arguments after -- on to jest', () => {
    expect(blocks.join('\n')).toContain('npm run test:real -- test/e2e');
    const run = sh("npm run test:real -- --dry-run test/e2e -t 'two words'", cleanEnv());
    expect(run.lines).toEqual([
      ...manualLines.slice(0, 3),
      'npm test -- --runInBand --forceExit test/e2e -t two\\ words',
      manualLines[4],
    ]);
  });

  it('passes SYNC_TEST_SHARDED_* on from the caller’s shell, by name: their passwords are never printed', () => {
    const sharded = {
      SYNC_TEST_SHARDED_SOURCE_URI: 'mongodb://u:Src-Secret-pw@h1:27017/',
      SYNC_TEST_SHARDED_DESTINATION_URI: 'mongodb://u:Dst-Secret-pw@h2:27017/',
      TEST_REAL_DRY_RUN: '1',
    };
    const run = sh('npm run test:real', cleanEnv(sharded));
    expect(run.lines).toEqual([
      ...manualLines.slice(0, 3),
      'SYNC_TEST_SHARDED_SOURCE_URI="$SYNC_TEST_SHARDED_SOURCE_URI" \\',
      'SYNC_TEST_SHARDED_DESTINATION_URI="$SYNC_TEST_SHARDED_DESTINATION_URI" \\',
      ...manualLines.slice(3),
    ]);
    expect(run.lines.join('\n')).not.toMatch(/Secret-pw/);
    expect(section).toContain('`SYNC_TEST_SHARDED_*` set in your shell are passed on too');
  });
});

// ------------------------------------------------------------------------------------------------
// The script against stand-ins for docker and npm

interface StandInRun {
  status: number | null;
  stdout: string[];
  /** Each stand-in call: its arguments (npm's with the cluster variables it was given). */
  calls: string[];
}

const STAND_IN = `#!/usr/bin/env bash
# Records the call; exits with FAIL_<tool>_<subcommand> (up, down, version, test) when set.
tool=$(basename "$0")
line="$tool $*"
if [ "$tool" = npm ]; then
  for name in SYNC_TEST_SOURCE_URI SYNC_TEST_DESTINATION_URI SYNC_TEST_SHARDED_SOURCE_URI; do
    if [ -n "\${!name:-}" ]; then line="$line $name=\${!name}"; fi
  done
  if [ -n "\${SLOW_NPM:-}" ]; then touch "$STAND_IN_LOG.npm-running"; sleep "$SLOW_NPM"; fi
fi
echo "$line" >> "$STAND_IN_LOG"
sub=""
for arg in "$@"; do
  case "$tool:$arg" in docker:up|docker:down|docker:version|npm:test) sub=$arg; break ;; esac
done
key="FAIL_\${tool}_\${sub}"
exit "\${!key:-0}"
`;

function standIns(): string {
  const dir = mkdtempSync(join(tmpdir(), 'test-real-'));
  for (const tool of ['docker', 'npm']) {
    writeFileSync(join(dir, tool), STAND_IN);
    chmodSync(join(dir, tool), 0o755);
  }
  return dir;
}

function standInEnv(dir: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return cleanEnv({
    PATH: `${dir}:${process.env.PATH}`,
    STAND_IN_LOG: join(dir, 'calls'),
    ...extra,
  });
}

function runScript(extra: Record<string, string> = {}): StandInRun {
  const dir = standIns();
  const result = spawnSync('bash', ['scripts/test-real.sh'], {
    cwd: ROOT,
    env: standInEnv(dir, extra),
    encoding: 'utf8',
  });
  const log = join(dir, 'calls');
  return {
    status: result.status,
    stdout: result.stdout.split('\n').filter((l) => l !== ''),
    calls: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [],
  };
}

describe('scripts/test-real.sh against stand-ins for docker and npm', () => {
  const up = 'docker compose --profile test up -d --wait';
  const down = 'docker compose --profile test down -v';
  const tests = (): string =>
    `npm test -- --runInBand --forceExit SYNC_TEST_SOURCE_URI=${uriOf('SYNC_TEST_SOURCE_URI')} ` +
    `SYNC_TEST_DESTINATION_URI=${uriOf('SYNC_TEST_DESTINATION_URI')}`;

  it('brings the clusters up, runs the tests with the variables set, takes them down; prints each command first', () => {
    const run = runScript();
    expect(run.calls).toEqual(['docker compose version', up, tests(), down]);
    expect(run.stdout).toEqual(manualLines);
    expect(run.status).toBe(0);
  });

  it('takes the clusters down when the tests fail, and exits with the tests’ code', () => {
    const run = runScript({ FAIL_npm_test: '3' });
    expect(run.calls).toEqual(['docker compose version', up, tests(), down]);
    expect(run.status).toBe(3);
  });

  it('takes the clusters down when they do not come up, and runs no test', () => {
    const run = runScript({ FAIL_docker_up: '1' });
    expect(run.calls).toEqual(['docker compose version', up, down]);
    expect(run.status).toBe(1);
  });

  it('takes the clusters down when interrupted during the tests', async () => {
    const dir = standIns();
    const child = spawn('bash', ['scripts/test-real.sh'], {
      cwd: ROOT,
      env: standInEnv(dir, { SLOW_NPM: '2' }),
      stdio: 'ignore',
    });
    // Once the test command runs (the stand-in sleeps before it logs its call).
    const deadline = Date.now() + 20_000;
    while (!existsSync(join(dir, 'calls.npm-running')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const calls = readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
    expect(calls).toEqual(['docker compose version', up, tests(), down]);
    expect(code).toBe(130);
  });

  it('says in one line that Docker is missing, and runs nothing', () => {
    const run = runScript({ FAIL_docker_version: '1' });
    expect(run.calls).toEqual(['docker compose version']);
    expect(run.status).toBe(1);
  });
});

// ------------------------------------------------------------------------------------------------
// The compose file's "test" profile

interface Service {
  image?: string;
  command?: string[];
  entrypoint?: string[];
  profiles?: string[];
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test?: unknown };
}

const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const testServices = Object.fromEntries(
  Object.entries(compose.services).filter(([, s]) => (s.profiles ?? []).includes('test')),
);
const flag = (args: readonly string[], name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? undefined : args[i + 1];
};
const mongods = Object.keys(testServices).filter((n) => testServices[n].command?.[0] === 'mongod');
const initEnv = testServices['test-init']?.environment ?? {};

describe('docker-compose.yml, profile "test" (parsed, no Docker engine)', () => {
  it('declares the keyfile step, the two replica sets, the init step and the ready marker', () => {
    expect(Object.keys(testServices).sort()).toEqual([
      'destination',
      'source',
      'test-init',
      'test-keyfile',
      'test-ready',
    ]);
    expect([...mongods].sort()).toEqual(['destination', 'source']);
    for (const name of Object.keys(testServices)) expect(section).toContain(`\`${name}\``);
  });

  it('points each README connection string at a replica set, its published loopback port and the init user', () => {
    const targets = [
      ['SYNC_TEST_SOURCE_URI', 'source'],
      ['SYNC_TEST_DESTINATION_URI', 'destination'],
    ] as const;
    for (const [variable, service] of targets) {
      const uri = uriOf(variable);
      const url = new URL(uri);
      const args = testServices[service].command!;
      expect([variable, connectionStringProblem(uri)]).toEqual([variable, null]);
      new MongoClient(uri); // the driver accepts every option (it throws on a bad one)
      expect(url.hostname).toBe('127.0.0.1');
      expect(testServices[service].ports).toEqual([`127.0.0.1:${url.port}:${flag(args, 'port')}`]);
      expect(url.searchParams.get('replicaSet')).toBe(flag(args, 'replSet'));
      expect(url.searchParams.get('replicaSet')).toBe(service);
      expect(url.searchParams.get('directConnection')).toBe('true');
      expect([decodeURIComponent(url.username), decodeURIComponent(url.password)]).toEqual([
        initEnv.SYNC_TEST_MONGO_USER,
        initEnv.SYNC_TEST_MONGO_PASSWORD,
      ]);
      expect(section).toContain(`\`${service}\``);
      expect(section).toContain(url.port);
    }
    expect(section).toContain(`user \`${initEnv.SYNC_TEST_MONGO_USER}\` (role \`root\`)`);
  });

  it('turns authentication on with a keyfile made by the one-shot test-keyfile', () => {
    const keyfile = testServices['test-keyfile'];
    expect(keyfile.entrypoint).toEqual(['bash', '/deploy/make-keyfile.sh']);
    expect(keyfile.volumes).toContain('test-keyfile:/keyfile');
    expect(read('deploy/make-keyfile.sh')).toContain('key=/keyfile/key');
    expect(Object.keys(compose.volumes ?? {})).toContain('test-keyfile');
    for (const name of mongods) {
      const service = testServices[name];
      expect(flag(service.command!, 'keyFile')).toBe('/keyfile/key');
      expect(service.volumes).toEqual(['test-keyfile:/keyfile:ro']);
      expect(service.depends_on).toEqual({
        'test-keyfile': { condition: 'service_completed_successfully' },
      });
    }
  });

  it('initiates with the one-shot test-init (not a health check), which up --wait waits for', () => {
    const init = testServices['test-init'];
    expect(init.command).toEqual([
      'mongosh',
      '--nodb',
      '--quiet',
      '/deploy/init-test-replica-sets.js',
    ]);
    expect(init.volumes).toEqual([
      './deploy/init-test-replica-sets.js:/deploy/init-test-replica-sets.js:ro',
      'test-keyfile:/keyfile:ro',
    ]);
    expect(init.depends_on).toEqual({
      source: { condition: 'service_healthy' },
      destination: { condition: 'service_healthy' },
    });
    for (const name of mongods)
      expect(JSON.stringify(testServices[name].healthcheck)).not.toMatch(/initiate|createUser/i);
    // `up --wait` fails on a one-shot service that exited unless a running service depends on
    // its completion: test-ready does on test-init, the servers on test-keyfile.
    const oneShots = ['test-keyfile', 'test-init'];
    for (const oneShot of oneShots) {
      const adopters = Object.keys(testServices).filter(
        (name) =>
          !oneShots.includes(name) &&
          testServices[name].depends_on?.[oneShot]?.condition === 'service_completed_successfully',
      );
      expect([oneShot, adopters.length > 0]).toEqual([oneShot, true]);
    }
    expect(testServices['test-ready'].command).toEqual(['sleep', 'infinity']);
    expect(testServices['test-ready'].depends_on).toEqual({
      'test-init': { condition: 'service_completed_successfully' },
    });
  });
});

// ------------------------------------------------------------------------------------------------
// deploy/init-test-replica-sets.js against a model of the two servers

const KEY = 'c2FtcGxlLWtleWZpbGUtZm9yLXRoZS10ZXN0LXByb2ZpbGU=';

interface FakeServer {
  host: string;
  port: number;
  replSet: string;
  initiated: boolean;
  users: Map<string, { pwd: string; roles: unknown }>;
}

function serverError(message: string, code: number, codeName: string): Error {
  return Object.assign(new Error(message), { code, codeName });
}

function runTestInit(
  env: Record<string, string>,
  servers: FakeServer[],
): { exitCode: number; output: string[]; commands: string[] } {
  const output: string[] = [];
  const commands: string[] = [];
  const quit = new Error('quit');
  let exitCode = 0;
  const handle = (server: FakeServer, command: Record<string, any>): Record<string, unknown> => {
    const name = Object.keys(command)[0];
    commands.push(`${server.host} ${name}`);
    if (name === 'ping') return { ok: 1 };
    if (name === 'hello') {
      return {
        ok: 1,
        isWritablePrimary: server.initiated,
        setName: server.initiated ? server.replSet : undefined,
      };
    }
    if (name === 'replSetInitiate') {
      if (server.initiated) throw serverError('already initialized', 23, 'AlreadyInitialized');
      const config = command.replSetInitiate;
      const members: Array<{ host: string }> = config.members;
      if (config._id !== server.replSet)
        throw serverError(`set name differs from --replSet`, 93, 'InvalidReplicaSetConfig');
      // A member must be this server as it sees itself (inside the container, 127.0.0.1:<--port>).
      if (members.length !== 1 || members[0].host !== `127.0.0.1:${server.port}`)
        throw serverError('no member is this node', 93, 'InvalidReplicaSetConfig');
      server.initiated = true;
      return { ok: 1 };
    }
    if (!server.initiated) throw serverError('not primary', 10107, 'NotWritablePrimary');
    if (name === 'usersInfo') {
      const user = server.users.get(command.usersInfo.user);
      return { ok: 1, users: user ? [{ user: command.usersInfo.user }] : [] };
    }
    if (name === 'createUser' || name === 'updateUser') {
      const exists = server.users.has(command[name]);
      if (exists !== (name === 'updateUser'))
        throw serverError(`${name}: user exists = ${exists}`, 51003, 'UserAlreadyExists');
      server.users.set(command[name], { pwd: command.pwd, roles: command.roles });
      return { ok: 1 };
    }
    throw serverError(`no such command: '${name}'`, 59, 'CommandNotFound');
  };
  const sandbox = {
    connect: (uri: string) => {
      const url = new URL(uri);
      const server = servers.find((s) => s.host === url.host);
      if (!server) throw new Error(`getaddrinfo ENOTFOUND ${url.host}`);
      if (
        url.username !== '__system' ||
        decodeURIComponent(url.password) !== KEY ||
        url.searchParams.get('authSource') !== 'local'
      ) {
        throw serverError('Authentication failed.', 18, 'AuthenticationFailed');
      }
      return { runCommand: (command: Record<string, unknown>) => handle(server, command) };
    },
    sleep: () => undefined,
    print: (...parts: unknown[]) => output.push(parts.map(String).join(' ')),
    quit: (code = 0) => {
      exitCode = code;
      throw quit;
    },
    process: { env },
    require: (module: string) => {
      if (module !== 'fs') throw new Error(`may require only fs, not ${module}`);
      return {
        readFileSync: (path: string) => {
          if (path !== '/keyfile/key') throw new Error(`ENOENT: ${path}`);
          return `${KEY}\n`;
        },
      };
    },
    encodeURIComponent,
    JSON,
  };
  try {
    runInNewContext(read('deploy/init-test-replica-sets.js'), sandbox, {
      filename: 'init-test-replica-sets.js',
    });
  } catch (error) {
    if (error !== quit) throw error;
  }
  return { exitCode, output, commands };
}

describe('deploy/init-test-replica-sets.js (run by test-init, against the servers compose declares)', () => {
  const servers: FakeServer[] = mongods.map((name) => {
    const args = testServices[name].command!;
    const port = Number(flag(args, 'port'));
    return {
      host: `${name}:${port}`,
      port,
      replSet: flag(args, 'replSet')!,
      initiated: false,
      users: new Map(),
    };
  });
  let first: ReturnType<typeof runTestInit>;

  beforeAll(() => {
    first = runTestInit(initEnv, servers);
  });

  it('initiates both replica sets, each member at the address the host reaches it by', () => {
    expect(first.output).toEqual([expect.stringContaining('"init":"done"')]);
    expect(first.exitCode).toBe(0);
    expect(servers.map((s) => [s.replSet, s.initiated])).toEqual(
      mongods.map((name) => [name, true]),
    );
    // The README's ports are the members' own: the driver may be handed that address.
    for (const server of servers) {
      const published = testServices[server.replSet].ports![0].split(':');
      expect(Number(published[1])).toBe(server.port);
    }
  });

  it('creates the user of the connection strings, role root, on both', () => {
    for (const server of servers) {
      expect(server.users.get(initEnv.SYNC_TEST_MONGO_USER)).toEqual({
        pwd: initEnv.SYNC_TEST_MONGO_PASSWORD,
        roles: [{ role: 'root', db: 'admin' }],
      });
    }
  });

  it('changes nothing but the user when run again, and fails in one line without a password', () => {
    const again = runTestInit(initEnv, servers);
    expect(again.exitCode).toBe(0);
    expect(again.commands.filter((c) => c.endsWith('createUser'))).toEqual([]);
    const noPassword = runTestInit({ ...initEnv, SYNC_TEST_MONGO_PASSWORD: '' }, servers);
    expect(noPassword.exitCode).toBe(1);
    expect(noPassword.output).toEqual([
      expect.stringMatching(/^test-init: SYNC_TEST_MONGO_PASSWORD is empty/),
    ]);
  });
});
