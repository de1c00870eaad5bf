import { LaunchConfigError } from './launch-config.error';

/** Flags that take a value; the same names are the keys of the YAML file (except config). */
export const VALUE_FLAGS = [
  'cluster0',
  'cluster1',
  'config',
  'port',
  'host',
  'id',
  'logPath',
  'verbosity',
  'redis',
  'apiToken',
  'claimRenewMs',
  'claimStaleMs',
  'heapGrowthPercent',
] as const;
/** Flags that need no value (`--standby`; `--standby=false` is allowed too). */
export const SWITCH_FLAGS = ['standby'] as const;
export type ValueFlag = (typeof VALUE_FLAGS)[number] | (typeof SWITCH_FLAGS)[number];

export type ParsedArgs =
  { help: true } | { help: false; flags: Partial<Record<ValueFlag, string>> };

/**
 * `--name value` or `--name=value`. Strict: an unknown flag, a missing value or a repeated flag is
 * an error, because a typo (`--cluster=...`) must not start a process with a default instead.
 * Values are never quoted back in errors: they may be connection strings.
 */
export function parseLaunchArgs(argv: readonly string[]): ParsedArgs {
  const flags: Partial<Record<ValueFlag, string>> = {};
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return { help: true };
    if (!arg.startsWith('--')) {
      throw new LaunchConfigError(
        `unexpected argument at position ${i + 1}; options are written --name <value>`,
      );
    }
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals < 0 ? undefined : equals);
    const isSwitch = (SWITCH_FLAGS as readonly string[]).includes(name);
    if (!isSwitch && !(VALUE_FLAGS as readonly string[]).includes(name)) {
      throw new LaunchConfigError(`unknown option --${name.replace(/[^\w-]/g, '?').slice(0, 40)}`);
    }
    const flag = name as ValueFlag;
    if (flags[flag] !== undefined) throw new LaunchConfigError(`--${flag} is given more than once`);
    let value: string | undefined;
    if (equals >= 0) {
      value = arg.slice(equals + 1);
    } else if (isSwitch) {
      value = 'true';
    } else {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--'))
        throw new LaunchConfigError(`--${flag} needs a value`);
      i += 1;
    }
    flags[flag] = value;
  }
  return { help: false, flags };
}
