import type { LoggerService } from '@nestjs/common';
import type { JsonLogger } from './json-logger';
import type { LogLevel } from './log-levels';

/**
 * Routes Nest's own messages into the JSON logger. Nest's `log` level is chatty bootstrap detail
 * ("Mapped {/api/v1/start, POST} route"), so it lands at DEBUG and the INFO output of a starting
 * worker stays one line: "worker listening".
 */
export class NestLoggerAdapter implements LoggerService {
  constructor(private readonly logger: JsonLogger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.forward('DEBUG', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.forward('ERROR', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.forward('WARN', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.forward('DEBUG', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.forward('TRACE', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.forward('FATAL', message, rest);
  }

  /** Nest passes (message, [stack], context); the last string argument is the context. */
  private forward(level: LogLevel, message: unknown, rest: unknown[]): void {
    const strings = rest.filter((part): part is string => typeof part === 'string');
    const context = strings.length > 0 ? strings[strings.length - 1] : undefined;
    const stack = strings.length > 1 ? strings[0] : undefined;
    const text =
      message instanceof Error
        ? message.message
        : typeof message === 'string'
          ? message
          : JSON.stringify(message);
    this.logger.write(level, text, { component: context ?? 'nest', ...(stack ? { stack } : {}) });
  }
}
