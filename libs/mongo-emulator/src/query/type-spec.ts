import { BSON_TYPE_NUMBERS, bsonTypeOf, isNumeric, type BsonTypeName } from '../bson/compare';
import { CommandError } from '../errors';
import { formatValue } from './format';

/** Tests one value against a parsed `$type` argument. */
export type TypeTest = (value: unknown) => boolean;

const NAME_BY_NUMBER = new Map<number, BsonTypeName>(
  Object.entries(BSON_TYPE_NUMBERS).map(([name, n]) => [n, name as BsonTypeName]),
);

/**
 * Parses `$type`'s argument: an alias ('int', 'number', ...), a type number, or an array of
 * them. Messages follow MongoDB's parser (type_matcher / MatcherTypeSet).
 */
export function parseTypeSpec(spec: unknown, field: string): TypeTest {
  const items = Array.isArray(spec) ? spec : [spec];
  if (Array.isArray(spec) && spec.length === 0) {
    throw new CommandError('FailedToParse', `${field} must match at least one type`);
  }
  const names = new Set<BsonTypeName>();
  let anyNumber = false;
  for (const item of items) {
    if (typeof item === 'string') {
      if (item === 'number') anyNumber = true;
      else if (item in BSON_TYPE_NUMBERS) names.add(item as BsonTypeName);
      else throw new CommandError('BadValue', `Unknown type name alias: ${item}`);
    } else if (isNumeric(item)) {
      const n = Number(formatValue(item));
      const name = NAME_BY_NUMBER.get(n);
      if (!Number.isInteger(n) || !name) {
        throw new CommandError('BadValue', `Invalid numerical type code: ${formatValue(item)}`);
      }
      names.add(name);
    } else {
      throw new CommandError('TypeMismatch', 'type must be represented as a number or a string');
    }
  }
  return (value) => {
    const t = bsonTypeOf(value);
    return names.has(t) || (anyNumber && isNumeric(value));
  };
}
