import { getMetadataStorage, type ValidationError } from 'class-validator';

/** At most this many problems are listed; the rest are counted, to keep one readable line. */
const MAX_LISTED = 5;

/**
 * Turns class-validator's error tree into one line naming every offending field by its full path,
 * e.g. `includeNamespaces[0].database must be a string; unknown field "includeNamespace"`.
 */
export function describeValidationErrors(errors: ValidationError[]): string {
  const problems = errors.flatMap((error) => collect(error, ''));
  const listed = problems.slice(0, MAX_LISTED).join('; ');
  const more = problems.length - MAX_LISTED;
  return more > 0 ? `${listed}; and ${more} more` : listed;
}

function collect(error: ValidationError, parent: string): string[] {
  const path = joinPath(parent, error.property);
  const own = Object.entries(error.constraints ?? {}).map(([name, message]) =>
    name === 'whitelistValidation' ? unknownField(error, parent) : `${path} ${message}`,
  );
  // One message per field: the first failing rule is the useful one ("must be a string"),
  // the ones after it only restate it ("must not be empty").
  return [...own.slice(0, 1), ...(error.children ?? []).flatMap((child) => collect(child, path))];
}

function unknownField(error: ValidationError, parent: string): string {
  const where = parent === '' ? '' : ` in ${parent}`;
  const known = knownFields(error.target);
  const hint = known.length > 0 ? ` (known fields: ${known.join(', ')})` : '';
  return `unknown field "${error.property}"${where}${hint}`;
}

function knownFields(target: object | undefined): string[] {
  if (!target) return [];
  const metadata = getMetadataStorage().getTargetValidationMetadatas(
    target.constructor,
    '',
    true,
    false,
  );
  return [...new Set(metadata.map((entry) => entry.propertyName))];
}

function joinPath(parent: string, property: string): string {
  if (parent === '') return property;
  return /^\d+$/.test(property) ? `${parent}[${property}]` : `${parent}.${property}`;
}
