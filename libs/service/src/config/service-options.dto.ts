import { connectionStringProblem, redisUrlProblem } from '@sync/contracts';
import {
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsString,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
} from 'class-validator';
import { LOG_LEVELS, type LogLevel } from '../logging/log-levels';
import type { SyncTuning } from './tuning-options.dto';

/** Default API port, as mongosync (27182). */
export const DEFAULT_PORT = 27182;
/**
 * Without an API token the API has no authentication, so it listens on loopback
 * unless told otherwise; a non-loopback host requires a token (see isLoopbackHost).
 */
export const DEFAULT_HOST = '127.0.0.1';
/**
 * V8 grows a busy process's heap up to 4× what a full collection left alive; the worker's
 * per-cycle garbage (progress, the verifier's walks, driver buffers) then settles the RSS there.
 * 50 % keeps it near 1.5× the live data for a few percent more GC time (measured with
 * `npm run bench -- --namespaces 20000`: peak RSS 545 → 277 MB).
 */
export const DEFAULT_HEAP_GROWTH_PERCENT = 50;

/** 127.0.0.0/8, ::1 and localhost: the only hosts the API may bind to without a token. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return (
    bare === 'localhost' ||
    bare === '::1' ||
    bare === '0:0:0:0:0:0:0:1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare)
  );
}

/** Visible ASCII only (it travels in an HTTP header), long enough not to be guessed. */
const API_TOKEN = /^[\x21-\x7e]{16,512}$/;

const HOST =
  /^(localhost|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*|[0-9A-Fa-f:.]+)$/;

function IsConnectionString() {
  return ValidateBy({
    name: 'isConnectionString',
    validator: {
      validate: (value) => typeof value === 'string' && connectionStringProblem(value) === null,
      // Never echo the value: it may hold a password.
      defaultMessage: (args) =>
        `is not a valid connection string: ${typeof args?.value === 'string' ? connectionStringProblem(args.value) : 'must be a string'}`,
    },
  });
}

function IsRedisUrl() {
  return ValidateBy({
    name: 'isRedisUrl',
    validator: {
      validate: (value) => typeof value === 'string' && redisUrlProblem(value) === null,
      defaultMessage: (args) =>
        `is not a valid Redis URL: ${typeof args?.value === 'string' ? redisUrlProblem(args.value) : 'must be a string'}`,
    },
  });
}

/**
 * Launch options (a worker's or a coordinator's) after flags and YAML are merged (flags win). Validated once, before Nest boots,
 * so a bad option exits with one line instead of a half-started server. Decorators run bottom-up.
 */
export class ServiceOptionsDto {
  @IsConnectionString()
  @IsDefined({ message: 'is required: a mongodb:// or mongodb+srv:// connection string' })
  cluster0!: string;

  @IsConnectionString()
  @IsDefined({ message: 'is required: a mongodb:// or mongodb+srv:// connection string' })
  cluster1!: string;

  @Max(65535, { message: 'must be an integer from 0 to 65535 (0 picks a free port)' })
  @Min(0, { message: 'must be an integer from 0 to 65535 (0 picks a free port)' })
  @IsInt({ message: 'must be an integer from 0 to 65535 (0 picks a free port)' })
  port: number = DEFAULT_PORT;

  @Matches(HOST, { message: 'must be a host name or an IP address' })
  @IsString({ message: 'must be a host name or an IP address' })
  host: string = DEFAULT_HOST;

  @Matches(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, {
    message: 'must be 1-64 letters, digits, "_", "." or "-" (a shard id)',
  })
  @IsString({ message: 'must be a string' })
  @ValidateIf((_object, value) => value !== undefined)
  id?: string;

  @IsNotEmpty({ message: 'must be a file path' })
  @IsString({ message: 'must be a file path' })
  @ValidateIf((_object, value) => value !== undefined)
  logPath?: string;

  @IsIn(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
  verbosity: LogLevel = 'INFO';

  /** Redis of the control plane (coordinator, BullMQ); required by the coordinator. */
  @IsRedisUrl()
  @ValidateIf((_object, value) => value !== undefined)
  redis?: string;

  /** Bearer token every request must send; required when `host` is not loopback. */
  // Never echo the value: it is a secret.
  @Matches(API_TOKEN, {
    message: 'must be 16 to 512 printable ASCII characters without spaces',
  })
  @IsString({ message: 'must be 16 to 512 printable ASCII characters without spaces' })
  @ValidateIf((_object, value) => value !== undefined)
  apiToken?: string;

  /** Wait as the standby of the shard's active worker (`--id` required). */
  @IsBoolean({ message: 'must be true or false (or given alone: --standby)' })
  @ValidateIf((_object, value) => value !== undefined)
  standby?: boolean;

  /** Shard claim heartbeat period, ms (default 1000). */
  @Max(60_000, { message: 'must be an integer from 100 to 60000 (milliseconds)' })
  @Min(100, { message: 'must be an integer from 100 to 60000 (milliseconds)' })
  @IsInt({ message: 'must be an integer from 100 to 60000 (milliseconds)' })
  @ValidateIf((_object, value) => value !== undefined)
  claimRenewMs?: number;

  /** A shard claim not renewed for this long (destination's clock) is taken over, ms (default 6000). */
  @Max(600_000, { message: 'must be an integer from 500 to 600000 (milliseconds)' })
  @Min(500, { message: 'must be an integer from 500 to 600000 (milliseconds)' })
  @IsInt({ message: 'must be an integer from 500 to 600000 (milliseconds)' })
  @ValidateIf((_object, value) => value !== undefined)
  claimStaleMs?: number;

  /**
   * How far V8 lets the heap grow past what a full collection left alive, in percent (0: V8's
   * own adaptive factor, up to 4× on a busy process).
   */
  @Max(300, { message: 'must be an integer from 0 to 300 (percent; 0 leaves it to V8)' })
  @Min(0, { message: 'must be an integer from 0 to 300 (percent; 0 leaves it to V8)' })
  @IsInt({ message: 'must be an integer from 0 to 300 (percent; 0 leaves it to V8)' })
  heapGrowthPercent: number = DEFAULT_HEAP_GROWTH_PERCENT;
}

/** The validated, typed launch configuration. */
export interface ServiceConfig {
  clusters: { cluster0: string; cluster1: string };
  port: number;
  host: string;
  id?: string;
  logPath?: string;
  verbosity: LogLevel;
  redis?: string;
  /** Every request must send `Authorization: Bearer <apiToken>` when set. */
  apiToken?: string;
  /** A per-shard worker waiting as the standby of its shard's active worker. */
  standby?: boolean;
  /** Shard claim timing (defaults in ShardClaim: renew 1 s, stale 6 s). */
  claimRenewMs?: number;
  claimStaleMs?: number;
  /** V8's heap growth past the live size after a full GC, percent (0: V8's adaptive default). */
  heapGrowthPercent: number;
  /** Engine tuning (`tuning` in --config, SYNC_TUNING); absent: the engine's defaults. */
  tuning?: SyncTuning;
}
