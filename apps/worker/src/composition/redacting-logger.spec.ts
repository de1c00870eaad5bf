import { JsonLogger } from '@sync/service';
import { redactingLogger } from './create-sync-engine';

describe('redactingLogger', () => {
  const secretUri = 'mongodb://admin:hunter2@db.example:27017';

  function setup(level: 'DEBUG' | 'INFO') {
    const lines: string[] = [];
    const redacted: string[] = [];
    const inner = new JsonLogger(level, [(line) => lines.push(line)]);
    const logger = redactingLogger(inner, (text) => {
      redacted.push(text);
      return text.split('hunter2').join('<redacted>');
    });
    return { lines, redacted, logger };
  }

  it('redacts messages and string fields before the logger writes them', () => {
    const { lines, logger } = setup('DEBUG');
    logger.debug(`connecting to ${secretUri}`, { uri: secretUri, n: 1 });
    logger.info('started', { uri: secretUri });
    expect(lines).toHaveLength(2);
    expect(lines.join('')).not.toContain('hunter2');
    expect(JSON.parse(lines[0]!)).toEqual(
      expect.objectContaining({
        level: 'DEBUG',
        uri: 'mongodb://admin:<redacted>@db.example:27017',
        n: 1,
      }),
    );
  });

  it('does no work for debug lines the logger would drop', () => {
    const { lines, redacted, logger } = setup('INFO');
    logger.debug(`partition copied from ${secretUri}`, { uri: secretUri });
    expect(redacted).toEqual([]);
    expect(lines).toEqual([]);
    logger.warn(`slow ${secretUri}`);
    expect(redacted).toHaveLength(1);
    expect(lines.join('')).not.toContain('hunter2');
  });
});
