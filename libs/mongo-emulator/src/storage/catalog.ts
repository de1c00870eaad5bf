import type { ReplicaSetNode } from '../node/replica-set-node';

/** Databases, collections, views and their indexes. (Owned by the storage work; stub.) */
export class Catalog {
  constructor(readonly node: ReplicaSetNode) {}
}
