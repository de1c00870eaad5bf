import { Long, ObjectId } from 'bson';
import { ClusterClock } from '../clock/cluster-clock';
import { Oplog } from '../oplog/oplog';
import { CursorManager } from '../cursors/cursor-manager';
import { Catalog } from '../storage/catalog';
import { SessionRegistry } from '../server/sessions';
import { FailPointRegistry } from '../server/fail-points';
import { UserRegistry } from '../auth/user-registry';
import { CommandRegistry, defaultCommandRegistry } from '../commands/registry';
import { TransactionManager } from '../transactions/manager';
import type { NodeServices, ReplicaSetNodeOptions } from './node-services';

export type { ReplicaSetNodeOptions } from './node-services';

export const DEFAULT_HISTORY_SIZE = 1_000_000;

/**
 * mongod's fail point that keeps the majority-committed snapshot from advancing
 * (ReplicationCoordinatorImpl::_updateCommittedSnapshot returns early while it fires).
 */
export const DISABLE_SNAPSHOTTING_FAIL_POINT = 'disableSnapshotting';

/**
 * The data-bearing state of one emulated replica-set primary: everything a command can
 * touch. The wire server (server/) owns sockets; this object owns data and bookkeeping.
 * A sharded topology later puts several of these behind emulated mongos routers. Commands,
 * storage, transactions and change streams see it as NodeServices (node-services.ts).
 */
export class ReplicaSetNode implements NodeServices {
  readonly clock: ClusterClock;
  readonly oplog: Oplog;
  readonly cursors = new CursorManager();
  readonly catalog: Catalog;
  readonly sessions = new SessionRegistry();
  readonly failPoints = new FailPointRegistry();
  readonly users: UserRegistry;
  readonly transactions: TransactionManager;
  readonly commands: CommandRegistry = defaultCommandRegistry();
  /** `setUserWriteBlockMode {global}` state. */
  userWriteBlocking = false;
  /** host:port once the server listens (hello's `me`, `primary`, `hosts`). */
  host = '127.0.0.1:0';
  readonly electionId = new ObjectId('7fffffff0000000000000001');
  readonly topologyVersion = { processId: new ObjectId(), counter: Long.fromNumber(0) };
  readonly startedAt = new Date();

  constructor(readonly options: ReplicaSetNodeOptions) {
    this.clock = options.clock ?? new ClusterClock();
    this.oplog = new Oplog(this.clock, {
      maxEntries: options.historySize ?? DEFAULT_HISTORY_SIZE,
      // mongod's `disableSnapshotting`: while it fires, the committed snapshot does not move.
      holdCommittedSnapshot: () =>
        this.failPoints.evaluate(DISABLE_SNAPSHOTTING_FAIL_POINT) !== undefined,
    });
    // replSetInitiate's first oplog entry: history starts here, as on a fresh mongod.
    this.oplog.append({ op: 'noop', db: '', o: { msg: 'initiating set' } });
    this.catalog = new Catalog(this);
    this.users = new UserRegistry(options.users ?? []);
    this.transactions = new TransactionManager(this, options);
  }

  get authEnabled(): boolean {
    return this.users.enabled;
  }
}
