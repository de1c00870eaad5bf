import 'reflect-metadata';
import type { DynamicModule, Provider } from '@nestjs/common';
import {
  JsonLogger,
  loadServiceConfig,
  parseLaunchArgs,
  SYNC_API_OPTIONS,
  type EngineFactoryOptions,
  type SyncApiOptions,
} from '@sync/service';
import { FakeSyncEngine } from '@sync/service/test/fake-sync-engine';
import type { CreateSyncEngineOptions, createSyncEngine } from './composition/create-sync-engine';
import { WorkerModule } from './worker.module';

const URI0 = 'mongodb://h0:27017/?replicaSet=rs0';
const URI1 = 'mongodb://h1:27017/?replicaSet=rs1';

/** A worker's launch config as --config <yaml> gives it. */
function launch(yaml: string, argv: string[] = []) {
  const parsed = parseLaunchArgs(['--config', 'w.yaml', ...argv]);
  if (parsed.help) throw new Error('unexpected help');
  return loadServiceConfig(parsed.flags, () => `cluster0: "${URI0}"\ncluster1: "${URI1}"\n${yaml}`);
}

/** Builds the worker's module and lets its API create the engine: what did the engine get? */
async function engineOptionsOf(yaml: string, argv: string[] = []) {
  const given: CreateSyncEngineOptions[] = [];
  const create = (async (options: CreateSyncEngineOptions) => {
    given.push(options);
    return Object.assign(new FakeSyncEngine(), { ready: Promise.resolve() });
  }) as unknown as typeof createSyncEngine;
  const config = launch(yaml, argv);
  const lines: string[] = [];
  const logger = new JsonLogger('INFO', [(line) => lines.push(line)]);
  const module = WorkerModule.forRoot(
    config,
    logger,
    () => undefined,
    new Promise(() => undefined),
    create,
  );
  const api = (module.imports as DynamicModule[])[0];
  const provider = (api.providers as Provider[]).find(
    (p) => typeof p === 'object' && 'provide' in p && p.provide === SYNC_API_OPTIONS,
  ) as { useValue: SyncApiOptions };
  const factoryOptions: EngineFactoryOptions = {
    clusters: config.clusters,
    ...(config.id ? { id: config.id } : {}),
    logger,
  };
  await provider.useValue.engineFactory(factoryOptions);
  return { options: given[0]!, lines };
}

describe('WorkerModule: tuning from the launch config reaches the engine', () => {
  const TUNING = `tuning:
  copier: { concurrency: 8 }
  changeApplication: { lanes: 16, feed: { maxAwaitTimeMS: 300 } }
  retry: { maxTransientRetries: 20 }
`;

  it('passes a YAML tuning to createSyncEngine, and logs it', async () => {
    const { options, lines } = await engineOptionsOf(TUNING);
    expect(options.engine).toEqual({ copier: { concurrency: 8 }, maxTransientRetries: 20 });
    expect(options.changeApplication).toEqual({
      applier: { lanes: 16 },
      feed: { maxAwaitTimeMS: 300 },
    });
    expect(
      lines.some((line) => line.includes('"msg":"engine tuning from the launch config"')),
    ).toBe(true);
  });

  it('keeps the tuning beside the shard claim of a per-shard worker', async () => {
    const { options } = await engineOptionsOf(TUNING, ['--id', 'shardA', '--claimStaleMs', '8000']);
    expect(options.engine).toMatchObject({
      copier: { concurrency: 8 },
      maxTransientRetries: 20,
      shardClaim: { renewMs: 1000, staleMs: 8000, instance: expect.any(String) },
    });
    expect(options.changeApplication).toEqual({
      applier: { lanes: 16 },
      feed: { maxAwaitTimeMS: 300 },
    });
  });

  it('gives the engine no tuning when the config has none (its defaults)', async () => {
    const { options, lines } = await engineOptionsOf('');
    expect(options).not.toHaveProperty('engine');
    expect(options).not.toHaveProperty('changeApplication');
    expect(lines.join('')).not.toContain('engine tuning');
  });
});
