/** Nest injection tokens of the worker (symbols: no accidental string collisions). */
export const CLUSTER_NAMES = Symbol('CLUSTER_NAMES');
export const SERVICE_LOGGER = Symbol('SERVICE_LOGGER');
export const SYNC_API_OPTIONS = Symbol('SYNC_API_OPTIONS');
