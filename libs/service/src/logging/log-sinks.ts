import { closeSync, openSync, writeSync } from 'node:fs';
import type { LogSink } from './json-logger';

export const stdoutSink: LogSink = (line) => {
  process.stdout.write(line);
};

/**
 * Appends to `--logPath` synchronously: a FATAL line written just before `process.exit` must
 * reach the file. Opening happens at startup, so a bad path is a launch error, not a lost log.
 */
export function openFileSink(path: string): { sink: LogSink; close: () => void } {
  const fd = openSync(path, 'a');
  return { sink: (line) => writeSync(fd, line), close: () => closeSync(fd) };
}
