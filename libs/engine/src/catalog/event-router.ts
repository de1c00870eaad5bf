import type { Document, Timestamp } from 'bson';
import type { BuildIndexesMode } from '@sync/contracts';
import type { ChangeEvent, Namespace } from '../apply/change-event';
import { ApplyError } from '../apply/errors';
import { isSyncedNamespace } from '../apply/namespace-rules';
import type { EventRoute, EventRouter, NamespacePredicate, ResumeToken } from '../apply/ports';
import { compareTimestamps } from '../apply/timestamps';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, NamespaceRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';
import type { JobSession } from '../job/job-session';
import { defaultIndexName } from '../prepare/sharding-plan';
import { planDdl, type DdlPlan } from './ddl-plan';
import { describeNamespace, uuidHex } from './namespace-catalog';

/**
 * An event of a selected namespace that the catalog cannot place: its collection is neither
 * known nor explained by an earlier drop/rename. Applying it by name could write into the wrong
 * collection; skipping it could lose data — so the sync stops and says where.
 */
export class UnknownNamespaceError extends ApplyError {
  constructor(
    readonly namespace: string,
    readonly uuid: string | undefined,
    readonly eventTime: Timestamp | undefined,
  ) {
    super(
      `a change event on ${namespace} (collection UUID ${uuid ?? 'unknown'}, at ${eventTime?.toString() ?? '?'}) ` +
        'belongs to a collection the sync does not know; refusing to apply it by name',
      false,
    );
  }
}

export interface EventRouterDeps {
  session: JobSession;
  /** Destination DDL. */
  destination: DestinationCluster;
  source: SourceCluster;
  selected: NamespacePredicate;
  buildIndexes: BuildIndexesMode;
  /** Prepares and copies a collection that entered the sync (persisted as `copy: 'pending'`). */
  copyIn(record: NamespaceRecord): Promise<void>;
  logger: EngineLogger;
}

/** Resume token `_data` (hex KeyString: lexicographic order is stream order). */
function tokenData(token: ResumeToken): string {
  const data = token._data as unknown;
  return typeof data === 'string' ? data : JSON.stringify(data);
}

/**
 * The job's catalog as change application's router (see EventRouter). Every applied DDL event
 * has its effect on the catalog and its own position written in ONE job write, after its
 * destination effect; so after a crash only that last DDL can be seen again, and each effect is
 * idempotent for exactly that case (e.g. a rename whose source name is already gone on the
 * destination). Every earlier DDL is recognised by its position and never applied twice.
 */
export class CatalogEventRouter implements EventRouter {
  constructor(private readonly deps: EventRouterDeps) {}

  private get job(): JobRecord {
    return this.deps.session.job;
  }

  route(event: ChangeEvent): EventRoute {
    const db = event.ns?.db;
    const coll = event.ns?.coll;
    if (db === undefined || coll === undefined) return { ignore: 'no-namespace' };
    const catalog = this.deps.session.catalog;
    const uuid = uuidHex(event.collectionUUID);
    const record = uuid !== undefined ? catalog.byKey(uuid) : catalog.byName(db, coll);
    if (record) {
      return {
        ns: { db: record.database, coll: record.collection },
        key: record.key,
        ...(record.shardKey ? { shardKeyFields: Object.keys(record.shardKey.key) } : {}),
      };
    }
    if (!isSyncedNamespace(db, coll, this.deps.selected)) return { ignore: 'not-selected' };
    // Sources without collection UUIDs in events (before 6.0): names are all there is.
    if (uuid === undefined) return { ns: { db, coll }, key: `${db}.${coll}` };
    if (this.explainedByHistory(event.clusterTime)) return { ignore: 'collection-gone' };
    throw new UnknownNamespaceError(`${db}.${coll}`, uuid, event.clusterTime);
  }

  /**
   * An unknown collection is expected only for events older than the listing (dropped or
   * renamed away before it was listed) or older than the last applied DDL (replayed after a
   * restart, its drop or rename already applied).
   */
  private explainedByHistory(time: Timestamp | undefined): boolean {
    if (!time) return false;
    if (compareTimestamps(time, this.job.listedUntil) <= 0) return true;
    const ddl = this.job.ddlApplied;
    return !!ddl && compareTimestamps(time, ddl.clusterTime) <= 0;
  }

