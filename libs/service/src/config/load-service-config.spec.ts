import { loadServiceConfig, type ReadTextFile } from './load-service-config';
import { parseLaunchArgs } from './parse-launch-args';
import { LaunchConfigError } from './launch-config.error';

const URI0 = 'mongodb://alice:s3cretpw@h0:27017/?replicaSet=rs0';
const URI1 = 'mongodb+srv://bob:0therpw@cluster1.example.net/';
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
  it('applies the defaults', () => {
    expect(load(['--cluster0', URI0, '--cluster1', URI1])).toEqual({
      clusters: { cluster0: URI0, cluster1: URI1 },
      port: 27182,
      host: '127.0.0.1',
      verbosity: 'INFO',
    });
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
    ]);
    expect(config).toEqual({
      clusters: { cluster0: URI0, cluster1: URI1 },
      port: 0,
      host: '0.0.0.0',
      id: 'shard-01',
      logPath: '/tmp/w.log',
      verbosity: 'DEBUG',
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
