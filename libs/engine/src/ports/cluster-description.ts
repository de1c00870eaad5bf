/**
 * What the engine knows about a cluster's identity. Never carries credentials.
 * `fingerprint` identifies the cluster across restarts (replica-set name + member hosts, or the
 * shard list behind mongos), so a restarted worker can refuse a job made for other clusters.
 */
export interface ClusterDescription {
  kind: 'replicaSet' | 'sharded';
  shardCount: number;
  /** `<host>:<port>` shown in progress.directionMapping (first seed host). */
  displayHost: string;
  fingerprint: ClusterFingerprint;
}

export interface ClusterFingerprint {
  kind: 'replicaSet' | 'sharded';
  /** Replica-set name (replica sets) or null (mongos). */
  setName: string | null;
  /** Replica-set members (`hello.hosts`) or shard ids (`listShards`), sorted. */
  members: string[];
}

/** Same cluster when kind and set name agree and at least one member is shared. */
export function sameCluster(a: ClusterFingerprint, b: ClusterFingerprint): boolean {
  if (a.kind !== b.kind || a.setName !== b.setName) return false;
  if (a.members.length === 0 || b.members.length === 0) return true;
  return a.members.some((m) => b.members.includes(m));
}
