import type { ChangeEventApplicationOptions, SyncJobOptions } from '@sync/engine';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsInt,
  IsNumber,
  IsObject,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

type Tuned<K extends keyof SyncJobOptions> = NonNullable<SyncJobOptions[K]>;
type CopierTuning = NonNullable<SyncTuning['copier']>;
type VerificationTuning = Tuned<'verification'>;
type ApplierTuning = NonNullable<ChangeEventApplicationOptions['applier']>;

/**
 * The engine's tuning as the launch configuration gives it (`tuning` in a worker's `--config`,
 * or `SYNC_TUNING`): every group optional, every value optional; an absent value keeps the
 * engine's default. The worker's composition root maps it onto the engine's options.
 */
export interface SyncTuning {
  copier?: Partial<Omit<Tuned<'copier'>, 'retry'>>;
  partitioning?: Tuned<'partitioning'>;
  changeApplication?: ChangeApplicationTuning;
  verification?: Omit<VerificationTuning, 'limits' | 'retry'> & {
    limits?: NonNullable<VerificationTuning['limits']>;
    retry?: NonNullable<VerificationTuning['retry']>;
  };
  historyGuard?: Tuned<'historyGuard'>;
  retry?: Pick<
    SyncJobOptions,
    | 'maxTransientRetries'
    | 'retryBaseMs'
    | 'inPlaceRetries'
    | 'inPlaceRetryBaseMs'
    | 'restoreRetryMs'
  >;
  balancerWatch?: { intervalMs?: number };
}

/** Change application: the applier's lanes and checkpoints, the lag poll, the change stream. */
export interface ChangeApplicationTuning extends Partial<ApplierTuning> {
  lagPollMs?: number;
  commitLagLimitSeconds?: number;
  /** The change stream's getMore (the MongoDB adapter's options). */
  feed?: { maxAwaitTimeMS?: number; maxBatchEvents?: number };
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** An optional integer in [min, max]; the message names the range (and unit). */
function IntIn(min: number, max: number, unit?: string): PropertyDecorator {
  const message = `must be an integer from ${min} to ${max}${unit ? ` (${unit})` : ''}`;
  return (target, key) => {
    ValidateIf((_object, value) => value !== undefined)(target, key);
    IsInt({ message })(target, key);
    Min(min, { message })(target, key);
    Max(max, { message })(target, key);
  };
}

/** An optional group of tuning values: a mapping, validated against its own class. */
function Group(type: () => new () => object): PropertyDecorator {
  return (target, key) => {
    ValidateIf((_object, value) => value !== undefined)(target, key);
    Type(type)(target, key);
    IsObject({ message: 'must be a mapping of tuning keys to values' })(target, key);
    ValidateNested()(target, key);
  };
}

/** Small whole collections read together (one source read for many); collections: 1 is off. */
export class GroupReadsTuningDto implements NonNullable<CopierTuning['groupReads']> {
  @IntIn(1, 1000)
  collections?: number;

  @IntIn(0, 64 * MiB, 'bytes')
  memberBytes?: number;

  @IntIn(0, 256 * MiB, 'bytes')
  groupBytes?: number;

  @IntIn(MiB, 1 * GiB, 'bytes')
  maxBytes?: number;
}

export class CopierTuningDto implements NonNullable<SyncTuning['copier']> {
  @IntIn(1, 64)
  concurrency?: number;

  @IntIn(1, 100_000, 'documents')
  readBatchSize?: number;

  @IntIn(1, 100_000, 'documents')
  writeBatchDocuments?: number;

  @IntIn(1024, 32 * MiB, 'bytes')
  writeBatchBytes?: number;

  @IntIn(MiB, 4 * GiB, 'bytes')
  maxBytesInFlight?: number;

  @IntIn(1, 256)
  smallPartitionConcurrency?: number;

  @IntIn(0, 4 * GiB, 'bytes')
  smallPartitionBytes?: number;

  @IsBoolean({ message: 'must be true or false' })
  @ValidateIf((_object, value) => value !== undefined)
  raw?: boolean;

  @Group(() => GroupReadsTuningDto)
  groupReads?: GroupReadsTuningDto;
}

export class PartitioningTuningDto implements NonNullable<SyncTuning['partitioning']> {
  @IntIn(1024, 64 * GiB, 'bytes')
  targetBytes?: number;

  @IntIn(1, 100_000)
  maxPartitions?: number;

