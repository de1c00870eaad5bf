import { ApiError } from '../api-error';
import type { StartRequest } from '../start-request';

/**
 * Start rules that need only the request (and the configured cluster names), each with its own
 * error name. Order: which clusters, then option combinations.
 */
export function checkRequestRules(request: StartRequest, clusterNames?: readonly string[]): void {
  if (clusterNames) {
    for (const role of ['source', 'destination'] as const) {
      if (!clusterNames.includes(request[role])) {
        throw new ApiError(
          'UnknownCluster',
          `${role} "${request[role]}" is not a configured cluster; configured: ${clusterNames.join(', ')}`,
        );
      }
    }
  }
  if (request.source === request.destination) {
    throw new ApiError(
      'SameSourceAndDestination',
      `source and destination are both "${request.source}"`,
    );
  }
  if (request.reversible && request.buildIndexes === 'never') {
    throw new ApiError(
      'NeverWithReversible',
      'buildIndexes "never" cannot be combined with reversible: true',
    );
  }
  // Reversing swaps the roles: the old source must stop taking writes at commit, which only
  // user write blocking guarantees.
  if (request.reversible && !request.enableUserWriteBlocking) {
    throw new ApiError(
      'ReversibleRequiresWriteBlocking',
      'reversible: true requires enableUserWriteBlocking: true',
    );
  }
}
