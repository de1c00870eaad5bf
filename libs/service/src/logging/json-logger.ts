import { redactSecrets } from '@sync/contracts';
import { isLevelEnabled, type LogLevel } from './log-levels';

/** Where finished lines go (stdout, a file); one call per line, newline included. */
export type LogSink = (line: string) => void;

const RESERVED = new Set(['level', 'msg', 'time']);

/**
 * Structured JSON-lines logger shared by the worker and the engine (it satisfies the engine's
 * `EngineLogger` port). Every line is scrubbed twice before it is written: connection strings
 * are redacted wherever they appear, and the literal secrets of the configured clusters are
 * replaced even when they show up without their URI (e.g. quoted by a driver error).
 */
export class JsonLogger {
  private readonly secrets = new Set<string>();

  constructor(
    private readonly threshold: LogLevel,
    private readonly sinks: LogSink[],
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Literal values (passwords) that must never be written, raw or JSON-escaped. */
  addSecrets(values: Iterable<string>): void {
    for (const value of values) {
      this.secrets.add(value);
      this.secrets.add(JSON.stringify(value).slice(1, -1));
    }
  }

  isEnabled(level: LogLevel): boolean {
    return isLevelEnabled(level, this.threshold);
  }

  trace(msg: string, fields?: Record<string, unknown>): void {
    this.write('TRACE', msg, fields);
  }
  debug(msg: string, fields?: Record<string, unknown>): void {
    this.write('DEBUG', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.write('INFO', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.write('WARN', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.write('ERROR', msg, fields);
  }
  fatal(msg: string, fields?: Record<string, unknown>): void {
    this.write('FATAL', msg, fields);
  }

  write(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
    if (!this.isEnabled(level)) return;
    const record: Record<string, unknown> = { level, msg };
    for (const [key, value] of Object.entries(fields)) {
      record[RESERVED.has(key) ? `field.${key}` : key] =
        value instanceof Error ? describeError(value) : value;
    }
    record.time = this.now().toISOString();
    const line = `${this.scrub(safeStringify(record))}\n`;
    for (const sink of this.sinks) sink(line);
  }

  private scrub(line: string): string {
    let out = redactSecrets(line);
    for (const secret of this.secrets)
      if (secret.length > 0) out = out.split(secret).join('<redacted>');
    return out;
  }
}

/** Errors serialise to `{}` by default; keep what helps (name, message, API error name). */
function describeError(error: Error): Record<string, unknown> {
  const described: Record<string, unknown> = { name: error.name, message: error.message };
  const code =
    (error as { code?: unknown; error?: unknown }).code ?? (error as { error?: unknown }).error;
  if (code !== undefined) described.code = code;
  if (error.stack) described.stack = error.stack;
  return described;
}

/** A log call must never throw, whatever it is given (cycles, BigInt). */
function safeStringify(record: Record<string, unknown>): string {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(record, (_key, value: unknown) => {
      if (typeof value === 'bigint') return value.toString();
      if (typeof value === 'object' && value !== null) {
        if (seen.has(value)) return '[circular]';
        seen.add(value);
      }
      return value;
    });
  } catch {
    return JSON.stringify({
      level: record.level,
      msg: record.msg,
      time: record.time,
      note: 'unserialisable fields',
    });
  }
}
