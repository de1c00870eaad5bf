import { redactSecrets } from '@sync/contracts';
import { DEFAULT_LANES } from '@sync/engine';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync, type ValidationError } from 'class-validator';
import { parse as parseYaml } from 'yaml';
import { LaunchConfigError } from './launch-config.error';
import { TuningOptionsDto, type SyncTuning } from './tuning-options.dto';

/** The environment variable holding tuning (a YAML or JSON mapping, as `tuning` in --config). */
export const TUNING_ENV = 'SYNC_TUNING';

type Mapping = Record<string, unknown>;

const isMapping = (value: unknown): value is Mapping =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `tuning` from the --config file and `SYNC_TUNING` → validated engine tuning, or undefined when
 * neither gives any (the engine's defaults). The two are merged key by key, the environment
 * winning; a null value counts as absent (a YAML key whose values are all commented out). A
 * wrong type, a value out of range or an unknown key, at any depth, is a LaunchConfigError
 * naming the key's full path (`tuning.copier.concurrency`) and where it came from.
 */
export function loadTuning(fromFile: unknown, fromEnv: string | undefined): SyncTuning | undefined {
  const file = fromFile === undefined || fromFile === null ? {} : fromFile;
  if (!isMapping(file)) {
    throw new LaunchConfigError(
      `tuning in --config must be a mapping of tuning groups (${allowedKeys(TuningOptionsDto)})`,
    );
  }
  const env = fromEnv === undefined || fromEnv === '' ? {} : parseTuningEnv(fromEnv);
  const merged = mergeTuning(withoutNulls(file), withoutNulls(env));
  if (Object.keys(merged).length === 0) return undefined;
  const dto = plainToInstance(TuningOptionsDto, merged);
  const errors = validateSync(dto, {
    stopAtFirstError: true,
    forbidUnknownValues: true,
    whitelist: true,
    forbidNonWhitelisted: true,
  });
  if (errors.length > 0) {
    const { path, message } = firstProblem(errors[0], ['tuning']);
    const key = path.join('.');
    const via = hasPath(env, path.slice(1)) ? ` (from ${TUNING_ENV})` : '';
    throw new LaunchConfigError(`${key}${via} ${message}`);
  }
  const apply = dto.changeApplication;
  const mostLanes = apply?.lanes ?? DEFAULT_LANES;
  if (apply?.minLanes !== undefined && apply.minLanes > mostLanes) {
    throw new LaunchConfigError(
      `tuning.changeApplication.minLanes (${apply.minLanes}) must not exceed tuning.changeApplication.lanes (${mostLanes}${apply.lanes === undefined ? ', its default' : ''})`,
    );
  }
  return JSON.parse(JSON.stringify(dto)) as SyncTuning;
}

function parseTuningEnv(text: string): Mapping {
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    const firstLine = redactSecrets(String((error as Error).message).split('\n')[0]);
    throw new LaunchConfigError(`${TUNING_ENV} is not valid YAML or JSON: ${firstLine}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isMapping(parsed)) {
    throw new LaunchConfigError(
      `${TUNING_ENV} must be a mapping of tuning groups (${allowedKeys(TuningOptionsDto)}), e.g. {copier: {concurrency: 8}}`,
    );
  }
  return parsed;
}

/** The environment's values over the file's, group by group. */
function mergeTuning(base: Mapping, over: Mapping): Mapping {
  const out: Mapping = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const below = out[key];
    out[key] = isMapping(below) && isMapping(value) ? mergeTuning(below, value) : value;
  }
  return out;
}

function withoutNulls(value: Mapping): Mapping {
  const out: Mapping = {};
  for (const [key, inner] of Object.entries(value)) {
    if (inner === null || inner === undefined) continue;
    out[key] = isMapping(inner) ? withoutNulls(inner) : inner;
  }
  return out;
}

function hasPath(value: unknown, path: string[]): boolean {
  let at = value;
  for (const key of path) {
    if (!isMapping(at) || !Object.prototype.hasOwnProperty.call(at, key)) return false;
    at = at[key];
  }
  return true;
}

/** The first failing key, however deep, and the one message to show for it. */
function firstProblem(error: ValidationError, path: string[]): { path: string[]; message: string } {
  const here = [...path, error.property];
  const constraints = error.constraints ?? {};
  if ('whitelistValidation' in constraints) {
    const owner = error.target?.constructor as (new () => object) | undefined;
    const allowed = owner ? allowedKeys(owner) : '';
    return {
      path: [...path, error.property.slice(0, 40)],
      message: `is not a tuning key (${path.join('.')} takes: ${allowed})`,
    };
  }
  const message = Object.values(constraints)[0];
  if (message !== undefined) return { path: here, message };
  const child = error.children?.[0];
  return child ? firstProblem(child, here) : { path: here, message: 'is invalid' };
}

/** The keys a tuning group takes, in declaration order. */
function allowedKeys(target: new () => object): string {
  const names = getMetadataStorage()
    .getTargetValidationMetadatas(target, '', true, false)
    .map((metadata) => metadata.propertyName);
  return [...new Set(names)].join(', ');
}
