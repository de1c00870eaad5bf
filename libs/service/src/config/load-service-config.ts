import { redactSecrets } from '@sync/contracts';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { parse as parseYaml } from 'yaml';
import type { ValueFlag } from './parse-launch-args';
import { LaunchConfigError } from './launch-config.error';
import { loadTuning, TUNING_ENV } from './load-tuning';
import { isLoopbackHost, ServiceOptionsDto, type ServiceConfig } from './service-options.dto';

const CONFIG_KEYS = [
  'cluster0',
  'cluster1',
  'port',
  'host',
  'id',
  'logPath',
  'verbosity',
  'redis',
  'apiToken',
  'standby',
  'claimRenewMs',
  'claimStaleMs',
  'heapGrowthPercent',
  'tuning',
] as const;

/**
 * Secrets may come from the environment (invisible in the process list, unlike flags).
 * Precedence: command-line flag > environment variable > YAML file > default.
 */
export const ENV_OPTIONS = {
  cluster0: 'SYNC_CLUSTER0_URI',
  cluster1: 'SYNC_CLUSTER1_URI',
  redis: 'SYNC_REDIS_URL',
  apiToken: 'SYNC_API_TOKEN',
  standby: 'SYNC_STANDBY',
  claimRenewMs: 'SYNC_CLAIM_RENEW_MS',
  claimStaleMs: 'SYNC_CLAIM_STALE_MS',
  heapGrowthPercent: 'SYNC_HEAP_GROWTH_PERCENT',
} as const satisfies Partial<Record<ValueFlag, string>>;

/** The environment variables read (an empty value counts as unset). */
export type LaunchEnv = Readonly<Record<string, string | undefined>>;

/** File access is injected so the whole load is testable without a disk. */
export type ReadTextFile = (path: string) => string;

/**
 * Flags (already parsed) + optional YAML → a validated `ServiceConfig`, or a `LaunchConfigError`
 * whose message is the single line main prints before exiting with code 2.
 */
export function loadServiceConfig(
  flags: Partial<Record<ValueFlag, string>>,
  readFile: ReadTextFile,
  rules: {
    requireRedis?: boolean;
    /**
     * false: the program runs no sync engine (the coordinator), so `tuning` in --config is
     * refused and SYNC_TUNING is not read. Default true.
     */
    engineTuning?: boolean;
  } = {},
  env: LaunchEnv = {},
): ServiceConfig {
  const { config: configPath, ...cliOptions } = flags;
  const { tuning: tuningInFile, ...fromFile } =
    configPath === undefined ? {} : readYamlConfig(configPath, readFile);
  if (rules.engineTuning === false && tuningInFile !== undefined) {
    throw new LaunchConfigError(
      `--config file ${configPath} has key tuning, which only a worker reads: put it in each worker's --config`,
    );
  }
  const fromEnv: Record<string, string> = {};
  for (const [key, name] of Object.entries(ENV_OPTIONS)) {
    const value = env[name];
    if (value !== undefined && value !== '' && flags[key as ValueFlag] === undefined)
      fromEnv[key] = value;
  }
  const merged: Record<string, unknown> = { ...fromFile, ...fromEnv, ...cliOptions };
  const options = plainToInstance(ServiceOptionsDto, normalize(merged));
  const errors = validateSync(options, { stopAtFirstError: true, forbidUnknownValues: true });
  if (errors.length > 0) {
    const first = errors[0];
    const message = Object.values(first.constraints ?? {})[0] ?? 'is invalid';
    const viaEnv =
      first.property in fromEnv
        ? ` (from ${ENV_OPTIONS[first.property as keyof typeof ENV_OPTIONS]})`
        : '';
    throw new LaunchConfigError(`--${first.property}${viaEnv} ${message}`);
  }
  const tuning =
    rules.engineTuning === false ? undefined : loadTuning(tuningInFile, env[TUNING_ENV]);
  if (rules.requireRedis && options.redis === undefined) {
    throw new LaunchConfigError(
      `--redis is required: a redis:// or rediss:// URL (or ${ENV_OPTIONS.redis})`,
    );
  }
  if (options.standby && options.id === undefined) {
    throw new LaunchConfigError(
      '--standby needs --id: a standby waits to take over one source shard from its active worker',
    );
  }
  const renewMs = options.claimRenewMs ?? 1_000;
  const staleMs = options.claimStaleMs ?? 6_000;
  // ShardClaim's invariant: renewals come well inside the lease (stale − stale/5).
  if (renewMs >= staleMs * 0.8) {
    throw new LaunchConfigError(
      `--claimRenewMs (${renewMs}) must be shorter than 4/5 of --claimStaleMs (${staleMs}): the claim must be renewed well before it can go stale`,
    );
  }
  if (options.apiToken === undefined && !isLoopbackHost(options.host)) {
    throw new LaunchConfigError(
      `--host ${options.host} is not a loopback address: set an API token (${ENV_OPTIONS.apiToken}, apiToken in --config, or --apiToken) so the API is not open to the network`,
    );
  }
  return {
    clusters: { cluster0: options.cluster0, cluster1: options.cluster1 },
    port: options.port,
    host: options.host,
    verbosity: options.verbosity,
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(options.logPath === undefined ? {} : { logPath: options.logPath }),
    ...(options.redis === undefined ? {} : { redis: options.redis }),
    ...(options.apiToken === undefined ? {} : { apiToken: options.apiToken }),
    ...(options.standby ? { standby: true } : {}),
    ...(options.claimRenewMs === undefined ? {} : { claimRenewMs: options.claimRenewMs }),
    ...(options.claimStaleMs === undefined ? {} : { claimStaleMs: options.claimStaleMs }),
    heapGrowthPercent: options.heapGrowthPercent,
    ...(tuning === undefined ? {} : { tuning }),
  };
}

function readYamlConfig(path: string, readFile: ReadTextFile): Record<string, unknown> {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'read error';
    throw new LaunchConfigError(`cannot read --config file ${path} (${code})`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    // The YAML message may quote a line of the file, which may hold a connection string.
    const firstLine = redactSecrets(String((error as Error).message).split('\n')[0]);
    throw new LaunchConfigError(`--config file ${path} is not valid YAML: ${firstLine}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new LaunchConfigError(
      `--config file ${path} must be a YAML mapping of option names to values`,
    );
  }
  const unknown = Object.keys(parsed).filter(
    (key) => !(CONFIG_KEYS as readonly string[]).includes(key),
  );
  if (unknown.length > 0) {
    throw new LaunchConfigError(
      `--config file ${path} has unknown key ${unknown[0].slice(0, 40)} (allowed: ${CONFIG_KEYS.join(', ')})`,
    );
  }
  return parsed as Record<string, unknown>;
}

/** Flags are strings: convert only what is unambiguous, so "8o80" stays a string and fails. */
function normalize(options: Record<string, unknown>): Record<string, unknown> {
  const out = { ...options };
  for (const key of ['port', 'claimRenewMs', 'claimStaleMs', 'heapGrowthPercent']) {
    const value = out[key];
    if (typeof value === 'string' && /^\d+$/.test(value)) out[key] = Number(value);
  }
  if (typeof out.standby === 'string' && /^(true|false)$/i.test(out.standby))
    out.standby = out.standby.toLowerCase() === 'true';
  if (typeof out.verbosity === 'string') out.verbosity = out.verbosity.toUpperCase();
  for (const key of Object.keys(out))
    if (out[key] === undefined || out[key] === null) delete out[key];
  return out;
}
