import { fnv1a } from './doc-key';

/**
 * Picks the lane of a document. Same identity → same lane, always: a document's events then
 * apply in source order, while different documents spread over the lanes and apply in
 * parallel (the hash-by-documentKey technique of MongoShake, dsync and PCSM).
 */
export function laneOf(identity: string, laneCount: number): number {
  return fnv1a(identity) % laneCount;
}
