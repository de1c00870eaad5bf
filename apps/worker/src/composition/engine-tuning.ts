import type { SyncTuning } from '@sync/service';
import type { CreateSyncEngineOptions } from './create-sync-engine';

type EngineTuning = NonNullable<CreateSyncEngineOptions['engine']>;
type ChangeApplicationOptions = NonNullable<CreateSyncEngineOptions['changeApplication']>;

/** Only the keys that hold a value: an absent one keeps the engine's default. */
function defined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, inner]) => inner !== undefined),
  ) as Partial<T>;
}

/**
 * The launch configuration's `tuning` (validated by @sync/service) → what `createSyncEngine`
 * takes: the engine's options (copier, partitioning, verification, history guard, retry
 * budgets, balancer watch) and the change application's (applier, lag poll, change stream).
 * Nothing is set that the tuning leaves out, so the defaults stay the engine's own.
 */
export function engineTuning(
  tuning: SyncTuning | undefined,
): Pick<CreateSyncEngineOptions, 'engine' | 'changeApplication'> {
  if (!tuning) return {};
  const { copier, partitioning, verification, historyGuard, retry, balancerWatch } = tuning;
  const engine: EngineTuning = defined({
    copier,
    partitioning,
    verification,
    historyGuard,
    ...retry,
    balancerWatchMs: balancerWatch?.intervalMs,
  });
  const { feed, lagPollMs, commitLagLimitSeconds, ...applier } = tuning.changeApplication ?? {};
  const changeApplication: ChangeApplicationOptions = defined({
    lagPollMs,
    commitLagLimitSeconds,
    applier: Object.keys(applier).length > 0 ? applier : undefined,
    feed,
  });
  return {
    ...(Object.keys(engine).length > 0 ? { engine } : {}),
    ...(Object.keys(changeApplication).length > 0 ? { changeApplication } : {}),
  };
}
