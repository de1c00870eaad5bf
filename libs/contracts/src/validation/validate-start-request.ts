import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidatorOptions } from 'class-validator';
import { ApiError } from '../api-error';
import { NamespaceFilterDto } from '../dto/namespace-filter.dto';
import { StartRequestDto } from '../dto/start-request.dto';
import type { NamespaceFilterEntry, ShardingOptions, StartRequest } from '../start-request';
import { describeValidationErrors } from './describe-validation-errors';
import { namespaceProblem, syncableDatabaseProblem } from './mongo-names';
import { assertNoPrototypeKeys, isJsonObject } from './request-shape';
import { checkRequestRules } from './request-rules';

/**
 * Unknown fields are errors at every level (a misspelt `includeNamespace` must never silently
 * sync everything), and nothing is coerced (`"true"` is not a boolean).
 */
const VALIDATOR_OPTIONS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  stopAtFirstError: true,
  validationError: { target: true, value: false },
};

export interface StartValidationOptions {
  /** Cluster names configured at launch; when given, source/destination must be among them. */
  clusterNames?: readonly string[];
}

/**
 * The start body → a typed `StartRequest` with defaults applied, or an `ApiError` whose name is
 * the broken rule. Topology rules need the clusters and live in `checkTopologyRules`.
 */
export function validateStartRequest(
  body: unknown,
  options: StartValidationOptions = {},
): StartRequest {
  if (!isJsonObject(body))
    throw new ApiError('InvalidRequest', 'the start request body must be a JSON object');
  assertNoPrototypeKeys(body);
  const dto = plainToInstance(StartRequestDto, body, { enableImplicitConversion: false });
  const errors = validateSync(dto, VALIDATOR_OPTIONS);
  if (errors.length > 0) throw new ApiError('InvalidRequest', describeValidationErrors(errors));
  const request = toStartRequest(dto);
  checkNamespaces(request);
  checkRequestRules(request, options.clusterNames);
  return request;
}

function toStartRequest(dto: StartRequestDto): StartRequest {
  const request: StartRequest = {
    source: dto.source,
    destination: dto.destination,
    buildIndexes: dto.buildIndexes ?? 'beforeDataCopy',
    enableUserWriteBlocking: dto.enableUserWriteBlocking ?? false,
    reversible: dto.reversible ?? false,
  };
  if (dto.includeNamespaces) request.includeNamespaces = dto.includeNamespaces.map(toFilterEntry);
  if (dto.excludeNamespaces) request.excludeNamespaces = dto.excludeNamespaces.map(toFilterEntry);
  if (dto.sharding) request.sharding = toSharding(dto.sharding);
  if (dto.verification) {
    request.verification = { enabled: dto.verification.enabled ?? true };
    if (dto.verification.mode) request.verification.mode = dto.verification.mode;
  }
  return request;
}

/** Copies into plain objects so no DTO instance (or undefined-valued key) leaks downstream. */
function toFilterEntry(dto: NamespaceFilterDto): NamespaceFilterEntry {
  const entry: NamespaceFilterEntry = { database: dto.database };
  if (dto.collections) entry.collections = [...dto.collections];
  if (dto.collectionsRegex) {
    const { pattern, options } = dto.collectionsRegex;
    entry.collectionsRegex = options === undefined ? { pattern } : { pattern, options };
  }
  return entry;
}

function toSharding(dto: NonNullable<StartRequestDto['sharding']>): ShardingOptions {
  return {
    createSupportingIndexes: dto.createSupportingIndexes ?? false,
    shardingEntries: dto.shardingEntries.map((entry) => ({
      database: entry.database,
      collection: entry.collection,
      shardCollection: { key: entry.shardCollection.key.map((element) => ({ ...element })) },
    })),
  };
}

/**
 * Rules that span fields: system databases cannot be included (excluding them is harmless),
 * full namespace length, and each collection sharded once.
 */
function checkNamespaces(request: StartRequest): void {
  for (const [index, entry] of (request.includeNamespaces ?? []).entries()) {
    const problem = syncableDatabaseProblem(entry.database);
    if (problem)
      throw new ApiError('InvalidRequest', `includeNamespaces[${index}].database: ${problem}`);
  }
  for (const [list, entries] of [
    ['includeNamespaces', request.includeNamespaces],
    ['excludeNamespaces', request.excludeNamespaces],
  ] as const) {
    for (const [index, entry] of (entries ?? []).entries()) {
      for (const collection of entry.collections ?? []) {
        const problem = namespaceProblem(entry.database, collection);
        if (problem)
          throw new ApiError('InvalidRequest', `${list}[${index}].collections: ${problem}`);
      }
    }
  }
  const seen = new Set<string>();
  for (const [index, entry] of (request.sharding?.shardingEntries ?? []).entries()) {
    const where = `sharding.shardingEntries[${index}]`;
    const problem = namespaceProblem(entry.database, entry.collection);
    if (problem) throw new ApiError('InvalidRequest', `${where}: ${problem}`);
    const namespace = `${entry.database}.${entry.collection}`;
    if (seen.has(namespace))
      throw new ApiError('InvalidRequest', `${where} shards ${namespace} a second time`);
    seen.add(namespace);
  }
}