  async applyDdl(
    event: ChangeEvent,
    position: { token: ResumeToken; clusterTime?: Timestamp },
  ): Promise<void> {
    await this.handleDdl(event, position, true);
  }

  /**
   * Per-shard sync: another worker's DDL, applied on the destination by that worker (whose
   * shard stream holds it). Only its effect on this worker's catalog is recorded, in one job
   * write with its position, before this worker applies anything after it.
   */
  async recordForeignDdl(
    event: ChangeEvent,
    position: { token: ResumeToken; clusterTime?: Timestamp },
  ): Promise<void> {
    await this.handleDdl(event, position, false);
  }

  private async handleDdl(
    event: ChangeEvent,
    position: { token: ResumeToken; clusterTime?: Timestamp },
    applyHere: boolean,
  ): Promise<void> {
    const clusterTime = position.clusterTime ?? event.clusterTime;
    if (!clusterTime)
      throw new ApplyError(`a ${event.operationType} event has no cluster time`, false);
    const token = tokenData(position.token);
    if (this.alreadyApplied(clusterTime, token)) return;
    const plan = await planDdl(event, {
      catalog: this.deps.session.catalog,
      selected: this.deps.selected,
      buildIndexes: this.deps.buildIndexes,
      listedUntil: this.job.listedUntil,
      describeIncoming: (to, uuid) => this.describeIncoming(to, uuid),
    });
    if (!plan) {
      // Nothing to do here; a foreign DDL is still recorded as passed.
      if (!applyHere)
        await this.deps.session.save((job) => void (job.ddlApplied = { clusterTime, token }));
      return;
    }
    if (applyHere) await this.runDestination(plan);
    await this.deps.session.save((job) => {
      plan.catalog(this.deps.session.catalog);
      // Another worker's copy-in of a collection that entered the sync is the whole copy.
      if (!applyHere && plan.copyIn) {
        const record = this.deps.session.catalog.byKey(plan.copyIn.key);
        if (record) record.copy = 'done';
      }
      job.ddlApplied = { clusterTime, token };
    });
    this.deps.logger.info(
      applyHere ? 'DDL applied' : "DDL recorded (applied by its shard's worker)",
      {
        operation: event.operationType,
        namespace: event.ns ? `${event.ns.db}.${event.ns.coll ?? ''}` : undefined,
        clusterTime: clusterTime.toString(),
      },
    );
    // The others wait for this worker's release, which follows the copy-in: no worker writes
    // into a collection still being copied.
    if (applyHere && plan.copyIn)
      await this.deps.copyIn(this.deps.session.catalog.byKey(plan.copyIn.key)!);
  }

  private alreadyApplied(time: Timestamp, token: string): boolean {
    const last = this.job.ddlApplied;
    if (!last) return false;
    const order = compareTimestamps(time, last.clusterTime);
    return order < 0 || (order === 0 && token <= last.token);
  }

  private async runDestination(plan: DdlPlan): Promise<void> {
    const { destination } = this.deps;
    for (const step of plan.destination) {
      switch (step.kind) {
        case 'create':
          if (step.options.viewOn !== undefined) {
            const { viewOn, pipeline, ...rest } = step.options;
            await destination.createView(
              step.ns.db,
              step.ns.coll,
              String(viewOn),
              (pipeline as Document[] | undefined) ?? [],
              rest,
            );
          } else {
            await destination.createCollection(step.ns.db, step.ns.coll, step.options);
          }
          break;
        case 'drop':
          await destination.dropCollection(step.ns.db, step.ns.coll);
          break;
        case 'rename': {
          const moved = await destination.renameCollection(step.from, step.to);
          // Not moved: the source name is gone — only possible when this very rename ran before
          // a crash, since the catalog (written with every DDL) still places the record there.
          if (
            !moved &&
            !(await destination.listCollectionNames(step.to.db)).includes(step.to.coll)
          ) {
            throw new ApplyError(
              `cannot rename ${step.from.db}.${step.from.coll} to ${step.to.db}.${step.to.coll}: neither exists on the destination`,
              false,
            );
          }
          break;
        }
        case 'createIndexes':
          await createIndexesAsOfEvent(destination, step.ns, step.specs);
          break;
        case 'dropIndex':
          await destination.dropIndex(step.ns.db, step.ns.coll, step.name);
          break;
        case 'collMod':
          await destination.collMod(step.ns.db, step.ns.coll, step.options);
          break;
        case 'shardCollection':
          await shardOnDestination(destination, step.ns, step.key);
          break;
      }
    }
  }

