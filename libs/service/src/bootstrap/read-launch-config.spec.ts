import { readLaunchConfig } from './read-launch-config';

describe('readLaunchConfig', () => {
  const run = (argv: string[]) => {
    const out = { stdout: '', stderr: '' };
    const result = readLaunchConfig(
      argv,
      {
        stdout: (text) => (out.stdout += text),
        stderr: (text) => (out.stderr += text),
      },
      { name: 'worker', usage: 'Usage: worker --cluster0 <uri> --cluster1 <uri>\n' },
    );
    return { result, ...out };
  };

  it('prints exactly one stderr line and exit code 2, without the URI', () => {
    const { result, stderr, stdout } = run(['--cluster0', 'mongodb://u:pa55word@h', '--port', 'x']);
    expect(result).toEqual({ exitCode: 2 });
    expect(stdout).toBe('');
    expect(stderr.split('\n')).toEqual([
      expect.stringMatching(/^worker: --cluster1 is required/),
      '',
    ]);
    expect(stderr).not.toContain('pa55word');
  });

  it('prints usage to stdout with exit code 0 for --help', () => {
    const { result, stdout, stderr } = run(['--help']);
    expect(result).toEqual({ exitCode: 0 });
    expect(stdout).toContain('Usage: worker --cluster0 <uri> --cluster1 <uri>');
    expect(stderr).toBe('');
  });
});
