/**
 * The main job on an embedded default (`npm run demo`): a sharded → sharded migration through
 * the coordinator (scripts/demo-sharded.ts). `npm run demo -- --replica-set` runs the
 * replica set → replica set demo instead (scripts/demo-replica-set.ts).
 */
import { runReplicaSetDemo } from './demo-replica-set';
import { runShardedDemo } from './demo-sharded';

void (process.argv.includes('--replica-set') ? runReplicaSetDemo() : runShardedDemo());
