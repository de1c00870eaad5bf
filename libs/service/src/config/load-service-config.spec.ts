import { loadServiceConfig, type ReadTextFile } from './load-service-config';
import { parseLaunchArgs } from './parse-launch-args';
import { LaunchConfigError } from './launch-config.error';

const URI0 = 'mongodb://alice:s3cretpw@h0:27017/?replicaSet=rs0';
const URI1 = 'mongodb+srv://bob:0therpw@cluster1.example.net/';
const TOKEN = 'T0ken-for-the-api-0123456789';
const noFile: ReadTextFile = () => {
  throw Object.assign(new Error('missing'), { code: 'ENOENT' });
};

function load(argv: string[], readFile: ReadTextFile = noFile) {
  const parsed = parseLaunchArgs(argv);
  if (parsed.help) throw new Error('unexpected help');
  return loadServiceConfig(parsed.flags, readFile);
}

function failure(argv: string[], readFile: ReadTextFile = noFile): string {
  try {
    load(argv, readFile);
  } catch (error) {
    expect(error).toBeInstanceOf(LaunchConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain('s3cretpw');
    expect(message).not.toContain('0therpw');
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error('expected a config error');
}

describe('worker options', () => {
  it('reads --standby (alone or =true/false) and the claim timing, from flags or environment', () => {
    const base = ['--cluster0', URI0, '--cluster1', URI1, '--id', 'shardA'];
    expect(load([...base, '--standby'])).toMatchObject({ id: 'shardA', standby: true });
    expect(load([...base, '--standby=false'])).not.toHaveProperty('standby');
    expect(load([...base, '--claimRenewMs', '500', '--claimStaleMs=3000'])).toMatchObject({
      claimRenewMs: 500,
      claimStaleMs: 3000,
    });
    const parsed = parseLaunchArgs(base);
    if (parsed.help) throw new Error('unexpected help');
    expect(
      loadServiceConfig(
        parsed.flags,
        noFile,
        {},
        {
          SYNC_STANDBY: 'true',
          SYNC_CLAIM_STALE_MS: '6000',
        },
      ),
    ).toMatchObject({ standby: true, claimStaleMs: 6000 });
  });

  it('refuses --standby without --id, and a renewal period not well inside the stale limit', () => {
    expect(failure(['--cluster0', URI0, '--cluster1', URI1, '--standby'])).toMatch(
      /--standby needs --id/,
    );
    expect(failure(['--cluster0', URI0, '--cluster1', URI1, '--claimRenewMs', '5000'])).toMatch(
      /--claimRenewMs \(5000\) must be shorter than 4\/5 of --claimStaleMs \(6000\)/,
    );
    expect(failure(['--cluster0', URI0, '--cluster1', URI1, '--claimStaleMs', '10'])).toMatch(
      /--claimStaleMs must be an integer from 500/,
    );
  });

  it('applies the defaults', () => {
    expect(load(['--cluster0', URI0, '--cluster1', URI1])).toEqual({
      clusters: { cluster0: URI0, cluster1: URI1 },
      port: 27182,
      host: '127.0.0.1',
      verbosity: 'INFO',
      heapGrowthPercent: 50,
    });
  });

  it('reads the heap growth from a flag or SYNC_HEAP_GROWTH_PERCENT, and refuses a bad one', () => {
    const base = ['--cluster0', URI0, '--cluster1', URI1];
    expect(load([...base, '--heapGrowthPercent', '0']).heapGrowthPercent).toBe(0);
    const parsed = parseLaunchArgs(base);
    if (parsed.help) throw new Error('unexpected help');
    expect(
      loadServiceConfig(parsed.flags, noFile, {}, { SYNC_HEAP_GROWTH_PERCENT: '120' })
        .heapGrowthPercent,
    ).toBe(120);
    expect(failure([...base, '--heapGrowthPercent', '400'])).toMatch(
      /--heapGrowthPercent must be an integer from 0 to 300/,
    );
    expect(failure([...base, '--heapGrowthPercent', '1.5'])).toMatch(
      /--heapGrowthPercent must be an integer from 0 to 300/,
    );
  });

  it('reads every option, in both flag forms', () => {
    const config = load([
      `--cluster0=${URI0}`,
      '--cluster1',
      URI1,
      '--port',
      '0',
      '--host=0.0.0.0',
      '--id',
      'shard-01',
      '--logPath',
      '/tmp/w.log',
      '--verbosity',
      'debug',
      '--apiToken',
      TOKEN,
      '--heapGrowthPercent=25',
    ]);
    expect(config).toEqual({
      clusters: { cluster0: URI0, cluster1: URI1 },
      port: 0,
      host: '0.0.0.0',
      id: 'shard-01',
      logPath: '/tmp/w.log',
      verbosity: 'DEBUG',
      apiToken: TOKEN,
      heapGrowthPercent: 25,
    });
  });

  it('reads YAML and lets flags override it', () => {
    const yaml = `cluster0: "${URI0}"\ncluster1: "${URI1}"\nport: 9000\nverbosity: WARN\n`;
    const config = load(['--config', 'w.yaml', '--port', '9001'], (path) => {
      expect(path).toBe('w.yaml');
      return yaml;
    });
    expect(config).toMatchObject({
      port: 9001,
      verbosity: 'WARN',
      clusters: { cluster0: URI0, cluster1: URI1 },
    });
  });

  it('recognises --help', () => {
    expect(parseLaunchArgs(['--cluster0', URI0, '--help'])).toEqual({ help: true });
  });

  it.each<[string, string[], string]>([
    ['missing cluster0', ['--cluster1', URI1], '--cluster0 is required'],
    ['missing cluster1', ['--cluster0', URI0], '--cluster1 is required'],
    [
      'non-mongodb URI',
      ['--cluster0', 'http://alice:s3cretpw@h', '--cluster1', URI1],
      '--cluster0 is not a valid connection string: must start with mongodb://',
    ],
    [
      'unescaped password',
      ['--cluster0', 'mongodb://alice:s3cretpw/x@h', '--cluster1', URI1],
      'unescaped characters',
    ],
    [
      'srv with a port',
      ['--cluster0', URI0, '--cluster1', 'mongodb+srv://bob:0therpw@h:27017'],
      '--cluster1 is not a valid connection string: must not give a port',
    ],
    [
      'port not a number',
      ['--cluster0', URI0, '--cluster1', URI1, '--port', '80a'],
      '--port must be an integer from 0 to 65535',
    ],
    [
      'port too large',
      ['--cluster0', URI0, '--cluster1', URI1, '--port', '65536'],
      '--port must be an integer',
    ],
    [
      'negative port',
      ['--cluster0', URI0, '--cluster1', URI1, '--port=-1'],
      '--port must be an integer',
    ],
    [
      'bad verbosity',
      ['--cluster0', URI0, '--cluster1', URI1, '--verbosity', 'LOUD'],
      '--verbosity must be one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC',
    ],
    [
      'bad host',
      ['--cluster0', URI0, '--cluster1', URI1, '--host', 'a b'],
      '--host must be a host name or an IP address',
    ],
    [
      'bad id',
      ['--cluster0', URI0, '--cluster1', URI1, '--id', 'a/b'],
      '--id must be 1-64 letters',
    ],
    [
      'empty logPath',
      ['--cluster0', URI0, '--cluster1', URI1, '--logPath='],
      '--logPath must be a file path',
    ],
    ['unknown flag', ['--cluster0', URI0, '--cluster2', URI1], 'unknown option --cluster2'],
    ['flag without value', ['--cluster0', URI0, '--cluster1'], '--cluster1 needs a value'],
    ['flag followed by a flag', ['--cluster0', '--cluster1', URI1], '--cluster0 needs a value'],
    [
      'repeated flag',
      ['--cluster0', URI0, '--cluster0', URI0],
      '--cluster0 is given more than once',
    ],
    ['positional URI', [URI0], 'unexpected argument at position 1'],
    [
      'unreadable config',
      ['--config', 'missing.yaml'],
      'cannot read --config file missing.yaml (ENOENT)',
    ],
  ])('rejects %s with one clear line', (_name, argv, text) => {
    expect(failure(argv)).toContain(text);
  });

  it.each<[string, string, string]>([
    ['invalid YAML', `cluster0: "${URI0}\n  - : [`, 'is not valid YAML'],
    ['a YAML list', '- a\n- b\n', 'must be a YAML mapping'],
    ['an unknown YAML key', `cluster0: "${URI0}"\nclusterZero: x\n`, 'has unknown key clusterZero'],
    [
      'a YAML port string',
      `cluster0: "${URI0}"\ncluster1: "${URI1}"\nport: high\n`,
      '--port must be an integer',
    ],
  ])('rejects %s', (_name, yaml, text) => {
    expect(failure(['--config', 'w.yaml'], () => yaml)).toContain(text);
  });

  it('exits with code 2 for bad options', () => {
    expect(LaunchConfigError.EXIT_CODE).toBe(2);
  });
});

describe('API token and secrets from the environment', () => {
  const withEnv = (
    argv: string[],
    env: Record<string, string>,
    readFile: ReadTextFile = noFile,
  ) => {
    const parsed = parseLaunchArgs(argv);
    if (parsed.help) throw new Error('unexpected help');
    return loadServiceConfig(parsed.flags, readFile, {}, env);
  };
  const envFailure = (argv: string[], env: Record<string, string>): string => {
    try {
      withEnv(argv, env);
    } catch (error) {
      expect(error).toBeInstanceOf(LaunchConfigError);
      const message = (error as Error).message;
      for (const secret of ['s3cretpw', '0therpw', TOKEN]) expect(message).not.toContain(secret);
      expect(message).not.toContain('\n');
      return message;
    }
    throw new Error('expected a config error');
  };

  it('reads connection strings, Redis and the token from SYNC_* variables', () => {
    const config = withEnv([], {
      SYNC_CLUSTER0_URI: URI0,
      SYNC_CLUSTER1_URI: URI1,
      SYNC_REDIS_URL: 'redis://:pw@r:6379/0',
      SYNC_API_TOKEN: TOKEN,
    });
    expect(config).toMatchObject({
      clusters: { cluster0: URI0, cluster1: URI1 },
      redis: 'redis://:pw@r:6379/0',
      apiToken: TOKEN,
    });
  });

  it('lets flags win over the environment, and the environment over YAML', () => {
    const yaml = `cluster0: "mongodb://yaml0"\ncluster1: "mongodb://yaml1"\napiToken: yaml-token-0123456789\n`;
    const config = withEnv(
      ['--config', 'w.yaml', '--cluster0', URI0],
      { SYNC_CLUSTER0_URI: 'mongodb://env0', SYNC_CLUSTER1_URI: URI1 },
      () => yaml,
    );
    expect(config.clusters).toEqual({ cluster0: URI0, cluster1: URI1 });
    expect(config.apiToken).toBe('yaml-token-0123456789');
  });

  it('treats an empty variable as unset', () => {
    expect(envFailure(['--cluster1', URI1], { SYNC_CLUSTER0_URI: '' })).toContain(
      '--cluster0 is required',
    );
  });

  it('names the variable a bad value came from, without the value', () => {
    expect(
      envFailure(['--cluster0', URI0], { SYNC_CLUSTER1_URI: 'http://bob:0therpw@h' }),
    ).toContain('--cluster1 (from SYNC_CLUSTER1_URI) is not a valid connection string');
  });

  it.each(['short', 'has a space in it 0123456789', 'x'.repeat(513)])(
    'rejects the token %#',
    (token) => {
      expect(
        envFailure(['--cluster0', URI0, '--cluster1', URI1], { SYNC_API_TOKEN: token }),
      ).toContain('--apiToken (from SYNC_API_TOKEN) must be 16 to 512 printable ASCII');
    },
  );

  it.each(['0.0.0.0', '::', '10.1.2.3', 'sync.example.net', '[::]'])(
    'refuses the non-loopback host %s without a token',
    (host) => {
      const message = envFailure(['--cluster0', URI0, '--cluster1', URI1, '--host', host], {});
      if (host === '[::]') return expect(message).toContain('--host must be');
      expect(message).toContain(`--host ${host} is not a loopback address: set an API token`);
    },
  );

  it.each(['127.0.0.1', '127.3.4.5', 'localhost', '::1'])('binds %s without a token', (host) => {
    expect(withEnv(['--cluster0', URI0, '--cluster1', URI1, '--host', host], {}).host).toBe(host);
  });

  it('binds a non-loopback host with a token from the environment', () => {
    const config = withEnv(['--cluster0', URI0, '--cluster1', URI1, '--host', '0.0.0.0'], {
      SYNC_API_TOKEN: TOKEN,
    });
    expect(config).toMatchObject({ host: '0.0.0.0', apiToken: TOKEN });
  });
});
