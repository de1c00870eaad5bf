/**
 * mongosync's verbosity names. The default is INFO, not mongosync's DEBUG: DEBUG here logs every
 * batch and API call, which floods a terminal and a log file during a long copy; operators
 * raise it when investigating.
 */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'PANIC'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLevelEnabled(level: LogLevel, threshold: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}
