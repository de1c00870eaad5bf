import { uriSecrets } from '@sync/contracts';
import { JsonLogger } from './json-logger';
import { NestLoggerAdapter } from './nest-logger.adapter';

const URI =
  'mongodb://admin:Pa%24%24w0rd!@db1:27017,db2:27017/?tlsCertificateKeyFilePassword=keypass123';

function capture(level: ConstructorParameters<typeof JsonLogger>[0] = 'TRACE') {
  const lines: string[] = [];
  const logger = new JsonLogger(
    level,
    [(line) => lines.push(line)],
    () => new Date('2024-01-01T00:00:00Z'),
  );
  logger.addSecrets(uriSecrets(URI));
  return { logger, lines };
}

describe('JsonLogger', () => {
  it('writes one JSON object per line with level, msg, fields and time', () => {
    const { logger, lines } = capture();
    logger.info('worker listening', { url: 'http://127.0.0.1:1/api/v1', syncID: null });
    expect(lines).toEqual([
      '{"level":"INFO","msg":"worker listening","url":"http://127.0.0.1:1/api/v1","syncID":null,"time":"2024-01-01T00:00:00.000Z"}\n',
    ]);
  });

  it('filters by level', () => {
    const { logger, lines } = capture('WARN');
    logger.debug('hidden');
    logger.info('hidden');
    logger.warn('shown');
    logger.fatal('shown');
    expect(lines.map((line) => JSON.parse(line).level)).toEqual(['WARN', 'FATAL']);
  });

  it('never writes a password, in a URI, a field, an error or alone', () => {
    const { logger, lines } = capture();
    logger.error(`cannot connect to ${URI}`, {
      uri: URI,
      error: new Error(`auth failed for admin with Pa$$w0rd! (${URI})`),
      nested: { detail: ['Pa%24%24w0rd!', 'keypass123'] },
    });
    new NestLoggerAdapter(logger).error(`boom ${URI}`, 'stack with Pa$$w0rd!', 'Ctx');
    const output = lines.join('');
    for (const secret of ['Pa$$w0rd!', 'Pa%24%24w0rd!', 'keypass123'])
      expect(output).not.toContain(secret);
    expect(output).toContain('mongodb://<credentials>@db1:27017,db2:27017/');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('keeps reserved keys and survives cycles', () => {
    const { logger, lines } = capture();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    logger.warn('odd', { level: 'x', cyclic, big: 10n });
    const record = JSON.parse(lines[0]);
    expect(record).toMatchObject({
      level: 'WARN',
      'field.level': 'x',
      big: '10',
      cyclic: { self: '[circular]' },
    });
  });

  it('maps Nest log to DEBUG so startup stays quiet at INFO', () => {
    const { logger, lines } = capture('INFO');
    new NestLoggerAdapter(logger).log('Mapped {/api/v1/start, POST} route', 'RouterExplorer');
    expect(lines).toEqual([]);
  });
});