  @IntIn(1, 1000)
  oversampling?: number;
}

export class FeedTuningDto implements NonNullable<ChangeApplicationTuning['feed']> {
  @IntIn(1, 60_000, 'milliseconds')
  maxAwaitTimeMS?: number;

  @IntIn(1, 100_000, 'events')
  maxBatchEvents?: number;
}

export class ChangeApplicationTuningDto implements ChangeApplicationTuning {
  @IntIn(1, 256)
  lanes?: number;

  @IntIn(1, 256)
  minLanes?: number;

  @IntIn(100, 10_000_000, 'events')
  maxInFlight?: number;

  @IntIn(10, 600_000, 'milliseconds')
  checkpointIntervalMs?: number;

  @IntIn(1, 10_000_000, 'events')
  checkpointEveryEvents?: number;

  @IntIn(10, 60_000, 'milliseconds')
  lagPollMs?: number;

  @IntIn(1, 300, 'seconds')
  commitLagLimitSeconds?: number;

  @Group(() => FeedTuningDto)
  feed?: FeedTuningDto;
}

export class DirtyLimitsTuningDto implements NonNullable<VerificationTuning['limits']> {
  @IntIn(1, 10_000_000, 'document ids')
  idsPerNamespace?: number;

  @IntIn(1, 10_000_000, 'document ids')
  idsTotal?: number;

  @IntIn(64, 16_384, 'characters')
  maxIdentityChars?: number;
}

export class ReadRetryTuningDto implements NonNullable<VerificationTuning['retry']> {
  @IntIn(0, 100)
  attempts?: number;

  @IntIn(1, 60_000, 'milliseconds')
  baseMs?: number;

  @IntIn(1, 600_000, 'milliseconds')
  maxMs?: number;
}

export class VerificationTuningDto implements NonNullable<SyncTuning['verification']> {
  @IntIn(1, 64)
  concurrency?: number;

  @IntIn(100, 600_000, 'milliseconds')
  recheckMs?: number;

  @IntIn(1000, 3_600_000, 'milliseconds')
  caughtUpMs?: number;

  @IntIn(0, 600_000, 'milliseconds')
  settleMs?: number;

  @Group(() => DirtyLimitsTuningDto)
  limits?: DirtyLimitsTuningDto;

  @Group(() => ReadRetryTuningDto)
  retry?: ReadRetryTuningDto;
}

export class HistoryGuardTuningDto implements NonNullable<SyncTuning['historyGuard']> {
  @IntIn(100, 3_600_000, 'milliseconds')
  intervalMs?: number;

  @Max(1, { message: 'must be a number from 0.01 to 1' })
  @Min(0.01, { message: 'must be a number from 0.01 to 1' })
  @IsNumber(
    { allowNaN: false, allowInfinity: false },
    { message: 'must be a number from 0.01 to 1' },
  )
  @ValidateIf((_object, value) => value !== undefined)
  warnRatio?: number;
}

export class RetryTuningDto implements NonNullable<SyncTuning['retry']> {
  @IntIn(0, 1000)
  maxTransientRetries?: number;

  @IntIn(10, 60_000, 'milliseconds')
  retryBaseMs?: number;

  @IntIn(0, 100)
  inPlaceRetries?: number;

  @IntIn(1, 60_000, 'milliseconds')
  inPlaceRetryBaseMs?: number;

  @IntIn(100, 600_000, 'milliseconds')
  restoreRetryMs?: number;
}

export class BalancerWatchTuningDto implements NonNullable<SyncTuning['balancerWatch']> {
  @IntIn(100, 3_600_000, 'milliseconds')
  intervalMs?: number;
}

/** `tuning` of a worker's launch configuration. Unknown keys are refused at every level. */
export class TuningOptionsDto implements SyncTuning {
  @Group(() => CopierTuningDto)
  copier?: CopierTuningDto;

  @Group(() => PartitioningTuningDto)
  partitioning?: PartitioningTuningDto;

  @Group(() => ChangeApplicationTuningDto)
  changeApplication?: ChangeApplicationTuningDto;

  @Group(() => VerificationTuningDto)
  verification?: VerificationTuningDto;

  @Group(() => HistoryGuardTuningDto)
  historyGuard?: HistoryGuardTuningDto;

  @Group(() => RetryTuningDto)
  retry?: RetryTuningDto;

  @Group(() => BalancerWatchTuningDto)
  balancerWatch?: BalancerWatchTuningDto;
}
