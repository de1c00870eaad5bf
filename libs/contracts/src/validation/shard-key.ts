import { shardKeyFieldProblem } from './mongo-names';

/** The values a shard key element may map its field to (ascending, descending, hashed). */
export const SHARD_KEY_VALUES: readonly unknown[] = [1, -1, 'hashed'];

/**
 * Why `key` is not a valid shard key, or null. Each element is an object mapping exactly one
 * field name to 1, -1 or "hashed"; the order of the array is the order of the key. MongoDB
 * allows at most one hashed field and each field once.
 */
export function shardKeyProblem(key: unknown): string | null {
  if (!Array.isArray(key)) return 'must be an array of objects like {"field": 1}';
  if (key.length === 0) return 'must contain at least one field';
  const seen = new Set<string>();
  let hashed = 0;
  for (const [index, element] of key.entries()) {
    const problem = elementProblem(element);
    if (problem) return `element [${index}] ${problem}`;
    const [field, value] = Object.entries(element as object)[0];
    if (seen.has(field)) return `element [${index}] repeats field "${field}"`;
    seen.add(field);
    if (value === 'hashed' && ++hashed > 1) return 'may contain at most one "hashed" field';
  }
  return null;
}

function elementProblem(element: unknown): string | null {
  if (typeof element !== 'object' || element === null || Array.isArray(element)) {
    return 'must be an object like {"field": 1}';
  }
  const entries = Object.entries(element);
  if (entries.length !== 1) {
    return `must map exactly one field name to 1, -1 or "hashed" (it has ${entries.length} fields)`;
  }
  const [field, value] = entries[0];
  const fieldProblem = shardKeyFieldProblem(field);
  if (fieldProblem) return fieldProblem;
  if (!SHARD_KEY_VALUES.includes(value)) {
    return `maps "${field}" to ${JSON.stringify(value)}; allowed values are 1, -1 and "hashed"`;
  }
  return null;
}