  /**
   * A collection entering the sync (renamed into the filter): found on the source by its UUID
   * (a rename within a database keeps it) or by name, listed now. Its record keeps the name the
   * event gives (`to`), where the destination is at this point of the stream; the copy reads it
   * from wherever the source has it now. Null when it is gone already: its later events say so.
   */
  private async describeIncoming(
    to: Namespace,
    uuid: string | undefined,
  ): Promise<NamespaceRecord | null> {
    const { source } = this.deps;
    const listedAt = await source.clusterTime();
    const infos = await source.listCollections(to.db);
    const info =
      (uuid !== undefined ? infos.find((i) => i.uuid === uuid) : undefined) ??
      infos.find((i) => i.name === to.coll && i.type === 'collection');
    if (!info || info.type !== 'collection') return null;
    const record = await describeNamespace(source, to.db, info, listedAt);
    return { ...record, collection: to.coll, options: record.options as Document };
  }
}

/** IndexOptionsConflict, IndexKeySpecsConflict: an index of that name or identity exists. */
const INDEX_CONFLICT_CODES = new Set([85, 86]);

/**
 * A createIndexes event, applied as the source was right after it: each index exists under its
 * name with exactly this spec. A replayed event can meet a destination index of the same name
 * (or the same key, collation and partial filter) but another spec: the collection's listing
 * reads its indexes after its listing time, so it may already hold a LATER definition (created,
 * dropped and created again) whose events all follow this one in the stream. That index is
 * stale at this point of the stream: it is dropped and this spec built; the events after this
 * one bring the index to its final definition, in stream order. Also the idempotent re-run of
 * this very event after a crash (an identical index: a no-op).
 */
async function createIndexesAsOfEvent(
  destination: DestinationCluster,
  ns: Namespace,
  specs: Document[],
): Promise<void> {
  try {
    await destination.createIndexes(ns.db, ns.coll, specs);
    return;
  } catch (error) {
    if (!INDEX_CONFLICT_CODES.has(Number((error as { code?: unknown }).code))) throw error;
  }
  for (const spec of specs) {
    const existing = await destination.listIndexes(ns.db, ns.coll);
    for (const index of existing) {
      if (index.name === '_id_') continue;
      if (index.name === spec.name ? !sameSpec(index, spec) : sameIdentity(index, spec)) {
        await destination.dropIndex(ns.db, ns.coll, String(index.name));
      }
    }
    await destination.createIndexes(ns.db, ns.coll, [spec]);
  }
}

/** MongoDB's index identity: key pattern (in order), collation and partial filter. */
function sameIdentity(a: Document, b: Document): boolean {
  return (
    canonical(a.key) === canonical(b.key) &&
    canonical(a.collation) === canonical(b.collation) &&
    canonical(a.partialFilterExpression) === canonical(b.partialFilterExpression)
  );
}

/** The same index, options included (`v`, `ns` and `background` aside). */
function sameSpec(a: Document, b: Document): boolean {
  const strip = ({ v: _v, ns: _ns, background: _b, ...rest }: Document) =>
    Object.fromEntries(Object.entries(rest).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
  return canonical(strip(a)) === canonical(strip(b));
}

/** Numbers compare by value whatever their BSON type (Int32(1) and 1.0 are the same key). */
function canonical(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/**
 * Shards a destination collection like the source's (a sharded destination only). The source
 * needed an index on the key; the destination may lack it (buildIndexes "never", or an index
 * event not applied): it is created then, with MongoDB's default name, and sharding retried.
 */
async function shardOnDestination(
  destination: DestinationCluster,
  ns: Namespace,
  key: Document,
): Promise<void> {
  if ((await destination.shardIds()).length === 0) return;
  try {
    await destination.shardCollection(ns.db, ns.coll, key, false);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 72) throw error; // InvalidOptions: no index
    await destination.createIndexes(ns.db, ns.coll, [{ key, name: defaultIndexName(key) }]);
    await destination.shardCollection(ns.db, ns.coll, key, false);
  }
}
